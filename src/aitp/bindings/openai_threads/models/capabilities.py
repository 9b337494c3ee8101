"""The capability registry and per-thread negotiation, as returned by the API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Capability(BaseModel):
    id: str
    object: Literal["capability"] = "capability"
    title: str
    description: str
    versions: list[str]
    latest: str | None
    schema_urls: dict[str, str]
    example_urls: dict[str, str] = Field(description="Per version, the path of its example messages on this server")
    aliases: list[dict[str, Any]]


class CapabilityList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Capability]


class CapabilityExample(BaseModel):
    """An example message published with a capability version (it validates against that version)."""

    object: Literal["capability.example"] = "capability.example"
    name: str
    type: str | None = Field(description="The message type (its top-level key besides `$schema`)")
    message: dict[str, Any]


class CapabilityExampleList(BaseModel):
    object: Literal["list"] = "list"
    capability: str
    version: str
    data: list[CapabilityExample]


class NegotiatedCapability(BaseModel):
    """`version`: the highest registered version every current actor supports (null if none)."""

    id: str
    version: str | None
    supported_by: list[str]
    unsupported_by: list[str]
    declared: dict[str, list[str]]


class UnknownDeclaration(BaseModel):
    actor: str
    declaration: dict[str, str]


class ThreadCapabilities(BaseModel):
    object: Literal["thread.capabilities"] = "thread.capabilities"
    thread_id: str
    data: list[NegotiatedCapability]
    unknown: list[UnknownDeclaration]


class RegisterCapabilityRequest(BaseModel):
    """`POST /v1/capabilities`: a new capability, or a new version of one (published versions are immutable)."""

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
