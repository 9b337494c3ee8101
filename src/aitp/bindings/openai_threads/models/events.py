"""The per-thread event log: every mutation, in order, with the object it produced."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

EventType = Literal[
    "thread.created",
    "thread.updated",
    "thread.deleted",
    "thread.actor.joined",
    "thread.actor.updated",
    "thread.actor.left",
    "thread.message.created",
    "thread.message.updated",
    "thread.message.deleted",
    "thread.message.refused",
    "thread.capabilities.updated",
    "thread.paused",
    "thread.resumed",
]


class Event(BaseModel):
    """`seq` is strictly increasing per thread; resume with `after=<last seq seen>`."""

    seq: int
    type: EventType
    thread_id: str
    created_at: int
    data: dict[str, Any]


class EventList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Event]
    last_seq: int
    has_more: bool


class InboxEvent(Event):
    """An event of one of the caller's threads; `cursor` orders the whole inbox: resume with `after=<cursor>`."""

    cursor: int


class InboxEventList(BaseModel):
    object: Literal["list"] = "list"
    data: list[InboxEvent]
    last_cursor: int
    has_more: bool


class TurnsChange(BaseModel):
    """`data` of a `thread.paused` event (agents used their turns: their posts are refused 429
    `turn_budget_exhausted` until a person writes) and of a `thread.resumed` event."""

    thread_id: str
    turn_budget: int = Field(description="The budget that applies: agents' messages in a row with no person's.")
    actor: str = Field(
        description="paused: the agent whose message used the last turn; resumed: the person whose message"
        " resumed it; empty when the thread's creator changed the budget."
    )


class MessageRefusal(BaseModel):
    """`data` of a `thread.message.refused` event: a member's capability message was refused because other
    actors of the thread cannot read it (the sender got 422 `capability_not_supported`). No content is kept."""

    thread_id: str
    actor: str = Field(description="Who sent the message.")
    code: Literal["capability_not_supported"] = "capability_not_supported"
    capability: str = Field(description="The capability id, e.g. aitp-02-decisions.")
    version: str = Field(description="The version the message was sent in, e.g. 1.0.0.")
    type: str | None = Field(description="The message type, e.g. request_decision.")
    param: str = Field(description="The refused part, e.g. content[1].$schema.")
    unsupported_by: list[str] = Field(
        description="The actors that cannot read it; once they declare the capability, the message goes through."
    )
    reply_to: str | None = Field(
        default=None,
        description="The message it answered, when its metadata named one (`reply_to`, `a2a_reply_to`).",
    )
