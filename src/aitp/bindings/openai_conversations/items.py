"""Conversation items in: each message item becomes the core's `NewMessage`; what a thread cannot hold is
refused, naming the item, before anything is stored."""

from __future__ import annotations

from typing import Any

from aitp.errors import InvalidRequest
from aitp.inputs.shapes import IMAGE_DETAILS, image_detail
from aitp.services.requests import NewMessage

ROLES = ("user", "assistant", "system", "developer")  # accepted; the stored role is derived from the author
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
    if item.get("role") not in ROLES:
        raise InvalidRequest(f"A message item needs `role`, one of {', '.join(ROLES)}.", param=f"{param}.role")
    content = item.get("content")
    if isinstance(content, str):
        return NewMessage(content=content)
    if not isinstance(content, list) or not content:
        raise InvalidRequest(
            "A message item needs `content`: a string or a non-empty array of content parts.", param=f"{param}.content"
        )
    return NewMessage(content=[_part(part, f"{param}.content[{j}]") for j, part in enumerate(content)])


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
