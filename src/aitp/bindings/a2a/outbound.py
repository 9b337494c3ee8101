"""The A2A side of remote agents standing in threads (`aitp.deliveries.a2a`): one exchange with an agent
through the a2a-sdk's client, in the delivery's plain terms (`Exchange` in, `Answer` out).

- The card is fetched (and each URL checked against the webhooks' destination policy) once per `CARD_TTL`:
  at most `AITP_A2A_CARD_MAX_BYTES`, within `CARD_TIMEOUT`, no redirects. A card that cannot be had (too
  large, not a card, a refused address, an HTTP error, no answer) is logged once and not asked for again for
  `CARD_RETRY` seconds (or until the card URL changes): the messages meanwhile fail at once
  (`CardUnavailable`).
- Every request, the card's and the SDK's, goes to the address just checked for its origin, never to what the
  name resolves to when connecting (`destinations.PinnedTransport`: DNS rebinding), and reads at most
  `AITP_A2A_REPLY_MAX_BYTES` of the answer (a stream whole).
- The message goes with the SDK's client (`message/send`, or streaming when the card says so), with the
  credential the card's security scheme asks for (the SDK's `AuthInterceptor`). A `taskId` the agent will not
  continue (task not found, or ended) is `TaskRefused`. The answer (its message, or its task's artifacts and
  last status message) comes back as AITP content (`parts`), with where it leaves the agent's task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client
from a2a.types import AgentCard, Message, Part, SecurityScheme, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from aitp.bindings.a2a.parts import aitp_content, outgoing
from aitp.deliveries.a2a import Answer, CardUnavailable, Exchange, TaskRefused
from aitp.runtime import Runtime
from aitp.services import webhooks
from aitp.services.destinations import Origin, PinnedTransport, origin, parse_url
from aitp.store.a2a import A2AAgentRecord

log = logging.getLogger(__name__)

CARD_TTL = 300.0  # seconds a fetched Agent Card is used
CARD_RETRY = 60.0  # seconds a card that could not be had is not asked for again (unless its URL changes)
CARD_TIMEOUT = 5.0  # seconds a card may take to arrive (at most half the attempt's AITP_WEBHOOK_TIMEOUT)
PARSE_ON_LOOP = 1 << 20  # a card this long parses in ~ms on the event loop; a longer one (a raised limit) not
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})  # continued
REFUSED_TASK = (TaskNotFoundError, UnsupportedOperationError)  # a taskId the agent will not continue


@dataclass
class Held:
    """What is kept of an agent's card until `until` (monotonic): the client made from it and the HTTP client
    pinned to its checked addresses, or why the card could not be had."""

    until: float
    card_url: str
    client: Client | None = None
    http: httpx.AsyncClient | None = None
    failure: str = ""


class RemoteAgents:
    """The SDK's clients of the remote agents, one per card, kept `CARD_TTL` (`aitp.deliveries.a2a.Remote`)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._held: dict[str, Held] = {}  # actor -> its card's client, or why there is none
        self._credentials: dict[str, dict[str, str]] = {}  # actor -> its credentials as last read

    async def exchange(self, remote: A2AAgentRecord, sent: Exchange) -> Answer:
        client = await self._client(remote)
        message = outgoing(sent.message, remote.actor)
        message.context_id = sent.context_id
        if sent.task_id:
            message.task_id = sent.task_id
        message.extensions.extend(sent.extensions)
        try:
            events = [event async for event in client.send_message(SendMessageRequest(message=message))]
        except REFUSED_TASK as error:
            if sent.task_id:
                raise TaskRefused(str(error)) from error
            raise
        task_id, context_id, state = _task_of(events)
        parts = _answer(events)
        return Answer(
            content=aitp_content(Message(parts=parts)) if parts else [],
            task_id=task_id,
            context_id=context_id,
            waiting=state in WAITING,
        )

    async def forget(self, actor: str) -> None:
        held = self._held.pop(actor, None)
        if held is not None and held.http is not None:
            await held.http.aclose()

    async def close(self) -> None:
        for actor in list(self._held):
            await self.forget(actor)
        self._credentials.clear()

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
        await self.forget(remote.actor)
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


def _task_of(events: list[StreamResponse]) -> tuple[str, str, int | None]:
    """(task id, context id, TaskState) where the agent's answer leaves its task (state None: it answered with
    a plain message)."""
    task_id, context_id, state = "", "", None
    for event in events:
        if event.HasField("message"):
            task_id, context_id, state = "", event.message.context_id or context_id, None
        elif event.HasField("task"):
            task = event.task
            task_id, context_id, state = task.id, task.context_id, task.status.state
        elif event.HasField("status_update"):
            update = event.status_update
            task_id, context_id, state = update.task_id, update.context_id, update.status.state
    return task_id, context_id, state


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
