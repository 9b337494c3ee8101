"""Pydantic wire models of the Conversations face: requests as parsed, responses as documented in the
OpenAPI document (responses are rendered as plain dicts by `.render`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_ITEMS = 20  # per request, as in the public API

Items = list[dict[str, Any]]


class CreateConversationRequest(BaseModel):
    """`POST /v1/conversations`. Actors come in `metadata.actors` (a JSON string, AITP-T01), or the caller is
    the only one; `items` are posted by the caller, in order, in the same write."""

    model_config = ConfigDict(extra="forbid")
    items: Items | None = Field(default=None, max_length=MAX_ITEMS)
    metadata: dict[str, Any] | None = None


class UpdateConversationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any]


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
