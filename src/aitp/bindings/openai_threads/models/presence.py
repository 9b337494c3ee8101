"""Presence: whether an actor can be reached now; activity: what an actor is doing in a thread right now."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Via = Literal["inbox_stream", "webhook", "a2a"]
State = Literal["working", "idle"]


class ActorPresence(BaseModel):
    """Whether an actor can be reached now, how, and how soon it usually replies."""

    object: Literal["actor.presence"] = "actor.presence"
    actor: str
    reachable: bool = Field(description="Whether any of `via` holds now.")
    via: list[Via] = Field(
        description="How it can be reached: its inbox followed live (WebSocket or SSE), a webhook whose deliveries "
        "succeed, or an A2A agent whose last call answered."
    )
    usually_replies_in: int | None = Field(
        description="The median seconds from someone else's message to its next one, over its recent replies "
        "(null with none to go by)."
    )
    checked_at: int


class ActivityInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: State = Field(description="`working` on an answer (holds 15 s unless said again), or `idle`.")
    expires_in: int | None = Field(
        None, strict=True, ge=1, le=60, description="`working` only: seconds it holds unless said again (default 15)."
    )
    actor: str | None = Field(
        None, min_length=1, max_length=256, description="Admin keys only: the member the activity is of."
    )


class Activity(BaseModel):
    """An actor's activity in a thread, as set. Live streams that ask (`activity=true`) carry it as a frame
    `{"type": "thread.activity", "thread_id", "data": {"actor", "state", "expires_at"}}`, outside the log."""

    object: Literal["thread.activity"] = "thread.activity"
    thread_id: str
    actor: str
    state: State
    expires_at: int = Field(description="When `working` ends unless said again; for `idle`, when it was said.")
