"""What the services take in: the core's own input records, free of any binding's wire shape.

A binding hands these to the services, either built from its own request (a Conversations item becomes a
`NewMessage`) or as its request model itself when that extends one of these (the Threads binding's
`CreateMessageRequest` is a `NewMessage` with a `role` the service ignores). They are pydantic models
because AITP-T01 carries actors inside metadata (`NewThread` parses them), with the same limits however
they arrive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# An actor declares a capability as a URL string, {"schema": url}, {"$schema": url} or {"capability", "versions"}.
CapabilityDeclarationInput = str | dict[str, Any]


class NewMessage(BaseModel):
    """A message to post: `content` is a string, an array of strings (AITP) or an array of content parts.
    The author is the caller, or `metadata.actor` when the caller may act for it."""

    model_config = ConfigDict(extra="forbid")
    content: str | list[Any]
    attachments: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    role: str | None = None  # the role the client claimed (the stored one is derived: `services.messages`)


class ActorDeclaration(BaseModel):
    """An actor to add to a thread, or its new capability list."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=256)
    client_id: str | None = Field(default=None, max_length=256)
    capabilities: list[CapabilityDeclarationInput] = Field(default_factory=list)


class NewThread(BaseModel):
    """A thread to create. Actors are given as `actors` or as `metadata.actors` (an array or a JSON-encoded
    string, AITP-T01); `messages` are posted by the creator in the same write."""

    model_config = ConfigDict(extra="forbid")
    messages: Sequence[str | NewMessage] | None = None
    metadata: dict[str, Any] | None = None
    actors: Sequence[ActorDeclaration] | None = None
    parent_id: str | None = None
    tool_resources: dict[str, Any] | None = None


class ThreadChanges(BaseModel):
    """What to replace in a thread: its metadata and/or, when the field is given (even as null), its
    tool_resources, and (its creator only) its `turns`: `budget` (an integer, 0 for no limit, or null for the
    server's default) and/or `persons` (actor ids that speak as persons). Nothing given changes nothing."""

    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] | None = None
    tool_resources: dict[str, Any] | None = None
    turns: dict[str, Any] | None = None


class NewCapabilityVersion(BaseModel):
    """A capability version to register (published versions are immutable)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=100, description="e.g. `acme-orders`")
    version: str = Field(pattern=r"^\d{1,6}\.\d{1,6}\.\d{1,6}$", description="X.Y.Z")
    schema_: dict[str, Any] = Field(
        alias="schema", description="A JSON Schema (2020-12 by default) or an OpenAPI 3.x document (see openapi_root)"
    )
    examples: list[dict[str, Any]] = Field(
        default_factory=list, max_length=100, description="Example messages; each must validate"
    )
    aliases: list[str] = Field(
        default_factory=list, max_length=20, description="Other `$schema` URLs that mean this version"
    )
    title: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=4000)
    openapi_root: str | None = Field(
        None, max_length=200, description="For OpenAPI documents: the `components/schemas` entry a message is"
    )
