"""A live event stream for one subscriber: replay from its cursor, then live, through a bounded buffer.

A pump task reads the store's event log from the cursor (through the hub) and fills a queue that the
transport (WebSocket or SSE) drains. While replaying, the pump waits for room: those events are in the
store, not in memory. Once caught up, a full queue means the consumer cannot keep up; the stream then
ends with `Overflow`, naming the cursor to resume from, so a slow consumer never grows server memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

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


Item = dict[str, Any] | End | Overflow | None  # None: keep-alive tick


Reader = Callable[[int, int], Awaitable[list[EventRecord]]]  # (cursor, limit) -> events after it


class EventStream:
    """Events after a cursor, then live. Iterate it; it ends with an `End` or `Overflow` item, or never."""

    def __init__(
        self,
        read: Reader,
        wait: Callable[[], asyncio.Event],
        cursor_of: Callable[[EventRecord], int],
        *,
        cursor: int,
        render_event: Callable[[EventRecord], dict[str, Any]] = render.event,
        ends: Callable[[EventRecord], str | None] = lambda _: None,
        buffer: int = DEFAULT_BUFFER,
        keepalive: float = KEEPALIVE_SECONDS,
    ) -> None:
        self._read = read
        self._wait = wait
        self._cursor_of = cursor_of
        self._cursor = cursor
        self._render = render_event
        self._ends = ends
        self._buffer = buffer
        self._keepalive = keepalive
        self.delivered = cursor  # cursor of the last event handed to the transport
        self._overflowed = False

    async def __aiter__(self) -> AsyncIterator[Item]:
        queue: asyncio.Queue[Item] = asyncio.Queue(maxsize=self._buffer)
        pump = asyncio.create_task(self._pump(queue))
        try:
            while True:
                if self._overflowed and queue.empty():
                    yield Overflow(self.delivered, self._buffer)
                    return
                try:
                    item = await asyncio.wait_for(queue.get(), self._keepalive)
                except TimeoutError:
                    if pump.done():
                        pump.result()  # re-raise what ended it
                    yield None
                    continue
                if isinstance(item, dict):
                    self.delivered = item["_cursor"]  # handed to the transport, which writes it out
                yield item
                if isinstance(item, End):
                    return
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    async def _pump(self, queue: asyncio.Queue[Item]) -> None:
        live = False
        while True:
            waiter = self._wait()  # taken before reading: a write after the read still wakes us
            events = await self._read(self._cursor, BATCH)
            for record in events:
                self._cursor = self._cursor_of(record)
                item = {**self._render(record), "_cursor": self._cursor}
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
