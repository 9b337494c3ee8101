"""Pydantic wire models of the Conversations face: requests as parsed, responses as documented in the
OpenAPI document (responses are rendered as plain dicts by `.render`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from aitp.bindings.http.models import metadata_schema
from aitp.bindings.openai_conversations.items import ROLES, TEXT_PARTS
from aitp.inputs.shapes import IMAGE_DETAILS

MAX_ITEMS = 20  # per request, as in the public API

# A message item as `.items` takes it in, stated for the OpenAPI document (`.items` checks it, naming the
# field): `role` and `content` are required, `type` may be left out (an easy input message).
_TEXT_PART = {
    "type": "object",
    "properties": {"type": {"enum": list(TEXT_PARTS)}, "text": {"type": "string"}},
    "required": ["type", "text"],
}
_IMAGE = {"detail": {"anyOf": [{"enum": list(IMAGE_DETAILS)}, {"type": "null"}]}}
_IMAGE_PARTS = [
    {
        "type": "object",
        "properties": {"type": {"const": "input_image"}, source: {"type": "string"}, **_IMAGE},
        "required": ["type", source],
    }
    for source in ("image_url", "file_id")
]
ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"const": "message"},
        "role": {"enum": list(ROLES), "description": "The role claimed; the role kept is the author's."},
        "content": {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "minItems": 1, "items": {"anyOf": [_TEXT_PART, *_IMAGE_PARTS]}},
            ]
        },
        "to": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
            "description": "AITP: the actors the message is for (its `metadata.to`).",
        },
    },
    "required": ["role", "content"],
}
Items = list[Annotated[dict[str, Any], WithJsonSchema(ITEM_SCHEMA)]]


class CreateConversationRequest(BaseModel):
    """`POST /v1/conversations`. Actors come in `metadata.actors` (a JSON string, AITP-T01), or the caller is
    the only one; `items` are posted by the caller, in order, in the same write."""

    model_config = ConfigDict(extra="forbid")
    items: Items | None = Field(default=None, max_length=MAX_ITEMS)
    metadata: Annotated[
        dict[str, Any] | None,
        metadata_schema(
            {
                "actors": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
                "parent_id": {"type": "string"},
            }
        ),
    ] = None


class UpdateConversationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # `actors` and `parent_id` may be sent back as the conversation shows them, not changed
    metadata: Annotated[
        dict[str, Any],
        metadata_schema({"actors": {"type": "string"}, "parent_id": {"type": "string"}}, nullable=False),
    ]


class CreateItemsRequest(BaseModel):
    """Up to 20 message items, stored all or none."""

    model_config = ConfigDict(extra="forbid")
    items: Items = Field(min_length=1, max_length=MAX_ITEMS)


class Conversation(BaseModel):
    id: str
    object: Literal["conversation"] = "conversation"
    created_at: int
    metadata: dict[str, str]


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["input_text", "output_text", "input_image"]
    text: str | None = None


class MessageItem(BaseModel):
    """A message item; `actor`, `aitp` and `to` are AITP's additions (the author, what the server validated,
    and the actors the message is for: present only when it named them). An item written may carry `to` too,
    an array of actor ids (the message's `metadata.to`)."""

    id: str
    type: Literal["message"] = "message"
    status: Literal["completed"] = "completed"
    role: Literal["user", "assistant"]
    content: list[ContentPart]
    created_at: int
    actor: str
    aitp: list[dict[str, Any] | None] | None = None
    to: list[str] | None = None


class ItemList(BaseModel):
    object: Literal["list"] = "list"
    data: list[MessageItem]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ConversationDeleted(BaseModel):
    id: str
    object: Literal["conversation.deleted"] = "conversation.deleted"
    deleted: Literal[True] = True
