"""Messages: OpenAI content parts in and out, plus the AITP `aitp` routing summary."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aitp.bindings.http.models import metadata_schema
from aitp.services.requests import NewMessage


class TextValue(BaseModel):
    value: str
    annotations: list[dict[str, Any]]


class TextPart(BaseModel):
    type: Literal["text"] = "text"
    text: TextValue


class ImageUrlPart(BaseModel):
    type: Literal["image_url"] = "image_url"
    image_url: dict[str, Any]


class ImageFilePart(BaseModel):
    type: Literal["image_file"] = "image_file"
    image_file: dict[str, Any]


ContentPart = TextPart | ImageUrlPart | ImageFilePart


class AitpPart(BaseModel):
    """What the server validated in one capability content part (so clients need not parse JSON)."""

    capability: str | None  # None only when unknown capabilities are accepted unvalidated
    version: str | None
    type: str | None  # the message type: its top-level key, e.g. `request_decision`
    validated: bool
    schema_: str = Field(alias="schema", serialization_alias="schema")  # the `$schema` URL as sent


class Message(BaseModel):
    """An OpenAI `thread.message`; `metadata.actor` names the AITP actor that wrote it."""

    id: str
    object: Literal["thread.message"] = "thread.message"
    created_at: int
    thread_id: str
    status: Literal["completed"] = "completed"
    incomplete_details: None = None
    completed_at: int
    incomplete_at: None = None
    role: Literal["user", "assistant"]
    content: list[ContentPart]
    assistant_id: str | None
    run_id: None = None
    attachments: list[dict[str, Any]]
    metadata: dict[str, str]
    # One entry per content part (null for plain parts); null when no part is a capability message.
    aitp: list[AitpPart | None] | None = None


class CreateMessageRequest(NewMessage):
    """`content` is a string, an array of strings (AITP) or an array of OpenAI content parts.

    `role` is the role the client claims; the role kept is derived from the author (the thread's creator and
    the actors it marks as persons → user, others → assistant), and the response's `role` shows it. By
    default a claimed `user` or `assistant` that differs is replaced; with AITP_STRICT_ROLES it is refused
    (400 `role_mismatch`, param `role`).
    """

    role: Literal["user", "assistant"] | None = None
    # `actor`: whom the caller posts as; `to`: the actors the message is for (an array, or one as a JSON string)
    metadata: Annotated[
        dict[str, Any] | None,
        metadata_schema(
            {
                "actor": {"type": "string"},
                "to": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
            }
        ),
    ] = None


class ModifyMessageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # `actor` may be sent back as it is (the author cannot change); every other value is a string
    metadata: Annotated[dict[str, Any] | None, metadata_schema({"actor": {"type": "string"}})] = None
