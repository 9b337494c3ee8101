"""The per-thread event log: every mutation, in order, with the object it produced."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

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
    "thread.capabilities.updated",
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
