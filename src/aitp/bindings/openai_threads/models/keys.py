"""API keys: each belongs to one actor; admin keys may act for anyone."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Scope = Literal["capabilities:write"]


class CreateKeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actor: str = Field(min_length=1, max_length=256)
    admin: bool = Field(False, strict=True)  # `0` or `"yes"` are not booleans: refuse them (400)
    scopes: list[Scope] = Field(default_factory=list)


class ApiKey(BaseModel):
    """A key as listed: never the secret, only its first characters."""

    id: str
    object: Literal["api_key"] = "api_key"
    actor: str
    admin: bool
    scopes: list[str]
    created_at: int
    prefix: str
    expires_at: int | None = None  # unix seconds from which the key is refused (null: never)


class CreatedApiKey(ApiKey):
    """Returned once on creation: `key` is the secret bearer token."""

    key: str


class ApiKeyList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ApiKey]


class Identity(BaseModel):
    """Who the calling key acts as (`GET /v1/actors/me`)."""

    object: Literal["actor.identity"] = "actor.identity"
    id: str  # the actor id the key acts as ("admin" for the AITP_ADMIN_KEY)
    admin: bool
    key_id: str | None  # None for the AITP_ADMIN_KEY, which is not stored
    scopes: list[str]
    # the inbox's position now: subscribe with after=inbox_cursor for what happens from here on
    inbox_cursor: int
