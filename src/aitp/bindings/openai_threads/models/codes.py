"""One-time codes: WebSocket tickets and sign-in links."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aitp.bindings.openai_threads.models.keys import CreatedApiKey


class Ticket(BaseModel):
    """A one-time WebSocket ticket: connect with `?ticket=<ticket>` within `expires_at` instead of a key."""

    object: Literal["websocket.ticket"] = "websocket.ticket"
    ticket: str
    expires_at: int


class CreateSignInCodeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actor: str | None = Field(
        None, min_length=1, max_length=256, description="Admin keys only: sign in as this actor instead."
    )
    expires_in: int | None = Field(None, strict=True, description="Seconds the link stays valid (60 to 604800).")


class SignInCode(BaseModel):
    """A one-time sign-in code (shown once): the web UI signs in with `/#code=<code>`."""

    object: Literal["sign_in_code"] = "sign_in_code"
    code: str
    actor: str
    expires_at: int


class SignInRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=1, max_length=200)


class SignedIn(CreatedApiKey):
    """The key a sign-in code was exchanged for (shown once): a new key of the code's actor."""
