"""A2A agents standing in threads as actors: each actor with an Agent Card URL (`store.a2a`) has its inbox
sent there, and what the agent answers is posted into the thread as that actor.

- Reading: the actor's inbox is read from its cursor when the hub wakes that actor's inbox (an event in one
  of its threads, as for its inbox streams; other processes' through the tailer), or every `POLL` seconds;
  the messages that ask the agent for work (`services.addressing.reaches`, by its reply policy: by default
  messages naming it in `metadata.to`, and persons' messages naming no one) are sent, everything else is
  passed over. A write elsewhere wakes no agent's worker: only the look for new remote agents, which reads
  one list.
- At least once: one instance at a time delivers to an agent, the holder of its lease (a reservation in
  the idempotency store, scope `LEASE_SCOPE`, key the actor: atomic, and taken over once it runs out). The
  holder moves the cursor (`A2AStore.advance`, compare-and-set) past each message after sending it, and
  sends only while the lease outlasts one more attempt. An instance that dies leaves a lease that runs
  out; the next holder starts at the cursor, so the message under way when it died is sent again (A2A
  agents see the same messageId, the AITP message id, and can tell) and nothing is lost.
- Sending: one exchange per message, through the `Remote` the composition root hands in (the A2A face's,
  `aitp.bindings.a2a.outbound`, which speaks the protocol with the a2a-sdk; nothing here imports it): the
  message, the context and task it goes on in, and as extensions the capability schema URLs its author
  declared in the thread. The agent's answer (as AITP content) is posted through `services.messages`, so it
  is validated as any post is; a refusal is logged. An agent whose card cannot be had fails its messages at
  once (`CardUnavailable`, logged once by the face).
- Continuity, per agent and thread (`store.a2a` remote tasks, so another instance or a restart goes on):
  `contextId` is the thread's id, or the context id the agent gave back the first time. A task the agent
  leaves `input-required` (or `auth-required`) is remembered, and the next message sent to it in that thread
  carries its `taskId`; any other answer (a task completed, failed, canceled, rejected or still working, or
  a plain message) forgets it, so the next message starts a new task. A `taskId` the agent refuses (not
  found, or ended: `TaskRefused`) is forgotten and the message sent once more as a new task, within the same
  attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from aitp.errors import APIError
from aitp.events import payloads
from aitp.ids import new_id
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import inbox, presence
from aitp.services import messages as message_service
from aitp.services.addressing import ReplyPolicy, reaches
from aitp.services.requests import NewMessage
from aitp.store.a2a import A2AAgentRecord, RemoteTaskRecord
from aitp.store.base import EventRecord, MessageRecord
from aitp.store.idempotency import IdempotencyRecord
from aitp.tasks import cancel

log = logging.getLogger(__name__)

BATCH = 100  # inbox events claimed at once per agent
POLL = 1.0  # seconds between looks at the store for other instances' writes and new remote agents
CREATED = "thread.message.created"
LEASE_SCOPE = "aitp.a2a.deliveries"  # the idempotency store's scope of the agents' delivery leases


class CardUnavailable(Exception):
    """The agent's card could not be had, and why (the face remembers it for a while)."""


class TaskRefused(Exception):
    """The agent will not continue the task the message named (not found, or ended)."""


@dataclass
class Exchange:
    """What is sent to a remote agent: a thread's message, the context it goes on in, the task it continues
    (empty: a new one) and the capability schema URLs its author declared (its A2A extensions)."""

    message: MessageRecord
    context_id: str
    task_id: str = ""
    extensions: list[str] = field(default_factory=list)


@dataclass
class Answer:
    """What the agent answered: its content as an AITP message's (empty: nothing to post), and where it
    leaves its task (`waiting`: for input, so the next message continues it)."""

    content: list[Any]
    task_id: str = ""
    context_id: str = ""
    waiting: bool = False


class Remote(Protocol):
    """The protocol side of the remote agents (`aitp.bindings.a2a.outbound.RemoteAgents`)."""

    async def exchange(self, remote: A2AAgentRecord, sent: Exchange) -> Answer:
        """Send the message and read the answer; `CardUnavailable`, `TaskRefused`, or any error of the
        agent or the network."""

    async def forget(self, actor: str) -> None:
        """Drop what is kept for the actor's agent (its card no longer applies)."""

    async def close(self) -> None: ...


class A2ADeliveries:
    def __init__(self, rt: Runtime, remote: Remote) -> None:
        self.rt = rt
        self.remote = remote
        self.counters: dict[str, int] = {"sent": 0, "answered": 0, "failed": 0}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._pump: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._pump is None:
            self._pump = asyncio.create_task(self._follow(), name="aitp-a2a-deliveries")

    async def stop(self) -> None:
        await cancel([*self._workers.values(), self._pump])
        self._workers.clear()
        await self.remote.close()
        self._pump = None

    async def _follow(self) -> None:
        while True:
            written = self.rt.hub.any_event.waiter()  # taken before reading: nothing missed
            try:
                remotes = await self.rt.store.a2a.remotes()
            except Exception:  # a store hiccup must not end deliveries for good
                log.exception("a2a: reading the remote agents failed; retrying in 1s")
                await asyncio.sleep(1.0)
                continue
            for remote in remotes:  # a new one gets its worker; the others wake on their own inbox
                worker = self._workers.get(remote.actor)
                if worker is None or worker.done():
                    self._workers[remote.actor] = asyncio.create_task(self._work(remote.actor))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL):
                    await written.wait()

    async def _work(self, actor: str) -> None:
        """One agent's deliveries, one message at a time (a slow agent delays no other)."""
        with self.rt.hub.follow_inbox(actor) as inbox:
            while True:
                written = inbox.waiter()  # taken before reading: nothing missed
                try:
                    remote = await self.rt.store.a2a.get(actor)
                    if remote is None or remote.card_url is None:
                        await self.remote.forget(actor)
                        return
                    if await self._deliver(remote):
                        continue  # the lease ran short with messages left: take it again at once
                except Exception:
                    log.exception("a2a: delivering to %s failed; retrying in 1s", actor)
                    await asyncio.sleep(1.0)
                    continue
                with contextlib.suppress(TimeoutError):  # POLL: another instance's lease may have run out
                    async with asyncio.timeout(POLL):
                        await written.wait()

    @property
    def lease(self) -> float:
        """How long a lease is held: longer than an attempt can take (the webhooks' setting)."""
        settings = self.rt.settings
        return max(settings.webhook_lease_seconds, settings.webhook_timeout + 5.0)

    async def _deliver(self, remote: A2AAgentRecord) -> bool:
        """Deliver under the agent's lease; whether messages are left that it ran too short for."""
        now = time.time()
        token = new_id("lease")
        held = IdempotencyRecord(LEASE_SCOPE, remote.actor, LEASE_SCOPE, token, now, now + self.lease)
        if await self.rt.store.idempotency.claim(held, pending_timeout=self.lease) is not None:
            return False  # another instance delivers; this worker looks again within POLL
        try:
            return not await self._deliver_until(remote, now + self.lease - self.rt.settings.webhook_timeout - 5.0)
        finally:
            await self.rt.store.idempotency.release(LEASE_SCOPE, remote.actor, token)

    async def _deliver_until(self, remote: A2AAgentRecord, last_start: float) -> bool:
        """Send the actor's inbox from its cursor, starting no attempt after `last_start`; whether all was sent."""
        cursor = remote.cursor  # where the store's cursor is
        while True:
            events = await inbox.read(self.rt.store, remote.actor, cursor, BATCH)
            if not events:
                return True
            passed = cursor  # how far this batch was gone through
            for event in events:
                message = _to_send(event, remote.actor, cast(ReplyPolicy, remote.reply_policy))
                if message is not None:
                    if time.time() > last_start:
                        if passed != cursor:
                            await self.rt.store.a2a.advance(remote.actor, cursor, passed)
                        return False
                    await self._send(remote, message)
                passed = inbox.cursor_of(event)
                if message is not None:
                    if not await self.rt.store.a2a.advance(remote.actor, cursor, passed):
                        return True  # our lease ran out and another instance went on: it delivers now
                    cursor = passed
            if passed != cursor and not await self.rt.store.a2a.advance(remote.actor, cursor, passed):
                return True
            cursor = passed

    async def _send(self, remote: A2AAgentRecord, message: MessageRecord) -> None:
        try:
            async with asyncio.timeout(self.rt.settings.webhook_timeout):  # an attempt ends within the lease
                held = await self.rt.store.a2a.remote_task(remote.actor, message.thread_id)
                context_id = held.context_id if held is not None else message.thread_id
                task_id = (held.task_id or "") if held is not None else ""
                sent = Exchange(message, context_id, task_id, await self._declared(message))
                answer = await self._exchange(remote, sent, held)
        except CardUnavailable as error:  # logged once, when the card failed
            self.counters["failed"] += 1
            log.debug(
                "a2a: message %s not sent to %s: its card could not be read (%s)", message.id, remote.actor, error
            )
            await presence.note_a2a_call(self.rt, remote.actor, False)
            return
        except Exception as error:  # what the agent or the network did: logged, and the next message goes on
            self.counters["failed"] += 1
            log.warning("a2a: %s did not answer message %s: %s", remote.actor, message.id, error)
            await presence.note_a2a_call(self.rt, remote.actor, False)
            return
        await presence.note_a2a_call(self.rt, remote.actor, True)  # answered: reachable (services.presence)
        await self._remember(remote, message, held, context_id, answer)
        if not answer.content:
            return
        body = NewMessage(content=answer.content, metadata={"a2a_reply_to": message.id})
        try:
            await message_service.create_message(self.rt, Principal(actor=remote.actor), message.thread_id, body)
            self.counters["answered"] += 1
        except APIError as error:
            self.counters["failed"] += 1
            log.warning("a2a: the answer of %s to %s was refused: %s", remote.actor, message.id, error.message)

    async def _exchange(self, remote: A2AAgentRecord, sent: Exchange, held: RemoteTaskRecord | None) -> Answer:
        """Send the message and read the agent's answer; a task it will not continue is forgotten and the
        message sent once more as the first of a new task."""
        self.counters["sent"] += 1
        try:
            return await self.remote.exchange(remote, sent)
        except TaskRefused as error:
            if held is None:
                raise
            log.info(
                "a2a: %s would not continue task %s in thread %s (%s); message %s goes as a new task",
                remote.actor,
                sent.task_id,
                held.thread_id,
                error,
                sent.message.id,
            )
            held.task_id, held.updated_at = None, int(time.time())
            await self.rt.store.a2a.put_remote_task(held)
            sent.task_id = ""
            self.counters["sent"] += 1
            return await self.remote.exchange(remote, sent)

    async def _declared(self, message: MessageRecord) -> list[str]:
        """The capability schema URLs the message's author declared in its thread (the message's A2A
        extensions: what the agent's side of the task may send back)."""
        for actor in await self.rt.store.list_actors(message.thread_id):
            if actor.id == message.actor:
                return [d["schema"] for d in actor.capabilities if isinstance(d.get("schema"), str)]
        return []

    async def _remember(
        self,
        remote: A2AAgentRecord,
        message: MessageRecord,
        held: RemoteTaskRecord | None,
        context_id: str,
        answer: Answer,
    ) -> None:
        """Keep the task the agent waits in (and the context it gave the first time); forget any other."""
        waiting = answer.task_id if answer.waiting and answer.task_id else None
        if held is None:
            context_id = answer.context_id or context_id  # the agent's own context id, kept from now on
        elif held.task_id == waiting:
            return  # nothing changed: no write
        record = RemoteTaskRecord(remote.actor, message.thread_id, context_id, waiting, int(time.time()))
        await self.rt.store.a2a.put_remote_task(record)


def _to_send(event: EventRecord, actor: str, policy: ReplyPolicy) -> MessageRecord | None:
    """The message an inbox event brings the agent, if it asks the agent for work."""
    if event.type != CREATED or payloads.written_before(event.data):
        return None
    message = payloads.message_of(event.data)
    return message if reaches(message, actor, policy) else None
