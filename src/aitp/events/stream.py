"""A live event stream for one subscriber: replay from its cursor, then live, through a bounded buffer.

A pump task reads the store's event log from the cursor (through the hub) and fills a queue that the
transport (WebSocket or SSE) drains. While replaying, the pump waits for room: those events are in the
store, not in memory. Once caught up, a full queue means the consumer cannot keep up; the stream then
ends with `Overflow`, naming the cursor to resume from, so a slow consumer never grows server memory.

Events travel as `Frame`s: the wire JSON of an event, rendered once. A thread's feed hands the same
Frame to every subscriber (`ThreadFeed.frame`), so a thousand subscribers cost one serialisation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import orjson

from aitp import render
from aitp.store.base import EventRecord

log = logging.getLogger(__name__)

BATCH = 500
DEFAULT_BUFFER = 1024
KEEPALIVE_SECONDS = 15.0

# WebSocket close codes (documented in the README)
CLOSE_NORMAL = 1000
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4403  # not a member (or no such thread): the same answer, as over HTTP
CLOSE_SLOW_CONSUMER = 4008


@dataclass(frozen=True)
class End:
    """The stream is over: the thread was deleted, or the subscriber was removed from it."""

    reason: str


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


def frame_of(
    render_event: Callable[[EventRecord], dict[str, Any]], cursor_of: Callable[[EventRecord], int]
) -> Callable[[EventRecord], Frame]:
    """A function rendering a record to its Frame (one serialisation per call)."""

    def frame(record: EventRecord) -> Frame:
        return Frame(cursor_of(record), record.type, orjson.dumps(render_event(record)).decode())

    return frame


Item = Frame | End | Overflow | None  # None: keep-alive tick


Reader = Callable[[int, int], Awaitable[list[EventRecord]]]  # (cursor, limit) -> events after it


class Waiter(Protocol):
    """Taken before reading; `wait()` returns once something may have been written since (events.hub.Wakeup)."""

    async def wait(self) -> Any: ...


class EventStream:
    """Events after a cursor, then live. Iterate it; it ends with an `End` or `Overflow` item, or never."""

    def __init__(
        self,
        read: Reader,
        wait: Callable[[], Waiter],
        cursor_of: Callable[[EventRecord], int],
        *,
        cursor: int,
        render_event: Callable[[EventRecord], dict[str, Any]] = render.event,
        ends: Callable[[EventRecord], str | None] = lambda _: None,
        buffer: int = DEFAULT_BUFFER,
        keepalive: float = KEEPALIVE_SECONDS,
        frame: Callable[[EventRecord], Frame] | None = None,
    ) -> None:
        self._read = read
        self._wait = wait
        self._cursor = cursor
        # `frame` (e.g. a thread feed's, shared by its subscribers) wins over rendering per stream
        self._frame: Callable[[EventRecord], Frame] = frame or frame_of(render_event, cursor_of)
        self._ends = ends
        self._buffer = buffer
        self._keepalive = keepalive
        self.delivered = cursor  # cursor of the last event handed to the transport
        self._overflowed = False

    async def __aiter__(self) -> AsyncIterator[Item]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Item] = asyncio.Queue(maxsize=self._buffer)
        pump = asyncio.create_task(self._pump(queue))
        # A pump that dies wakes the consumer (which then re-raises what ended it); when the queue is full
        # the consumer is not waiting, and finds the pump done once it has drained the queue.
        pump.add_done_callback(lambda _: None if queue.full() else queue.put_nowait(None))
        # Keep-alive ticks: one timer per stream, re-armed every `keepalive` seconds, rather than a timeout
        # around every wait (a timer per delivered event).
        active_at = loop.time()
        ticker: asyncio.TimerHandle | None = None

        def tick() -> None:
            nonlocal active_at, ticker
            now = loop.time()
            if now >= active_at + self._keepalive:
                if queue.empty():
                    queue.put_nowait(None)
                active_at = now
            ticker = loop.call_at(active_at + self._keepalive, tick)

        ticker = loop.call_at(active_at + self._keepalive, tick)
        try:
            while True:
                if queue.empty():
                    if self._overflowed:
                        yield Overflow(self.delivered, self._buffer)
                        return
                    if pump.done():
                        pump.result()  # re-raise what ended it
                        return
                    item = await queue.get()
                else:
                    item = queue.get_nowait()
                if isinstance(item, Frame):
                    self.delivered = item.cursor  # handed to the transport, which writes it out
                    active_at = loop.time()
                elif item is None and pump.done() and queue.empty() and not self._overflowed:
                    pump.result()  # the pump's wake-up on dying, not a keep-alive tick
                    return
                yield item
                if isinstance(item, End):
                    return
        finally:
            if ticker is not None:
                ticker.cancel()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    async def _pump(self, queue: asyncio.Queue[Item]) -> None:
        live = False
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
