"""`Agent`: the inbox loop every agent writes, with handlers chosen by capability message type.

    agent = Agent(client, capabilities=[DECISIONS])  # declared in every thread the agent joins

    @agent.on("request_decision")
    async def choose(incoming: Incoming) -> None:
        first = incoming.payload["options"][0]
        await incoming.reply({"$schema": DECISIONS, "decision": {
            "request_decision_id": incoming.payload["id"], "options": [{"id": first["id"]}]}})

    await agent.run()

Events are handled one at a time, in inbox order. Messages the agent wrote itself are skipped. A refusal
(`AitpError`) raised by a handler is logged and the loop goes on; any other exception ends `run`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from aitp.bindings.openai_threads.models import InboxEvent, Message, SchemaDeclaration
from aitp.client._client import AitpClient
from aitp.client._content import MessageContent
from aitp.client._errors import AitpError
from aitp.client._payloads import CapabilityPayload, capability_payloads, plain_text
from aitp.client._stream import Reconnect

log = logging.getLogger("aitp.agent")

# events that may add the agent to a thread: its declarations are checked then
JOINS = frozenset({"thread.created", "thread.actor.joined"})

H = TypeVar("H", bound=Callable[..., Awaitable[object]])


@dataclass
class Incoming:
    """A message another actor posted, with the capability message its handler was chosen for
    (`part`; None for a text handler)."""

    agent: Agent
    event: InboxEvent
    message: Message
    part: CapabilityPayload | None
    _replies: int = field(default=0, repr=False)

    @property
    def thread_id(self) -> str:
        return self.message.thread_id

    @property
    def sender(self) -> str:
        """The actor that wrote the message."""
        return self.message.metadata["actor"]

    @property
    def payload(self) -> Any:
        """The capability message's value under its type (`request_decision`, `quote`, ...); None for text."""
        return self.part.payload if self.part is not None else None

    @property
    def text(self) -> str:
        """The message's plain text parts."""
        return plain_text(self.message)

    def timestamp(self, later: timedelta = timedelta(0)) -> str:
        """The message's creation time plus `later`, as AITP payloads write times (`2025-02-25T08:32:15Z`):
        a time a reply can carry and still be the same when the event is handled again."""
        return (datetime.fromtimestamp(self.message.created_at, UTC) + later).strftime("%Y-%m-%dT%H:%M:%SZ")

    async def reply(self, content: MessageContent, *, metadata: dict[str, str] | None = None) -> Message:
        """Post `content` in the thread, as `create_message` does, with an `Idempotency-Key` made of the message
        answered and the reply's number: handling the same event again (after a restart) posts nothing twice.
        So make a reply depend only on the event (ids derived from it, not random): a retry with other
        content under the same key is refused (422 `idempotency_key_reused`). Its `metadata.reply_to` names the
        message answered (so an A2A client's task that asked it gets this answer, whatever else is waiting)."""
        self._replies += 1
        where = self.part.index if self.part is not None else "text"
        key = f"aitp-reply:{self.message.id}:{where}:{self._replies}"
        metadata = {"reply_to": self.message.id, **(metadata or {})}
        return await self.agent.client.create_message(self.thread_id, content, metadata=metadata, idempotency_key=key)

    async def find(self, type: str, *, sender: str | None = None, **fields: Any) -> CapabilityPayload | None:
        """The newest `type` capability message of the thread (written by `sender`, if given) whose payload has
        these field values, e.g. `await incoming.find("quote", sender=me, quote_id=paid["quote_id"])`."""
        async for message in self.agent.client.iter_messages(self.thread_id, order="desc"):
            if sender is not None and message.metadata.get("actor") != sender:
                continue
            for found in capability_payloads(message):
                payload = found.payload
                if found.type != type or not isinstance(payload, dict):
                    continue
                if all(payload.get(k) == v for k, v in fields.items()):
                    return found
        return None


class Agent:
    """Follows the client's inbox and calls the handlers registered for what arrives.

    `capabilities` (schema URLs) are declared for the agent in every thread it joins, next to what it
    already declares there. With `cursor_file`, the position of the last event handled is written there
    after each event and `run` resumes after it.
    """

    def __init__(
        self,
        client: AitpClient,
        *,
        capabilities: list[str] | tuple[str, ...] = (),
        cursor_file: str | os.PathLike[str] | None = None,
        reconnect: Reconnect | None = None,
    ) -> None:
        self.client = client
        self.capabilities = list(capabilities)
        self.cursor_file = Path(cursor_file) if cursor_file is not None else None
        # ride out a server restart or an outage of several minutes before giving up
        self.reconnect = reconnect or Reconnect(max_attempts=120)
        self.actor: str | None = None  # learnt from `client.me()` on the first event
        self.cursor: int | None = None  # the inbox cursor of the last event handled
        self._types: dict[tuple[str | None, str], Callable[[Incoming], Awaitable[object]]] = {}
        self._text: list[Callable[[Incoming], Awaitable[object]]] = []
        self._events: dict[str, list[Callable[[InboxEvent], Awaitable[object]]]] = {}
        self._stopping = False

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

    # ---------------------------------------------------------------------------------- running

    def stop(self) -> None:
        """Make `run` return once the event being handled is done (an agent whose task is over)."""
        self._stopping = True

    async def run(self, after: int | None = None) -> None:
        """Handle every inbox event after cursor `after` (default: the one saved in `cursor_file`, else the
        inbox's end now, so history is not answered again), then live ones, until a handler calls `stop`."""
        identity = await self.client.me()
        self.actor = identity.id
        if after is None:
            after = self._saved_cursor()
        if after is None:
            after = identity.inbox_cursor
        self.cursor = after
        log.info("%s: following the inbox after cursor %d", self.actor, after)
        async with contextlib.aclosing(self.client.inbox(after=after, reconnect=self.reconnect)) as inbox:
            async for event in inbox:
                try:
                    await self.handle(event)
                except AitpError as error:  # refused (e.g. the thread went away meanwhile): the next may work
                    log.warning("thread %s: event %d: %s", event.thread_id, event.cursor, error)
                self._save_cursor(event.cursor)
                if self._stopping:
                    self._stopping = False
                    return

    async def handle(self, event: InboxEvent) -> None:
        """Call the handlers one inbox event asks for."""
        if self.actor is None:
            self.actor = (await self.client.me()).id
        for on_event in self._events.get(event.type, ()):
            await on_event(event)
        if event.type in JOINS and self.capabilities:
            await self._declare(event)
        elif event.type == "thread.message.created":
            message = Message.model_validate(event.data)
            if message.metadata.get("actor") != self.actor:
                await self._dispatch(event, message)

    async def _dispatch(self, event: InboxEvent, message: Message) -> None:
        for part in capability_payloads(message):
            if part.type is None:
                continue
            handler = self._types.get((part.capability, part.type)) or self._types.get((None, part.type))
            if handler is not None:
                await handler(Incoming(self, event, message, part))
        if self._text and plain_text(message):
            incoming = Incoming(self, event, message, None)
            for handler in self._text:
                await handler(incoming)

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
        if self.cursor_file is None or not self.cursor_file.exists():
            return None
        return int(self.cursor_file.read_text().strip())

    def _save_cursor(self, cursor: int) -> None:
        self.cursor = cursor
        if self.cursor_file is None:
            return
        # written whole or not at all: a crash mid-write must not leave a cursor that cannot be read
        partial = self.cursor_file.with_name(self.cursor_file.name + ".partial")
        partial.write_text(f"{cursor}\n")
        os.replace(partial, self.cursor_file)
