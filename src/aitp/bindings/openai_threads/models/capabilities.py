"""The capability registry and per-thread negotiation, as returned by the API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from aitp.services.requests import NewCapabilityVersion


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


class RegisterCapabilityRequest(NewCapabilityVersion):
    """`POST /v1/capabilities`: a new capability, or a new version of one (published versions are immutable)."""
