"""A live event stream for one subscriber: replay from its cursor, then live, through a bounded buffer.

Replay is pulled page by page as the transport takes the frames (`PAGE` events read at a time), so a
replaying stream holds one page, never the thread's log. Once caught up, the stream reads the log after
each wake-up (through the hub) into its buffer, which the transport (WebSocket or SSE) drains: in the
consumer's own task, between the frames it sends, so a woken stream costs one task step and no task of
its own. Events written while the transport sends are read as soon as it comes back; more than `buffer`
of them not yet sent means the consumer cannot keep up, and the stream ends with `Overflow`, naming the
cursor to resume from, so a slow consumer never grows server memory.

A stream also ends from outside (`EventStream.end`): its key was revoked, or its client left.

Beside the log, a stream carries notices (`Notice`, `EventStream.push`): what is true for a moment only (an
agent working on an answer), outside the log, with no cursor, never replayed. A pushed notice wakes the
consumer without a read of the log; what the log has is read as ever.

Events travel as `Frame`s: the wire JSON of an event, rendered once by the binding that serves the stream
(its `Render`). A thread's feed hands the same Frame to every live subscriber of that binding
(`ThreadFeed.frames`), so a thousand subscribers cost one serialisation. How a stream's end reaches the
client (a WebSocket close code, an SSE end frame) is the binding's too.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import orjson

from aitp.store.base import EventRecord

log = logging.getLogger(__name__)

BATCH = 500  # events read at once by a live stream (at most its buffer)
PAGE = 100  # events read at once while replaying: what one replaying stream holds
DEFAULT_BUFFER = 1024
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class End:
    """The stream is over: the thread was deleted, the subscriber was removed from it, or (`revoked`) its
    key was revoked."""

    reason: str
    revoked: bool = False


@dataclass(frozen=True)
class Overflow:
    """The consumer fell `buffer` events behind live; resume from `cursor`."""

    cursor: int | str
    buffer: int

    @property
    def reason(self) -> str:
        return f"slow consumer: more than {self.buffer} events buffered; resume with after={self.cursor}"


class Frame:
    """One event on its way out: its cursor, its type and its wire object as JSON text (rendered once)."""

    def __init__(self, cursor: int, type: str, json: str) -> None:
        self.cursor = cursor
        self.type = type
        self.json = json

    @cached_property
    def sse(self) -> bytes:
        """The Server-Sent Events frame: `id:` is the cursor to resume from."""
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (self.cursor, self.type.encode(), self.json.encode())

    def object(self) -> dict[str, Any]:
        """The wire object (tests and in-process consumers; transports send `json`)."""
        value: dict[str, Any] = orjson.loads(self.json)
        return value


Render = Callable[[EventRecord], Frame]  # a binding's rendering of an event record


class Notice:
    """A frame outside the log (`EventStream.push`): its type and wire JSON, no cursor. SSE sends it without an
    `id:`, so a reconnecting EventSource resumes from the last event's cursor, never from a notice."""

    __slots__ = ("type", "json")

    def __init__(self, type: str, json: str) -> None:
        self.type = type
        self.json = json

    @property
    def sse(self) -> bytes:
        return b"event: %s\ndata: %s\n\n" % (self.type.encode(), self.json.encode())

    def object(self) -> dict[str, Any]:
        value: dict[str, Any] = orjson.loads(self.json)
        return value


MAX_NOTICES = 64  # notices waiting to be sent per stream: past it the oldest go (each says what holds now)


def frame_of(render_event: Callable[[EventRecord], dict[str, Any]], cursor_of: Callable[[EventRecord], int]) -> Render:
    """A function rendering a record to its Frame (one serialisation per call)."""

    def frame(record: EventRecord) -> Frame:
        return Frame(cursor_of(record), record.type, orjson.dumps(render_event(record)).decode())

    return frame


Item = Frame | Notice | End | Overflow | None  # None: keep-alive tick


Reader = Callable[[int, int], Awaitable[list[EventRecord]]]  # (cursor, limit) -> events after it


class Waiter(Protocol):
    """Taken before reading: set once something may have been written since (events.hub.Wakeup)."""

    async def wait(self) -> Any: ...

    def is_set(self) -> bool: ...

    def set(self) -> None:
        """Wake this waiter alone (the stream ended from outside, or is due a keep-alive tick)."""


class _KeepAlive:
    """Calls `idle()` when nothing went out for `interval` seconds: one timer per stream, re-armed every
    `interval`, rather than a timeout around every wait (a timer per event)."""

    __slots__ = ("_loop", "_idle", "_interval", "active_at", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: Callable[[], None], interval: float) -> None:
        self._loop = loop
        self._idle = idle
        self._interval = interval
        self.active_at = loop.time()  # when the transport last got something
        self._timer = loop.call_at(self.active_at + interval, self._tick)

    def _tick(self) -> None:
        now = self._loop.time()
        if now >= self.active_at + self._interval:
            self._idle()
            self.active_at = now
        self._timer = self._loop.call_at(self.active_at + self._interval, self._tick)

    def cancel(self) -> None:
        self._timer.cancel()  # which drops its callback: nothing refers to this any more


class EventStream:
    """Events after a cursor, then live. Iterate it; it ends with an `End` or `Overflow` item, or never."""

    def __init__(
        self,
        read: Reader,
        wait: Callable[[], Waiter],
        frame: Render,
        *,
        cursor: int,
        replay: Reader | None = None,
        ends: Callable[[EventRecord], str | None] = lambda _: None,
        buffer: int = DEFAULT_BUFFER,
        keepalive: float = KEEPALIVE_SECONDS,
        follow_up: Callable[[EventRecord], Notice | None] | None = None,
    ) -> None:
        self._read = read
        self._replay = replay or read  # pages while catching up (a thread's feed keeps them out of its window)
        self._wait = wait
        self._cursor = cursor
        self._frame = frame  # e.g. a thread feed's, whose frames its subscribers share
        self._ends = ends
        self._buffer = buffer
        self._keepalive = keepalive
        self.delivered = cursor  # cursor of the last event handed to the transport
        self._ending: End | None = None  # set by `end`
        self._waiter: Waiter | None = None  # while live: what wakes the consumer when it has nothing to send
        self._idle = False  # a keep-alive tick is due
        self._follow_up = follow_up  # a notice to send right after an event's frame (or None)
        self._notices: deque[Notice] = deque(maxlen=MAX_NOTICES)

    def push(self, notice: Notice) -> None:
        """Send `notice` soon, between the log's frames. A live consumer waiting with nothing new in the log
        is woken for it alone: it takes a fresh ticket for the log's next write first, so the notice costs no
        read of the log (and a write after the last read still wakes it)."""
        self._notices.append(notice)
        waiter = self._waiter
        if waiter is not None and not waiter.is_set():
            self._waiter = self._wait()
            waiter.set()

    def end(self, reason: str, revoked: bool = False) -> None:
        """End the stream from outside: the next item is `End(reason, revoked)`, whatever is still buffered."""
        if self._ending is None:
            self._ending = End(reason, revoked)
            self._wake()

    def _wake(self) -> None:
        """Wake the consumer if it waits for events (else it looks at the stream's state before it waits)."""
        if self._waiter is not None:
            self._waiter.set()

    def _tick(self) -> None:
        self._idle = True
        self._wake()

    async def __aiter__(self) -> AsyncIterator[Item]:
        # Replay: one page at a time, read when the transport has taken the previous one.
        while self._ending is None:
            page = await self._replay(self._cursor, PAGE)
            caught_up = len(page) < PAGE
            for record in page:
                if self._ending is not None:
                    break
                frame = self._frame(record)
                self._cursor = self.delivered = frame.cursor
                yield frame
                if self._follow_up is not None:
                    notice = self._follow_up(record)
                    if notice is not None:
                        yield notice
                reason = self._ends(record)
                if reason is not None:
                    yield End(reason)
                    return
            del page
            if caught_up:
                break
        if self._ending is not None:
            yield self._ending
            return

        # Live: read after each wake-up into `buffered`, which the transport drains; reading again whenever
        # it comes back from sending and something was written meanwhile, so the events it has not taken are
        # counted as they are written, as a task filling a queue would, without the task.
        loop = asyncio.get_running_loop()
        buffered: deque[Item] = deque()
        caught_up = False  # after the replay, what was written meanwhile is read as the replay was: in full
        reading = True  # False once the stream ended after what is buffered (an End, or an overflow)
        overflowed = False
        keepalive = _KeepAlive(loop, self._tick, self._keepalive)
        try:
            while True:
                if self._ending is not None:
                    yield self._ending
                    return
                if self._notices:
                    keepalive.active_at = loop.time()
                    self._idle = False
                    yield self._notices.popleft()
                    continue
                waiter = self._waiter
                # catching up: the next batch once the last is sent; then whenever something was written
                if reading and (waiter is None or waiter.is_set() if caught_up else not buffered):
                    self._waiter = self._wait()  # taken before reading: a write after the read still wakes us
                    room = self._buffer - len(buffered)
                    limit = min(BATCH, room + 1) if caught_up else min(BATCH, self._buffer)
                    events = await self._read(self._cursor, limit)
                    if caught_up and len(events) > room:  # more than `buffer` not yet sent: the consumer is slow
                        del events[room:]
                        reading, overflowed = False, True
                        log.info("slow consumer: %d events buffered; closing the stream", self._buffer)
                    for record in events:
                        frame = self._frame(record)
                        self._cursor = frame.cursor
                        buffered.append(frame)
                        if self._follow_up is not None:
                            notice = self._follow_up(record)
                            if notice is not None:
                                buffered.append(notice)
                        reason = self._ends(record)
                        if reason is not None:
                            buffered.append(End(reason))
                            reading = False
                            break
                    if len(events) < limit:
                        caught_up = True
                    elif reading:
                        self._waiter.set()  # there may be more: read again before waiting
                    continue
                if buffered:
                    item = buffered.popleft()
                    if isinstance(item, Frame):
                        self.delivered = item.cursor  # handed to the transport, which writes it out
                        keepalive.active_at = loop.time()
                        self._idle = False  # a tick due is not: something goes out
                    yield item
                    if isinstance(item, End):
                        return
                    continue
                if overflowed:
                    yield Overflow(self.delivered, self._buffer)
                    return
                if self._idle:
                    self._idle = False
                    yield None  # a keep-alive tick
                    continue
                assert waiter is not None  # taken by the read above, which left nothing to send
                await waiter.wait()  # a write, `end`, a keep-alive tick or a notice
        finally:
            self._waiter = None
            keepalive.cancel()
