"""What an actor is doing in a thread right now: an agent says it is working on an answer (a typing indicator
for agents), and the other members following the thread or their inbox live see it.

An activity is ephemeral. It is in no thread's event log and no message, has no cursor, is never replayed: a
stream hears what is posted while it is open, and only a stream that asks for it (its binding passes a
rendering: clients written before read every frame as an event). `working` holds for `WORKING_SECONDS`
unless said again (an agent working longer says so every few seconds, or says how long at first, up to a
minute); `idle` ends it. Each live stream ends a `working` it showed by itself, with an `idle` notice: when
it expires, or right after that actor's next message in the thread (`ActivityRelay`). Records go through the
store only so that every instance sharing it hears them (`aitp.events.hub`): posting one is one small write;
posting a message costs nothing more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from aitp.errors import InvalidRequest
from aitp.events.stream import Notice
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services.access import acting_actor, readable_thread
from aitp.services.messages import not_a_member
from aitp.services.rate_limit import RateLimiter
from aitp.store.activity import ActivityRecord, ActivityState
from aitp.store.base import EventRecord

STATES: tuple[ActivityState, ...] = ("working", "idle")
WORKING_SECONDS = 15  # how long `working` holds unless said again (or as the actor says: 1 to MAX_WORKING_SECONDS)
MAX_WORKING_SECONDS = 60
# per actor, in this process: an agent at work in many threads says so every few seconds in each
RATE_PER_SECOND = 5.0
RATE_BURST = 30

ShowActivity = Callable[[ActivityRecord], Notice]  # a binding's rendering of an activity record


def limiter(rt: Runtime) -> RateLimiter:
    """This process's activity posts by actor (`rt.state(limiter)`)."""
    return RateLimiter()


async def set_activity(
    rt: Runtime,
    principal: Principal,
    thread_id: str,
    state: str,
    *,
    actor: object = None,
    expires_in: int | None = None,
) -> ActivityRecord:
    """Say that the caller's actor (an admin: `actor`, a member) is `working` in the thread for `expires_in`
    seconds (`WORKING_SECONDS` by default), or `idle`; 404 for non-members, as for every thread route; 429 past
    `RATE_PER_SECOND` per actor (bursts of `RATE_BURST`)."""
    if state not in STATES:
        raise InvalidRequest(f"'state' must be one of {', '.join(STATES)}.", param="state")
    if expires_in is not None and not (state == "working" and 1 <= expires_in <= MAX_WORKING_SECONDS):
        raise InvalidRequest(
            f"'expires_in' goes with 'working' only, from 1 to {MAX_WORKING_SECONDS} seconds.", param="expires_in"
        )
    view = await readable_thread(rt, principal, thread_id, recent=True)
    who = acting_actor(principal, actor, "actor")
    if view.member(who) is None:  # an admin naming an actor that is not in the thread
        raise not_a_member(who, "actor")
    rt.state(limiter).check(
        f"activity {who}",
        RATE_PER_SECOND,
        RATE_BURST,
        limit=f"activity of '{who}': {RATE_PER_SECOND:g} per second (bursts of {RATE_BURST})",
        code="too_many_activity_updates",
    )
    now = time.time()
    record = ActivityRecord(
        thread_id=thread_id,
        actor=who,
        state="working" if state == "working" else "idle",
        expires_at=now + (expires_in or WORKING_SECONDS) if state == "working" else now,
        audience=tuple(member.id for member in view.actors),
        origin=rt.hub.instance,
        posted_at=now,
    )
    record = replace(record, position=await rt.store.activity.post(record))
    rt.hub.activity(record)  # this process's streams now; the others' when their hubs read the store
    return record


def _author(record: EventRecord) -> str | None:
    """Who wrote the message a `thread.message.created` event carries (a payload written before neutral
    records held the Threads object: its actor is in its metadata)."""
    data = record.data
    author = data.get("actor")
    if author is None and isinstance(data.get("metadata"), dict):
        author = data["metadata"].get("actor")
    return author if isinstance(author, str) else None


class ActivityRelay:
    """What one live stream shows of activity: the records it hears (but its own actor's), rendered by the
    stream's binding, and an `idle` for each `working` it showed once that ends by itself (expired, or the
    actor's next message in the thread), so a consumer need keep no timer. Bound to a stream by `attach`."""

    def __init__(self, me: str, show: ShowActivity) -> None:
        self._me = me
        self._show = show
        self._push: Callable[[Notice], None] | None = None
        self._working: dict[tuple[str, str], float] = {}  # (thread, actor) shown working -> until (Unix s)
        self._timer: asyncio.TimerHandle | None = None

    def attach(self, push: Callable[[Notice], None]) -> None:
        self._push = push

    def heard(self, record: ActivityRecord) -> None:
        """An activity record of a thread the stream follows (`Hub.hear_activity`)."""
        if record.actor == self._me or self._push is None:
            return
        key = (record.thread_id, record.actor)
        if record.state == "working":
            if record.expires_at <= time.time():
                return  # read late (another instance's, after a store hiccup): over already
            self._working[key] = record.expires_at
            self._arm()
        elif self._working.pop(key, None) is None:
            return  # an end of something this stream never showed: nothing to take back
        self._push(self._show(record))

    def after_event(self, record: EventRecord) -> Notice | None:
        """The stream's follow-up of an event: `idle` right after the message of an actor it showed working."""
        if not self._working or record.type != "thread.message.created":
            return None
        author = _author(record)
        if author is None or self._working.pop((record.thread_id, author), None) is None:
            return None
        return self._show(self._idle(record.thread_id, author))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._push = None

    def _idle(self, thread_id: str, actor: str) -> ActivityRecord:
        now = time.time()
        return ActivityRecord(thread_id, actor, "idle", now, (), "", now)

    def _arm(self) -> None:
        """A timer for the earliest end of what is shown (one per stream, re-armed as that changes)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._working:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, min(self._working.values()) - time.time())
        self._timer = loop.call_at(loop.time() + delay, self._expire)

    def _expire(self) -> None:
        self._timer = None
        now = time.time()
        for key in [key for key, until in self._working.items() if until <= now]:
            del self._working[key]
            if self._push is not None:
                self._push(self._show(self._idle(*key)))
        self._arm()
