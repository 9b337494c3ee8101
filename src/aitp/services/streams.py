"""Live event streams a caller may follow: one thread's events, or its actor inbox (every thread it is in).

A binding that shows activity (`services.activity`: an agent working on an answer) passes its rendering of it
(`activity`): its streams then carry what the other members say they are doing, outside the log. An inbox
stream open says its actor can be reached (`services.presence.inbox_followed`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from typing import Any

from aitp import memory
from aitp.events.stream import EventStream, Reader, Render
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services.access import readable_thread
from aitp.services.activity import ActivityRelay, ShowActivity
from aitp.services.connections import stream_slots
from aitp.services.paging import LogPage, log_page
from aitp.services.presence import inbox_followed
from aitp.store.base import EventRecord


def thread_end(record: EventRecord, principal: Principal) -> str | None:
    """Why `principal` can follow the thread no further after this event of it, or None."""
    if record.type == "thread.deleted":
        return "thread deleted"
    if record.type == "thread.actor.left" and record.data.get("id") == principal.actor and not principal.admin:
        return "removed from the thread"
    return None


@asynccontextmanager
async def thread_stream(
    rt: Runtime, principal: Principal, thread_id: str, after: int, render: Render, activity: ShowActivity | None = None
) -> AsyncIterator[EventStream]:
    """The thread's events after seq `after`, then live, as the caller's binding renders them (`render`, one
    object per binding), and with `activity` the members' activity as it comes; 404 for non-members. Ends when
    the thread is deleted, the subscriber's actor is removed from it, or its key is revoked."""
    await readable_thread(rt, principal, thread_id)

    def ends(record: EventRecord) -> str | None:
        return thread_end(record, principal)

    relay = None if activity is None else ActivityRelay(principal.actor, activity)
    try:
        with rt.hub.follow(thread_id) as feed:
            stream = EventStream(
                feed.after,
                feed.signal.waiter,
                feed.frames(render),  # rendered once per event for every live subscriber of the binding
                cursor=after,
                replay=feed.page,  # a replay reads the store page by page, not into the feed's window
                ends=ends,
                buffer=rt.settings.stream_buffer,
                keepalive=rt.settings.keepalive_seconds,
                follow_up=None if relay is None else relay.after_event,
            )
            with _slot(rt, principal, stream), _hearing(rt, relay, stream, thread_id=thread_id):
                yield stream
    finally:
        memory.release_soon()  # what the stream and the feed held goes back to the system (`aitp.memory`)


@asynccontextmanager
async def inbox_stream(
    rt: Runtime, principal: Principal, after: int, render: Render, activity: ShowActivity | None = None
) -> AsyncIterator[EventStream]:
    """Events of every thread the caller is in (from joining to leaving), resumable from `cursor`, as the
    caller's binding renders them, and with `activity` the activity in those threads as it comes. An admin key
    follows every thread. While it is open, the caller's actor can be reached (`presence.inbox_followed`)."""
    # woken by the events of the caller's threads only (the admin's: every event), see `Hub.notify`
    wakes = nullcontext(rt.hub.any_event) if principal.admin else rt.hub.follow_inbox(principal.actor)
    relay = None if activity is None else ActivityRelay(principal.actor, activity)
    hearing: dict[str, Any] = {} if principal.admin else {"actor": principal.actor}
    try:
        with wakes as signal:
            stream = EventStream(
                _inbox_reader(rt, principal),
                signal.waiter,
                render,
                cursor=after,
                buffer=rt.settings.stream_buffer,
                keepalive=rt.settings.keepalive_seconds,
                follow_up=None if relay is None else relay.after_event,
            )
            with _slot(rt, principal, stream), _hearing(rt, relay, stream, **hearing):
                async with inbox_followed(rt, principal):
                    yield stream
    finally:
        memory.release_soon()


@contextmanager
def _hearing(rt: Runtime, relay: ActivityRelay | None, stream: EventStream, **which: str) -> Iterator[None]:
    """The stream hears activity through `relay` while the block runs (nothing without one)."""
    if relay is None:
        yield
        return
    relay.attach(stream.push)
    try:
        with rt.hub.hear_activity(relay.heard, **which):
            yield
    finally:
        relay.close()


def _slot(rt: Runtime, principal: Principal, stream: EventStream) -> AbstractContextManager[None]:
    """One of the caller's key's open-stream slots, held by `stream` while it is open (429 if none is free);
    revoking the key ends it."""
    return rt.state(stream_slots).hold(principal, rt.settings.max_streams_per_key, stream)


def _inbox_reader(rt: Runtime, principal: Principal) -> Reader:
    if principal.admin:
        return lambda cursor, limit: rt.store.events_since(cursor, limit)
    return lambda cursor, limit: rt.store.list_inbox_events(principal.actor, cursor, limit)


async def list_inbox(rt: Runtime, principal: Principal, *, after: int, limit: int) -> LogPage:
    """One page of the caller's inbox after `cursor` (the polling twin of the inbox stream)."""
    return log_page(await _inbox_reader(rt, principal)(after, limit + 1), limit)
