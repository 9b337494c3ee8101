"""A live event stream for one subscriber: replay from its cursor, then live, through a bounded buffer.

Replay is pulled page by page as the transport takes the frames (`PAGE` events read at a time), so a
replaying stream holds one page, never the thread's log. Once caught up, a pump task reads the log after
each wake-up (through the hub) and fills a queue that the transport (WebSocket or SSE) drains. A full
queue then means the consumer cannot keep up; the stream ends with `Overflow`, naming the cursor to
resume from, so a slow consumer never grows server memory.

A stream also ends from outside (`EventStream.end`): its key was revoked, or its client left.

Events travel as `Frame`s: the wire JSON of an event, rendered once by the binding that serves the stream
(its `Render`). A thread's feed hands the same Frame to every live subscriber of that binding
(`ThreadFeed.frames`), so a thousand subscribers cost one serialisation. How a stream's end reaches the
client (a WebSocket close code, an SSE end frame) is the binding's too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import orjson

from aitp.store.base import EventRecord
from aitp.tasks import cancel

log = logging.getLogger(__name__)

BATCH = 500  # events read at once by a live stream's pump
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


def frame_of(render_event: Callable[[EventRecord], dict[str, Any]], cursor_of: Callable[[EventRecord], int]) -> Render:
    """A function rendering a record to its Frame (one serialisation per call)."""

    def frame(record: EventRecord) -> Frame:
        return Frame(cursor_of(record), record.type, orjson.dumps(render_event(record)).decode())

    return frame


Item = Frame | End | Overflow | None  # None: keep-alive tick


Reader = Callable[[int, int], Awaitable[list[EventRecord]]]  # (cursor, limit) -> events after it


class Waiter(Protocol):
    """Taken before reading; `wait()` returns once something may have been written since (events.hub.Wakeup)."""

    async def wait(self) -> Any: ...


class _KeepAlive:
    """Puts a keep-alive tick (None) on `queue` when nothing went out for `interval` seconds: one timer per
    stream, re-armed every `interval`, rather than a timeout around every wait (a timer per event)."""

    __slots__ = ("_loop", "_queue", "_interval", "active_at", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Item], interval: float) -> None:
        self._loop = loop
        self._queue = queue
        self._interval = interval
        self.active_at = loop.time()  # when the transport last got something
        self._timer = loop.call_at(self.active_at + interval, self._tick)

    def _tick(self) -> None:
        now = self._loop.time()
        if now >= self.active_at + self._interval:
            if self._queue.empty():
                self._queue.put_nowait(None)
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
        self._overflowed = False
        self._ending: End | None = None  # set by `end`
        self._queue: asyncio.Queue[Item] | None = None  # while live: what the pump has read, for the consumer

    def end(self, reason: str, revoked: bool = False) -> None:
        """End the stream from outside: the next item is `End(reason, revoked)`, whatever is still buffered."""
        if self._ending is None:
            self._ending = End(reason, revoked)
            self._wake()

    def _wake(self, _: object = None) -> None:
        """Wake the consumer if it waits for the live queue (when the queue is full it is not waiting: it
        looks at the stream's state before it waits again)."""
        queue = self._queue
        if queue is not None and not queue.full():
            queue.put_nowait(None)

    async def __aiter__(self) -> AsyncIterator[Item]:
        # Replay: one page at a time, read when the transport has taken the previous one.
        while self._ending is None:
            page = await self._replay(self._cursor, PAGE)
            caught_up = len(page) < PAGE
            for record in page:
                if self._ending is not None:
                    break
                item = self._frame(record)
                self._cursor = self.delivered = item.cursor
                yield item
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

        # Live: the pump fills the queue after each wake-up; this drains it.
        loop = asyncio.get_running_loop()
        queue = self._queue = asyncio.Queue(maxsize=self._buffer)
        pump = asyncio.create_task(self._pump(queue))
        pump.add_done_callback(self._wake)  # a pump that dies wakes the consumer, which re-raises what ended it
        keepalive = _KeepAlive(loop, queue, self._keepalive)
        try:
            while True:
                if self._ending is not None:
                    yield self._ending
                    return
                if queue.empty():
                    if self._overflowed:
                        yield Overflow(self.delivered, self._buffer)
                        return
                    if pump.done():
                        pump.result()  # re-raise what ended it
                        return
                    item = await queue.get()
                    if self._ending is not None:
                        continue
                else:
                    item = queue.get_nowait()
                if isinstance(item, Frame):
                    self.delivered = item.cursor  # handed to the transport, which writes it out
                    keepalive.active_at = loop.time()
                elif item is None and pump.done() and queue.empty() and not self._overflowed:
                    pump.result()  # the pump's wake-up on dying, not a keep-alive tick
                    return
                yield item
                if isinstance(item, End):
                    return
        finally:
            self._queue = None
            keepalive.cancel()
            if not pump.done():  # one that ended has been re-raised above, if it failed
                await cancel([pump])

    async def _pump(self, queue: asyncio.Queue[Item]) -> None:
        live = False  # still catching up with what was written while the replay ended
        while True:
            waiter = self._wait()  # taken before reading: a write after the read still wakes us
            events = await self._read(self._cursor, BATCH)
            for record in events:
                item = self._frame(record)
                self._cursor = item.cursor
                if not live:
                    await queue.put(item)
                else:
                    try:
                        queue.put_nowait(item)
                    except asyncio.QueueFull:
                        # What is buffered still goes out, then the stream ends naming the cursor to resume from.
                        self._overflowed = True
                        log.info("slow consumer: %d events buffered; closing the stream", self._buffer)
                        return
                reason = self._ends(record)
                if reason is not None:
                    await queue.put(End(reason))
                    return
            if len(events) < BATCH:
                live = True
                await waiter.wait()
