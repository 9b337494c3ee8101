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
- Sending: the card is fetched (and each URL checked against the webhooks' destination policy) once per
  `CARD_TTL`: at most `AITP_A2A_CARD_MAX_BYTES`, within `CARD_TIMEOUT`, no redirects. A card that cannot be
  had (too large, not a card, a refused address, an HTTP error, no answer) is logged once and not asked
  for again for `CARD_RETRY` seconds (or until the card URL changes): the messages meanwhile fail at once.
  Every request, the card's and the SDK's, goes to the address just checked for its origin, never to what
  the name resolves to when connecting (`destinations.PinnedTransport`: DNS rebinding), and reads at most
  `AITP_A2A_REPLY_MAX_BYTES` of the answer (a stream whole). The message goes with the SDK's client
  (`message/send`, or streaming when the card says so), with the credential the card's security scheme asks
  for (the SDK's `AuthInterceptor`), and as extensions the capability schema URLs its author declared in the
  thread. The agent's answer (its message, or its
  task's status message and artifacts) is posted through `services.messages`, so it is validated as any
  post is; a refusal is logged.
- Continuity, per agent and thread (`store.a2a` remote tasks, so another instance or a restart goes on):
  `contextId` is the thread's id, or the context id the agent gave back the first time. A task the agent
  leaves `input-required` (or `auth-required`) is remembered, and the next message sent to it in that thread
  carries its `taskId`; any other answer (a task completed, failed, canceled, rejected or still working, or
  a plain message) forgets it, so the next message starts a new task. A `taskId` the agent refuses (not
  found, or ended) is forgotten and the message sent once more as a new task, within the same attempt.
The translation both ways is the A2A face's (`to_a2a`, `from_a2a`), handed in by the composition root.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client
from a2a.types import AgentCard, Message, Part, SecurityScheme, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from aitp.errors import APIError
from aitp.events import payloads
from aitp.ids import new_id
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import inbox, webhooks
from aitp.services import messages as message_service
from aitp.services.addressing import ReplyPolicy, reaches
from aitp.services.destinations import Origin, PinnedTransport, origin, parse_url
from aitp.services.requests import NewMessage
from aitp.store.a2a import A2AAgentRecord, RemoteTaskRecord
from aitp.store.base import EventRecord, MessageRecord
from aitp.store.idempotency import IdempotencyRecord
from aitp.tasks import cancel

log = logging.getLogger(__name__)

BATCH = 100  # inbox events claimed at once per agent
POLL = 1.0  # seconds between looks at the store for other instances' writes and new remote agents
CARD_TTL = 300.0  # seconds a fetched Agent Card is used
CARD_RETRY = 60.0  # seconds a card that could not be had is not asked for again (unless its URL changes)
CARD_TIMEOUT = 5.0  # seconds a card may take to arrive (at most half the attempt's AITP_WEBHOOK_TIMEOUT)
PARSE_ON_LOOP = 1 << 20  # a card this long parses in ~ms on the event loop; a longer one (a raised limit) not
CREATED = "thread.message.created"
LEASE_SCOPE = "aitp.a2a.deliveries"  # the idempotency store's scope of the agents' delivery leases
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})  # continued
REFUSED_TASK = (TaskNotFoundError, UnsupportedOperationError)  # a taskId the agent will not continue

ToA2A = Callable[[MessageRecord, str], Message]  # (message, the remote actor) -> the A2A message it sends
FromA2A = Callable[[Message], list[Any]]  # an A2A message -> the content of the AITP message it posts


class CardUnavailable(Exception):
    """The agent's card could not be had, and why (remembered for `CARD_RETRY` seconds)."""


@dataclass
class Held:
    """What is kept of an agent's card until `until` (monotonic): the client made from it and the HTTP client
    pinned to its checked addresses, or why the card could not be had."""

    until: float
    card_url: str
    client: Client | None = None
    http: httpx.AsyncClient | None = None
    failure: str = ""


class A2ADeliveries:
    def __init__(self, rt: Runtime, to_a2a: ToA2A, from_a2a: FromA2A) -> None:
        self.rt = rt
        self.to_a2a = to_a2a
        self.from_a2a = from_a2a
        self.counters: dict[str, int] = {"sent": 0, "answered": 0, "failed": 0}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._held: dict[str, Held] = {}  # actor -> its card's client, or why there is none
        self._credentials: dict[str, dict[str, str]] = {}  # actor -> its credentials as last read
        self._pump: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._pump is None:
            self._pump = asyncio.create_task(self._follow(), name="aitp-a2a-deliveries")

    async def stop(self) -> None:
        await cancel([*self._workers.values(), self._pump])
        self._workers.clear()
        for actor in list(self._held):
            await self._drop(actor)
        self._credentials.clear()
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
                        await self._drop(actor)
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

    async def _client(self, remote: A2AAgentRecord) -> Client:
        """The SDK's client for the agent's card: the one made within `CARD_TTL`, else one made now; raises
        `CardUnavailable` for a card that could not be had within `CARD_RETRY`, or now."""
        assert remote.card_url is not None
        self._credentials[remote.actor] = remote.credentials  # read at each call: a change applies at once
        held = self._held.get(remote.actor)
        if held is not None and held.until > time.monotonic() and held.card_url == remote.card_url:
            if held.client is None:
                raise CardUnavailable(held.failure)
            return held.client
        await self._drop(remote.actor)
        settings = self.rt.settings
        pins: dict[Origin, str] = {}  # filled by the checks below, before any request goes out
        http = httpx.AsyncClient(
            transport=PinnedTransport(pins, settings.a2a_reply_max_bytes or settings.max_body_bytes),
            follow_redirects=False,  # a redirect could lead anywhere no check saw
            trust_env=False,
            timeout=settings.webhook_timeout,
        )
        try:
            await self._pin(remote.card_url, pins)
            card = await self._card(http, remote.card_url)
            for interface in card.supported_interfaces:  # those the client may use (JSON-RPC, the default)
                if interface.protocol_binding == TransportProtocol.JSONRPC:
                    await self._pin(interface.url, pins)
        except Exception as error:  # refused, too large, not a card, an HTTP error, no answer in time
            await http.aclose()
            failure = f"{type(error).__name__}: {error}"
            self._held[remote.actor] = Held(time.monotonic() + CARD_RETRY, remote.card_url, failure=failure)
            log.warning(
                "a2a: the Agent Card of %s could not be read (%s); not asked for again for %gs",
                remote.actor,
                failure,
                CARD_RETRY,
            )
            raise CardUnavailable(failure) from error
        config = ClientConfig(streaming=card.capabilities.streaming, httpx_client=http)
        credentials = HeldCredentials(card, lambda: self._credentials.get(remote.actor, {}))
        client = ClientFactory(config).create(card, [AuthInterceptor(credentials)])
        self._held[remote.actor] = Held(time.monotonic() + CARD_TTL, remote.card_url, client, http)
        return client

    async def _drop(self, actor: str) -> None:
        held = self._held.pop(actor, None)
        if held is not None and held.http is not None:
            await held.http.aclose()

    async def _pin(self, url: str, pins: dict[Origin, str]) -> None:
        """Check `url` against the destination policy and pin its origin to the address just checked."""
        target = await webhooks.destination(url, self.rt.settings)
        if isinstance(target, str):
            raise PermissionError(f"A2A agent URL refused: {target}")
        pins[origin(parse_url(url, "delivered to"))] = target.url.host

    async def _card(self, http: httpx.AsyncClient, url: str) -> AgentCard:
        """The card at `url`, read up to `AITP_A2A_CARD_MAX_BYTES` (a longer one is refused unread)."""
        limit = self.rt.settings.a2a_card_max_bytes
        body = bytearray()
        async with asyncio.timeout(min(CARD_TIMEOUT, self.rt.settings.webhook_timeout / 2)):
            async with http.stream("GET", url, headers={"accept": "application/json"}) as response:
                response.raise_for_status()
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    raise ValueError(f"the card is {length} bytes long; at most {limit} are read")
                async for chunk in response.aiter_raw():  # uncompressed: PinnedTransport asks for it so
                    body += chunk
                    if len(body) > limit:
                        raise ValueError(f"the card is over {limit} bytes long")
        if len(body) > PARSE_ON_LOOP:
            return await asyncio.to_thread(_parse_card, bytes(body))
        return _parse_card(bytes(body))

    async def _send(self, remote: A2AAgentRecord, message: MessageRecord) -> None:
        try:
            async with asyncio.timeout(self.rt.settings.webhook_timeout):  # an attempt ends within the lease
                client = await self._client(remote)
                held = await self.rt.store.a2a.remote_task(remote.actor, message.thread_id)
                sent = self.to_a2a(message, remote.actor)
                sent.context_id = held.context_id if held is not None else message.thread_id
                if held is not None and held.task_id:
                    sent.task_id = held.task_id
                sent.extensions.extend(await self._declared(message))
                events = await self._exchange(remote, client, sent, held)
        except CardUnavailable as error:  # logged once, when the card failed
            self.counters["failed"] += 1
            log.debug(
                "a2a: message %s not sent to %s: its card could not be read (%s)", message.id, remote.actor, error
            )
            return
        except Exception as error:  # what the agent or the network did: logged, and the next message goes on
            self.counters["failed"] += 1
            log.warning("a2a: %s did not answer message %s: %s", remote.actor, message.id, error)
            return
        await self._remember(remote, message, held, sent.context_id, events)
        parts = _answer(events)
        if not parts:
            return
        body = NewMessage(content=self.from_a2a(Message(parts=parts)), metadata={"a2a_reply_to": message.id})
        try:
            await message_service.create_message(self.rt, Principal(actor=remote.actor), message.thread_id, body)
            self.counters["answered"] += 1
        except APIError as error:
            self.counters["failed"] += 1
            log.warning("a2a: the answer of %s to %s was refused: %s", remote.actor, message.id, error.message)

    async def _exchange(
        self, remote: A2AAgentRecord, client: Client, sent: Message, held: RemoteTaskRecord | None
    ) -> list[StreamResponse]:
        """Send the message and read the agent's answer; a task it will not continue is forgotten and the
        message sent once more as the first of a new task."""
        self.counters["sent"] += 1
        try:
            return [event async for event in client.send_message(SendMessageRequest(message=sent))]
        except REFUSED_TASK as error:
            if not sent.task_id or held is None:
                raise
            log.info(
                "a2a: %s would not continue task %s in thread %s (%s); message %s goes as a new task",
                remote.actor,
                sent.task_id,
                held.thread_id,
                error,
                sent.message_id,
            )
            held.task_id, held.updated_at = None, int(time.time())
            await self.rt.store.a2a.put_remote_task(held)
            sent.ClearField("task_id")
            self.counters["sent"] += 1
            return [event async for event in client.send_message(SendMessageRequest(message=sent))]

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
        events: list[StreamResponse],
    ) -> None:
        """Keep the task the agent waits in (and the context it gave the first time); forget any other."""
        answered = _task_of(events)
        waiting = answered.task_id if answered.state in WAITING and answered.task_id else None
        if held is None:
            context_id = answered.context_id or context_id  # the agent's own context id, kept from now on
        elif held.task_id == waiting:
            return  # nothing changed: no write
        record = RemoteTaskRecord(remote.actor, message.thread_id, context_id, waiting, int(time.time()))
        await self.rt.store.a2a.put_remote_task(record)


class HeldCredentials(CredentialService):
    """The actor's credential for each of the card's security schemes it holds one for: a bearer token for
    HTTP bearer, OAuth2 and OpenID Connect schemes, an API key for an API key sent in a header (the kinds
    the SDK's `AuthInterceptor` sends). Read at each call, never logged."""

    def __init__(self, card: AgentCard, held: Callable[[], dict[str, str]]) -> None:
        self._schemes = dict(card.security_schemes)
        self._held = held

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        scheme = self._schemes.get(security_scheme_name)
        kind = None if scheme is None else credential_kind(scheme)
        return None if kind is None else self._held().get(kind)


def _parse_card(body: bytes) -> AgentCard:
    return parse_agent_card(json.loads(body))


def credential_kind(scheme: SecurityScheme) -> str | None:
    """Which kind of credential a security scheme takes, if one the SDK's `AuthInterceptor` can send."""
    if scheme.HasField("http_auth_security_scheme"):
        return "bearer" if scheme.http_auth_security_scheme.scheme.lower() == "bearer" else None
    if scheme.HasField("oauth2_security_scheme") or scheme.HasField("open_id_connect_security_scheme"):
        return "bearer"
    if scheme.HasField("api_key_security_scheme"):
        return "api_key" if scheme.api_key_security_scheme.location.lower() == "header" else None
    return None


def _to_send(event: EventRecord, actor: str, policy: ReplyPolicy) -> MessageRecord | None:
    """The message an inbox event brings the agent, if it asks the agent for work."""
    if event.type != CREATED or payloads.written_before(event.data):
        return None
    message = payloads.message_of(event.data)
    return message if reaches(message, actor, policy) else None


@dataclass
class Answered:
    """Where the agent's answer leaves its task (state None: it answered with a plain message)."""

    task_id: str = ""
    context_id: str = ""
    state: int | None = None  # a TaskState


def _task_of(events: list[StreamResponse]) -> Answered:
    answered = Answered()
    for event in events:
        if event.HasField("message"):
            answered = Answered(context_id=event.message.context_id or answered.context_id)
        elif event.HasField("task"):
            task = event.task
            answered = Answered(task.id, task.context_id, task.status.state)
        elif event.HasField("status_update"):
            update = event.status_update
            answered = Answered(update.task_id, update.context_id, update.status.state)
    return answered


def _answer(events: list[StreamResponse]) -> list[Part]:
    """The parts of an agent's answer: its message, or its task's artifacts and last status message."""
    parts: list[Part] = []
    status: list[Part] = []
    for event in events:
        if event.HasField("message"):
            parts.extend(event.message.parts)
        elif event.HasField("task"):
            for artifact in event.task.artifacts:
                parts.extend(artifact.parts)
            status = list(event.task.status.message.parts)
        elif event.HasField("artifact_update"):
            parts.extend(event.artifact_update.artifact.parts)
        elif event.HasField("status_update") and event.status_update.status.HasField("message"):
            status = list(event.status_update.status.message.parts)
    return parts + status
