"""Threads and their actors (AITP participants) with capability declarations."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from aitp.bindings.http.models import metadata_schema
from aitp.bindings.openai_threads.models.messages import CreateMessageRequest
from aitp.inputs.shapes import MAX_URL_LENGTH
from aitp.services.requests import ActorDeclaration, CapabilityDeclarationInput, NewThread, ThreadChanges


class SchemaDeclaration(BaseModel):
    """A capability declared by its schema URL (major version = the URL's major)."""

    model_config = ConfigDict(title="SchemaDeclaration")
    schema_: str = Field(alias="schema", serialization_alias="schema")


class RangeDeclaration(BaseModel):
    """A capability declared by id and a version range (`packaging` specifier syntax)."""

    capability: str
    versions: str


# How a declaration is stored and returned, whichever of the accepted input forms was sent.
CapabilityDeclaration = SchemaDeclaration | RangeDeclaration


class Actor(BaseModel):
    """A participant of a thread: `user` if it created the thread, else `assistant`."""

    object: Literal["thread.actor"] = "thread.actor"
    id: str
    client_id: str | None
    role: Literal["user", "assistant"]
    capabilities: list[CapabilityDeclaration]
    joined_at: int


# The forms `aitp.capabilities.declarations` accepts, as the OpenAPI document states them (it checks them)
_SCHEMA_URL: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_URL_LENGTH, "pattern": "\\S"}
_NO_RANGE: dict[str, Any] = {"not": {"required": ["capability"]}}
DECLARATION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {**_SCHEMA_URL, "description": "A capability's schema URL (its `$schema`)."},
        {"type": "object", "properties": {"schema": _SCHEMA_URL}, "required": ["schema"], **_NO_RANGE},
        {"type": "object", "properties": {"$schema": _SCHEMA_URL}, "required": ["$schema"], **_NO_RANGE},
        {
            "type": "object",
            "properties": {
                "capability": {"type": "string", "minLength": 1, "description": "e.g. `aitp-02-decisions`"},
                "versions": {"type": "string", "description": "A version range, e.g. `>=1.0.0,<3`."},
            },
            "required": ["capability"],
            "additionalProperties": False,
        },
    ]
}


class ActorInput(ActorDeclaration):
    """An actor to add to a thread, or its new capability list."""

    capabilities: list[Annotated[CapabilityDeclarationInput, WithJsonSchema(DECLARATION_SCHEMA)]] = Field(
        default_factory=list
    )


class ThreadTurns(BaseModel):
    """How many messages agents may post in a row with no message from a person (AITP)."""

    budget: int | None = Field(
        description="The thread's own budget (0: no limit); null: the server's default (AITP_TURN_BUDGET)."
    )
    persons: list[str] = Field(description="Actors the creator marked as persons: they speak as user, as it does.")
    agent_turns: int = Field(description="Agents' messages since the last message of a person.")
    paused: bool = Field(description="Agents used their turns: their posts are refused until a person writes.")


class Thread(BaseModel):
    """An OpenAI Thread object plus the AITP `actors`, `parent_id` and `turns` fields.

    `metadata` holds only strings (OpenAI rule); it also carries `actors` (JSON-encoded) and
    `parent_id` so that clients that only read metadata see them, as AITP-T01 clients do.
    """

    id: str
    object: Literal["thread"] = "thread"
    created_at: int
    tool_resources: dict[str, Any] | None
    metadata: dict[str, str]
    actors: list[Actor]
    parent_id: str | None
    turns: ThreadTurns


class CreateThreadRequest(NewThread):
    """`POST /v1/threads` (and AITP-T01 `POST /v1/thread`).

    Actors may be given as `actors` or as `metadata.actors` (an array or a JSON-encoded string).
    """

    # AITP-T01 sends messages as bare strings; OpenAI as message objects.
    messages: list[str | CreateMessageRequest] | None = None
    actors: list[ActorInput] | None = None
    # AITP-T01's `actors` (an array of actors, or one as a JSON string) and `parent_id` ride in metadata
    metadata: Annotated[
        dict[str, Any] | None,
        metadata_schema(
            {
                "actors": {"anyOf": [{"type": "array", "items": {"type": "object"}}, {"type": "string"}]},
                "parent_id": {"type": "string"},
            }
        ),
    ] = None


class ModifyThreadRequest(ThreadChanges):
    """Replace the thread's metadata; an empty body returns the thread unchanged (AITP-T01 retrieve)."""

    # `actors` and `parent_id` may be sent back as the thread shows them (JSON strings), not changed
    metadata: Annotated[
        dict[str, Any] | None, metadata_schema({"actors": {"type": "string"}, "parent_id": {"type": "string"}})
    ] = None


class ActorList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Actor]
