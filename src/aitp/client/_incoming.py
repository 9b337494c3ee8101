"""What an `Agent` hands its handlers: a message to answer (`Incoming`), or a thread it was brought into
(`Arrival`). Both reply idempotently, so an event handled again (a retry, a restart) posts nothing twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from aitp.bindings.openai_threads.models import Actor, InboxEvent, Message
from aitp.client._client import AitpClient
from aitp.client._content import MessageContent
from aitp.client._payloads import CapabilityPayload, capability_payloads, plain_text


class Agent(Protocol):
    """What a handler's context needs of its `aitp.client.Agent` (named so, without importing it back)."""

    client: AitpClient


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
        return _timestamp(self.message.created_at, later)

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


@dataclass
class Arrival:
    """The agent was brought into a thread another actor opened (a customer arrived): `creator` opened it,
    `actors` are its members as the event saw them."""

    agent: Agent
    event: InboxEvent
    creator: str
    actors: list[Actor]
    _replies: int = field(default=0, repr=False)

    @property
    def thread_id(self) -> str:
        return self.event.thread_id

    def timestamp(self, later: timedelta = timedelta(0)) -> str:
        """The event's time plus `later`, as AITP payloads write times: the same when the event is handled
        again."""
        return _timestamp(self.event.created_at, later)

    async def reply(self, content: MessageContent, *, metadata: dict[str, str] | None = None) -> Message:
        """Post `content` in the thread (a greeting, a first offer), with an `Idempotency-Key` made of the event
        and the reply's number: handling the arrival again posts nothing twice."""
        self._replies += 1
        key = f"aitp-arrival:{self.thread_id}:{self.event.seq}:{self._replies}"
        return await self.agent.client.create_message(self.thread_id, content, metadata=metadata, idempotency_key=key)


async def arrival(agent: Agent, event: InboxEvent, me: str) -> Arrival | None:
    """The arrival an event means for actor `me`: a thread created by another actor with `me` among its
    actors, or `me` added to another's thread; None for any other event (`me` creating or joining its own)."""
    if event.type == "thread.created":
        actors = [Actor.model_validate(a) for a in event.data.get("actors", [])]
    elif event.type == "thread.actor.joined" and event.data.get("id") == me:
        actors = (await agent.client.get_thread(event.thread_id)).actors  # who opened it, who else is there
    else:
        return None
    creator = next((a.id for a in actors if a.role == "user"), "")
    if creator == me or not any(a.id == me for a in actors):
        return None
    return Arrival(agent, event, creator, actors)


def _timestamp(created_at: int, later: timedelta) -> str:
    return (datetime.fromtimestamp(created_at, UTC) + later).strftime("%Y-%m-%dT%H:%M:%SZ")
