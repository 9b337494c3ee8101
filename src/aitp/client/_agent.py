"""`Agent`: the inbox loop every agent writes, with handlers chosen by capability message type.

    agent = Agent(client, capabilities=[DECISIONS])  # declared in every thread the agent joins

    @agent.on_arrival
    async def greet(arrival: Arrival) -> None:  # a thread another actor opened with the agent in it
        await arrival.reply(f"Hello {arrival.creator}, what are you looking for?")

    @agent.on("request_decision")
    async def choose(incoming: Incoming) -> None:
        first = incoming.payload["options"][0]
        await incoming.reply({"$schema": DECISIONS, "decision": {
            "request_decision_id": incoming.payload["id"], "options": [{"id": first["id"]}]}})

    await agent.run()

Events are handled one at a time, in inbox order. Messages the agent wrote itself are skipped. While the
handlers of another actor's message run, the agent shows itself working on an answer in that thread (a typing
indicator for the people there: `AitpClient.working`, said again every `WORKING_EVERY` seconds, then `idle`);
`Agent(..., show_working=False)` does not.

An agent does not die of what one event does (as Slack Bolt's apps do not): a handler that raises is
logged with the event's thread and cursor, the `on_error` handlers are called, and the event is handled
again up to `attempts` times in all (a refusal, `AitpError` 4xx, once: it would be refused again), then
skipped; with a `cursor_file` the attempts are counted across restarts too (an event whose handling kills
the process is skipped after as many restarts). While the server cannot be
reached (it restarts, it is not up yet: connection errors, 502/503/504, 429) the same call is made again
with `reconnect`'s backoff, counted as no failure: replies are idempotent, so they arrive once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Literal, TypeVar

import httpx

from aitp.bindings.openai_threads.models import InboxEvent, Message, SchemaDeclaration
from aitp.client._client import AitpClient
from aitp.client._errors import AitpError
from aitp.client._incoming import Arrival, Incoming, arrival
from aitp.client._payloads import capability_payloads, plain_text
from aitp.client._stream import Reconnect

log = logging.getLogger("aitp.agent")

# events that may add the agent to a thread: its declarations are checked then
JOINS = frozenset({"thread.created", "thread.actor.joined"})
# answers that say the server cannot answer now, not that the request is wrong: the same call may work later
UNAVAILABLE = frozenset({429, 502, 503, 504})
RETRY_DELAY = 1.0  # seconds before a failed event is handled again, doubling with each failure
WORKING_EVERY = 10.0  # seconds between "working" said again while handlers run (it holds 15 s on the server)

H = TypeVar("H", bound=Callable[..., Awaitable[object]])
T = TypeVar("T")
ErrorHandler = Callable[[Exception, InboxEvent], Awaitable[object]]


def unreachable(error: BaseException) -> bool:
    """Whether `error` says the server could not be reached or could not answer now (down, restarting,
    overloaded), unlike a bug in a handler or a refusal of what it asked."""
    if isinstance(error, httpx.TransportError | ConnectionError):
        return True
    return isinstance(error, AitpError) and error.status in UNAVAILABLE


def refused(error: BaseException) -> bool:
    """Whether the server refused what a handler asked (4xx): asking again would be refused again."""
    return isinstance(error, AitpError) and error.status < 500 and error.status not in UNAVAILABLE


class Agent:
    """Follows the client's inbox and calls the handlers registered for what arrives.

    `capabilities` (schema URLs) are declared for the agent in every thread it joins, next to what it
    already declares there. With `cursor_file`, the position of the last event handled is written there
    after each event (and the attempts at the next one) and `run` resumes after it. An event
    whose handler fails is handled `attempts` times in all, then skipped (see the module's doc). With
    `show_working` (the default) the agent shows itself working on an answer while its handlers of a message run.
    """

    def __init__(
        self,
        client: AitpClient,
        *,
        capabilities: list[str] | tuple[str, ...] = (),
        cursor_file: str | os.PathLike[str] | None = None,
        reconnect: Reconnect | None = None,
        attempts: int = 3,
        show_working: bool = True,
    ) -> None:
        self.client = client
        self.show_working = show_working
        self.capabilities = list(capabilities)
        self.cursor_file = Path(cursor_file) if cursor_file is not None else None
        # ride out a server restart or an outage of several minutes before giving up
        self.reconnect = reconnect or Reconnect(max_attempts=120)
        self.attempts = max(attempts, 1)
        self.actor: str | None = None  # learnt from `client.me()` by `me()`, or when `run` starts
        self.cursor: int | None = None  # the inbox cursor of the last event handled
        self._types: dict[tuple[str | None, str], Callable[[Incoming], Awaitable[object]]] = {}
        self._text: list[Callable[[Incoming], Awaitable[object]]] = []
        self._events: dict[str, list[Callable[[InboxEvent], Awaitable[object]]]] = {}
        self._arrivals: list[Callable[[Arrival], Awaitable[object]]] = []
        self._errors: list[ErrorHandler] = []
        self._started: tuple[int, int] | None = None  # (cursor, attempts started) of the event being handled
        self._stopping = False
        self._saying: set[asyncio.Task[None]] = set()  # `idle` said on the side (`_working`)

    # ------------------------------------------------------------------------------ registering

    def on(self, type: str, *, capability: str | None = None) -> Callable[[H], H]:
        """Decorate the handler of other actors' capability messages of `type` (of `capability` only, if
        given; that one is preferred over a handler for any capability). It gets an `Incoming`."""

        def register(handler: H) -> H:
            self._types[(capability, type)] = handler
            return handler

        return register

    def on_text(self, handler: H) -> H:
        """Decorate a handler of other actors' messages that have plain text (capability parts or not; their
        handlers are called first)."""
        self._text.append(handler)
        return handler

    def on_event(self, type: str) -> Callable[[H], H]:
        """Decorate a handler of raw inbox events of `type` (e.g. `thread.message.refused`), whoever caused them."""

        def register(handler: H) -> H:
            self._events.setdefault(type, []).append(handler)
            return handler

        return register

    def on_arrival(self, handler: H) -> H:
        """Decorate a handler of the threads another actor brings the agent into (it opened one with the
        agent in it, or added the agent to one): a customer arrived. It gets an `Arrival` (`creator`,
        `actors`, `reply`)."""
        self._arrivals.append(handler)
        return handler

    def on_error(self, handler: H) -> H:
        """Decorate a handler of what another handler raised, `handler(error, event)`: called once the error is
        logged, before the event is handled again or skipped (to alert, count, or tell the other actor). What
        it raises itself is logged and goes no further."""
        self._errors.append(handler)
        return handler

    async def me(self) -> str:
        """The agent's actor id, asked of the server once (waiting for it, as `run` does): `actor` holds it
        from then on, so setup code may use it before `run`."""
        if self.actor is None:
            self.actor = (await self._when_reachable(self.client.me, "reading who the key acts as")).id
        return self.actor

    # ---------------------------------------------------------------------------------- running

    def stop(self) -> None:
        """Make `run` return once the event being handled is done (an agent whose task is over)."""
        self._stopping = True

    async def run(self, after: int | None = None) -> None:
        """Handle every inbox event after cursor `after` (default: the one saved in `cursor_file`, else the
        inbox's end now, so history is not answered again), then live ones, until a handler calls `stop`.
        A server not up yet is waited for (`reconnect`), as a restart later is."""
        identity = await self._when_reachable(self.client.me, "reading who the key acts as")
        self.actor = identity.id
        if after is None:
            after = self._saved_cursor()
        if after is None:
            after = identity.inbox_cursor
        self.cursor = after
        log.info("%s: following the inbox after cursor %d", self.actor, after)
        async with contextlib.aclosing(self.client.inbox(after=after, reconnect=self.reconnect)) as inbox:
            async for event in inbox:
                await self._handle_or_skip(event)
                self._save_cursor(event.cursor)
                if self._stopping:
                    self._stopping = False
                    return

    async def _handle_or_skip(self, event: InboxEvent) -> None:
        """`handle` the event until it succeeds, is refused, or `attempts` attempts were made (then skipped).
        Attempts are counted as they start, and kept in `cursor_file`: an event whose handling kills the
        process (not only one that raises) is skipped after as many restarts."""
        started = self._started[1] if self._started is not None and self._started[0] == event.cursor else 0
        where = f"thread {event.thread_id}: event {event.cursor} ({event.type})"
        while started < self.attempts:
            started += 1
            self._save_started(event.cursor, started)
            try:
                await self._when_reachable(lambda: self.handle(event), where)
                return
            except Exception as error:
                if refused(error):
                    log.warning("%s: refused: %s", where, error)
                else:
                    log.exception("%s: a handler failed (attempt %d of %d)", where, started, self.attempts)
                await self._report(error, event)
                if refused(error):
                    return
            if started < self.attempts:
                await asyncio.sleep(RETRY_DELAY * 2 ** (started - 1))
        log.error("%s: skipped after %d failed attempts", where, started)

    async def _report(self, error: Exception, event: InboxEvent) -> None:
        for on_error in self._errors:
            try:
                await on_error(error, event)
            except Exception:
                log.exception("thread %s: event %d: the error handler failed", event.thread_id, event.cursor)

    async def _when_reachable(self, call: Callable[[], Awaitable[T]], doing: str) -> T:
        """`call()`, made again while the server cannot be reached or answer (per `reconnect`'s backoff and
        attempts): the server restarting, or not started yet."""
        failed = 0
        while True:
            try:
                return await call()
            except Exception as error:
                if not unreachable(error) or failed >= self.reconnect.max_attempts:
                    raise
                failed += 1
                delay = min(self.reconnect.initial_delay * 2 ** (failed - 1), self.reconnect.max_delay)
                log.warning("%s: the server cannot answer now (%s); trying again in %.1f s", doing, error, delay)
                await asyncio.sleep(delay)

    async def handle(self, event: InboxEvent) -> None:
        """Call the handlers one inbox event asks for."""
        if self.actor is None:
            self.actor = (await self.client.me()).id
        for on_event in self._events.get(event.type, ()):
            await on_event(event)
        if event.type in JOINS:
            if self.capabilities:
                await self._declare(event)
            arrived = await arrival(self, event, self.actor) if self._arrivals else None
            if arrived is not None:
                for handler in self._arrivals:
                    await handler(arrived)
        elif event.type == "thread.message.created":
            message = Message.model_validate(event.data)
            if message.metadata.get("actor") != self.actor:
                await self._dispatch(event, message)

    async def _dispatch(self, event: InboxEvent, message: Message) -> None:
        calls: list[tuple[Callable[[Incoming], Awaitable[object]], Incoming]] = []
        for part in capability_payloads(message):
            if part.type is None:
                continue
            handler = self._types.get((part.capability, part.type)) or self._types.get((None, part.type))
            if handler is not None:
                calls.append((handler, Incoming(self, event, message, part)))
        if self._text and plain_text(message):
            incoming = Incoming(self, event, message, None)
            calls.extend((handler, incoming) for handler in self._text)
        if not calls:
            return
        async with self._working(event.thread_id):
            for handler, incoming in calls:
                await handler(incoming)

    @contextlib.asynccontextmanager
    async def _working(self, thread_id: str) -> AsyncIterator[None]:
        """Show the agent working in the thread while the block runs (said again every `WORKING_EVERY` s), then
        idle (its reply has ended it already, if it sent one). `working` is said before the handlers start, so
        it never lands after their reply; `idle` on the side, so the next event waits for nothing. What the
        server refuses (a rate limit) or cannot answer is left at that: `working` ends by itself."""
        if not self.show_working:
            yield
            return
        await self._say(thread_id, "working")
        refresh = asyncio.create_task(self._keep_working(thread_id))
        try:
            yield
        finally:
            refresh.cancel()
        idle = asyncio.create_task(self._say(thread_id, "idle"))
        self._saying.add(idle)  # the loop keeps only weak references to tasks
        idle.add_done_callback(self._saying.discard)

    async def _keep_working(self, thread_id: str) -> None:
        while True:
            await asyncio.sleep(WORKING_EVERY)
            await self._say(thread_id, "working")

    async def _say(self, thread_id: str, state: Literal["working", "idle"]) -> None:
        try:
            await self.client.set_activity(thread_id, state)
        except (AitpError, httpx.TransportError) as error:
            log.debug("thread %s: could not say %s: %s", thread_id, state, error)

    async def _declare(self, event: InboxEvent) -> None:
        """Add the agent's capabilities to its declarations in a thread it was just added to, if missing."""
        listed = event.data.get("actors", [event.data])  # a thread lists its actors; a join is one actor
        if self.actor is None or not any(a.get("id") == self.actor for a in listed):
            return
        # the thread as it is now, not as the event saw it: a replayed join may be old news
        me = next((a for a in await self.client.list_actors(event.thread_id) if a.id == self.actor), None)
        if me is None:
            return
        declared = [d.model_dump(by_alias=True) for d in me.capabilities]
        have = {d.schema_ for d in me.capabilities if isinstance(d, SchemaDeclaration)}
        missing = [c for c in self.capabilities if c not in have]
        if missing:
            await self.client.put_actor(event.thread_id, self.actor, capabilities=[*declared, *missing])
            log.info("thread %s: declared %s", event.thread_id, ", ".join(missing))

    # ---------------------------------------------------------------------------------- cursor

    def _saved_cursor(self) -> int | None:
        """The cursor saved in `cursor_file` (None without one), and the attempts of the event after it."""
        if self.cursor_file is None or not self.cursor_file.exists():
            return None
        cursor, *rest = self.cursor_file.read_text().split("\n")
        started = rest[0].split() if rest else []
        if len(started) == 3 and started[0] == "attempts":
            self._started = (int(started[1]), int(started[2]))
        return int(cursor.strip())

    def _save_cursor(self, cursor: int) -> None:
        self.cursor, self._started = cursor, None
        self._write(f"{cursor}\n")

    def _save_started(self, cursor: int, attempts: int) -> None:
        """Keep how many attempts the event at `cursor` has had, so a restart does not start its count again."""
        self._started = (cursor, attempts)
        if self.cursor is not None:
            self._write(f"{self.cursor}\nattempts {cursor} {attempts}\n")

    def _write(self, text: str) -> None:
        if self.cursor_file is None:
            return
        # written whole or not at all: a crash mid-write must not leave a cursor that cannot be read
        partial = self.cursor_file.with_name(self.cursor_file.name + ".partial")
        partial.write_text(text)
        os.replace(partial, self.cursor_file)
