"""The capability registry and per-thread negotiation, as returned by the API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel


class Capability(BaseModel):
    id: str
    object: Literal["capability"] = "capability"
    title: str
    description: str
    versions: list[str]
    latest: str | None
    schema_urls: dict[str, str]
    aliases: list[dict[str, Any]]


class CapabilityList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Capability]


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
