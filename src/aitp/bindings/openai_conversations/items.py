"""Conversation items in: each message item becomes the core's `NewMessage`; what a thread cannot hold is
refused, naming the item, before anything is stored.

An item's `role` is passed on as the role it claims (the core derives the role kept from the author, and
refuses a different one under AITP_STRICT_ROLES); `to`, an AITP addition beside `actor`, names the actors the
message is for and is passed on as the message's `metadata.to`, as sent (the core checks it)."""

from __future__ import annotations

from typing import Any

from aitp.errors import InvalidRequest
from aitp.inputs.shapes import IMAGE_DETAILS, image_detail
from aitp.services import addressing
from aitp.services.requests import NewMessage

ROLES = ("user", "assistant", "system", "developer")  # accepted; the stored role is derived from the author
TO = "to"  # an item's recipients, an AITP addition
TEXT_PARTS = ("input_text", "output_text")


def new_messages(items: list[Any], param: str = "items") -> list[NewMessage]:
    """The message of each item, in order; 400 naming the first item (or part) that is not a message."""
    return [new_message(item, f"{param}[{i}]") for i, item in enumerate(items)]


def new_message(item: Any, param: str) -> NewMessage:
    if not isinstance(item, dict):
        raise InvalidRequest("An item must be an object.", param=param)
    kind = item.get("type", "message")  # an easy input message may leave out its type
    if kind != "message":
        raise InvalidRequest(
            f"Item type {kind!r} cannot be held: an aitp conversation holds message items only (the messages"
            " agents exchange; function calls, reasoning and other model items have no place in it).",
            param=f"{param}.type",
            code="unsupported_item_type",
        )
    role = item.get("role")
    if role not in ROLES:
        raise InvalidRequest(f"A message item needs `role`, one of {', '.join(ROLES)}.", param=f"{param}.role")
    metadata = {addressing.TO: item[TO]} if TO in item else None
    content = item.get("content")
    if isinstance(content, str):
        return NewMessage(content=content, role=role, metadata=metadata)
    if not isinstance(content, list) or not content:
        raise InvalidRequest(
            "A message item needs `content`: a string or a non-empty array of content parts.", param=f"{param}.content"
        )
    parts = [_part(part, f"{param}.content[{j}]") for j, part in enumerate(content)]
    return NewMessage(content=parts, role=role, metadata=metadata)


def _part(part: Any, param: str) -> str | dict[str, Any]:
    """A text part becomes its text (an AITP capability message is JSON text), an image part an image part."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in TEXT_PARTS:
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidRequest(f"An {kind} part needs `text` as a string.", param=f"{param}.text")
        return text
    if kind == "input_image":
        detail = image_detail(part.get("detail"), IMAGE_DETAILS, f"{param}.detail")
        if isinstance(part.get("image_url"), str):
            return {"type": "image_url", "image_url": {"url": part["image_url"], "detail": detail}}
        if isinstance(part.get("file_id"), str):
            return {"type": "image_file", "image_file": {"file_id": part["file_id"], "detail": detail}}
        raise InvalidRequest("An input_image part needs `image_url` or `file_id`.", param=param)
    raise InvalidRequest(
        f"Content part type {kind!r} cannot be held: use input_text, output_text or input_image.",
        param=f"{param}.type",
        code="unsupported_content_type",
    )
