"""Records → Conversations objects (plain dicts in the shapes of `.models`)."""

from __future__ import annotations

from typing import Any

import orjson

from aitp.bindings.http.metadata import t01_metadata
from aitp.bindings.http.responses import page
from aitp.inputs.shapes import IMAGE_DETAILS, shown_detail
from aitp.services import addressing
from aitp.store.records import ActorRecord, MessageRecord, ThreadRecord


def conversation(thread: ThreadRecord, actors: list[ActorRecord]) -> dict[str, Any]:
    """`metadata` carries the actors as AITP-T01 does (`actors`, a JSON string) and `parent_id` if any."""
    return {
        "id": thread.id,
        "object": "conversation",
        "created_at": thread.created_at,
        "metadata": t01_metadata(thread, actors),
    }


def item(record: MessageRecord) -> dict[str, Any]:
    """A message item; `actor` (who wrote it), `aitp` (what the server validated in each part) and, when the
    message named its recipients, `to` (their ids, in the order given) are AITP's additions."""
    text_type = "input_text" if record.role == "user" else "output_text"
    shown = {
        "id": record.id,
        "type": "message",
        "status": "completed",
        "role": record.role,
        "content": [_part(part, text_type) for part in record.content],
        "created_at": record.created_at,
        "actor": record.actor,
        "aitp": record.aitp,
    }
    to = _recipients(record.metadata)
    if to is not None:
        shown["to"] = to
    return shown


def _recipients(metadata: dict[str, str]) -> list[str] | None:
    """`metadata.to` as a list, in its stored order (None: the message names no one)."""
    named = addressing.recipients(metadata)
    if named is None:
        return None
    return [actor for actor in orjson.loads(metadata[addressing.TO]) if actor in named]


def _part(part: dict[str, Any], text_type: str) -> dict[str, Any]:
    kind = part["type"]
    if kind == "text":
        text = part["text"]["value"]
        return {"type": "input_text", "text": text} if text_type == "input_text" else _output_text(text)
    if kind == "image_url":
        image = part["image_url"]
        return {
            "type": "input_image",
            "detail": shown_detail(image.get("detail"), IMAGE_DETAILS),
            "image_url": image["url"],
            "file_id": None,
        }
    image = part["image_file"]
    return {
        "type": "input_image",
        "detail": shown_detail(image.get("detail"), IMAGE_DETAILS),
        "image_url": None,
        "file_id": image["file_id"],
    }


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def item_list(records: list[MessageRecord], has_more: bool) -> dict[str, Any]:
    """The OpenAI list envelope (`first_id`, `last_id`, `has_more`), as the Threads face pages messages."""
    return page([item(r) for r in records], has_more)


def deleted(conversation_id: str) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}
