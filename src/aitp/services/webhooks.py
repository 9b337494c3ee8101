"""Webhook endpoints: an actor's URLs that get its inbox events pushed to them, signed (the delivery itself is
`aitp.deliveries`'s). An actor manages its own; an admin key anyone's.

A destination must be an http(s) URL on a public address: private, loopback and link-local ones (the
operator's network, cloud metadata) are refused unless a prefix of `AITP_WEBHOOK_ALLOW` admits them, and a
prefix of `AITP_WEBHOOK_DENY` refuses wherever it points. Checked on registration and again before every
attempt (a name may resolve elsewhere later).

An endpoint takes the events of its `event_types` (all if none), and of new messages, by its `messages`: "all"
(its actor's own included), or "addressed": only those that ask its actor for work (`addressing.reaches` with
the "addressed" policy: messages naming it, and a person's naming no one), so a webhook agent that answers
what it gets does not answer another such agent forever.

A receiver's 4xx (but 408, 410, 429) refuses that event: with `on_client_error` "skip" (the default) the
delivery fails after `CLIENT_ERROR_ATTEMPTS` of them and its thread's next one goes; with "block" it is
retried as any failure, holding its thread back. A caller may cancel a pending delivery (its thread goes on),
and finished deliveries stay in the log for `webhook_retention_days`.

An endpoint's `ordering` "thread" (the default) sends a thread's events one at a time, in order; "none" sends
any due event (up to the engine's attempts at a time), so a receiver slow to answer does not hold a busy
thread back, and orders them itself if it must (by the event's cursor).
"""

from __future__ import annotations

import base64
import functools
import os
import time
from dataclasses import dataclass, replace

import httpx

from aitp.config import Settings
from aitp.errors import Conflict, InvalidRequest, NotFound, PermissionDenied
from aitp.events import payloads
from aitp.events.hub import Signal
from aitp.ids import new_id
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services import addressing, identities, inbox
from aitp.services.destinations import Pinned, addresses, is_allowed, is_public, parse_url, pinned
from aitp.store.records import EventRecord
from aitp.store.webhooks import (
    ClientErrorPolicy,
    DeliveryRecord,
    DeliveryStatus,
    EndpointMessages,
    EndpointOrdering,
    EndpointRecord,
    WebhookSecret,
)

MAX_ENDPOINTS_PER_ACTOR = 16
CLIENT_ERROR_ATTEMPTS = 3  # 4xx answers after which a delivery of a "skip" endpoint fails
RETRIED_CLIENT_ERRORS = frozenset({408, 429})  # timeout and rate limit: worth retrying whatever the policy
SECRET_BYTES = 24
MESSAGE_CREATED = "thread.message.created"


@dataclass(frozen=True)
class Unchanged:
    """A field a PATCH left out."""


UNCHANGED = Unchanged()


def changes(rt: Runtime) -> Signal:
    """Fired when endpoints or deliveries change through this process (an endpoint added, re-enabled, a delivery
    to make again), so the delivery engine looks at once; other processes' changes it finds by polling."""
    return Signal()


async def destination_refusal(url: str, settings: Settings) -> str | None:
    """Why `url` may not receive webhooks (None: it may). Raises 422 `invalid_url` for a URL that is not one.
    A host that does not resolve (yet) may be registered: each attempt resolves it again (`destination`)."""
    return (await _checked(url, settings))[2]


async def destination(url: str, settings: Settings) -> Pinned | str:
    """Where an attempt connects: the address just checked, pinned (see `Pinned`); or why it may not."""
    parsed, found, refusal = await _checked(url, settings)
    if refusal is not None:
        return refusal
    if not found:
        return f"{parsed.host} does not resolve."
    return pinned(parsed, found[0])


async def _checked(url: str, settings: Settings) -> tuple[httpx.URL, list[str], str | None]:
    """The URL read, the addresses its host stands for now, and why it may not be sent to (None: it may)."""
    parsed = _endpoint_url(url)
    denied = _denied(parsed, settings)  # before any lookup: a denied host is not even asked for
    if denied is not None:
        return parsed, [], denied
    found = await addresses(parsed)
    return parsed, found, _refusal(parsed, found, settings)


@functools.lru_cache(maxsize=4096)
def _endpoint_url(url: str) -> httpx.URL:
    """An endpoint's URL read once, not at every attempt (its parsing was ~8% of the engine's CPU under load)."""
    return parse_url(url, "delivered to")


def _denied(url: httpx.URL, settings: Settings) -> str | None:
    return f"{url} matches a prefix of AITP_WEBHOOK_DENY." if is_allowed(url, settings.webhook_deny) else None


def _refusal(url: httpx.URL, found: list[str], settings: Settings) -> str | None:
    if is_allowed(url, settings.webhook_allow):
        return None
    private = next((address for address in found if not is_public(address)), None)
    if private is not None:
        return f"{url.host} is a private, loopback or link-local address ({private}); AITP_WEBHOOK_ALLOW may admit it."
    return None


async def _check_destination(url: str, settings: Settings) -> None:
    refusal = await destination_refusal(url, settings)
    if refusal is not None:
        raise PermissionDenied(f"Webhooks may not be sent to this URL: {refusal}", param="url", code="url_not_allowed")


def new_secret() -> str:
    """A signing secret in the Standard Webhooks form."""
    return "whsec_" + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def _owner(principal: Principal, actor: str | None) -> str:
    if actor is None or actor == principal.actor:
        if principal.admin and actor is None:
            raise InvalidRequest("An admin key names the actor whose inbox the webhook follows.", param="actor")
        return principal.actor
    if not principal.admin:
        raise PermissionDenied("A key manages the webhooks of its own actor only.", param="actor")
    return actor


async def create_webhook(
    rt: Runtime,
    principal: Principal,
    url: str,
    *,
    event_types: list[str],
    messages: EndpointMessages = "all",
    on_client_error: ClientErrorPolicy = "skip",
    ordering: EndpointOrdering = "thread",
    description: str | None = None,
    actor: str | None = None,
    enabled: bool = True,
) -> EndpointRecord:
    """Register an endpoint following its actor's inbox from now on; its secret is in the returned record. A
    shop's customer has none (403 `customer_not_allowed`): its shop's page follows its threads for it."""
    identities.refuse_customer(principal, "register webhooks")
    owner = _owner(principal, actor)
    await _check_destination(url, rt.settings)
    endpoint = EndpointRecord(
        id=new_id("wh"),
        actor=owner,
        url=url,
        event_types=sorted(set(event_types)),
        enabled=enabled,
        secrets=[WebhookSecret(new_secret())],
        created_at=now(),
        cursor=await inbox.position(rt.store),
        description=description,
        messages=messages,
        on_client_error=on_client_error,
        ordering=ordering,
    )
    # the count and the insert are one step in the store: concurrent creations (any worker) keep the limit
    if not await rt.store.webhooks.create(endpoint, limit=MAX_ENDPOINTS_PER_ACTOR):
        raise InvalidRequest(
            f"An actor may have at most {MAX_ENDPOINTS_PER_ACTOR} webhooks.", param="url", code="too_many_webhooks"
        )
    rt.state(changes).fire()
    return endpoint


async def list_webhooks(rt: Runtime, principal: Principal) -> list[EndpointRecord]:
    return await rt.store.webhooks.of_actor(None if principal.admin else principal.actor)


async def get_webhook(rt: Runtime, principal: Principal, endpoint_id: str) -> EndpointRecord:
    """The endpoint, if the caller may manage it; 404 otherwise (another actor's endpoints are not shown)."""
    endpoint = await rt.store.webhooks.get(endpoint_id)
    if endpoint is None or not (principal.admin or endpoint.actor == principal.actor):
        raise NotFound(f"No webhook found with id '{endpoint_id}'.", param="webhook_id", code="webhook_not_found")
    return endpoint


async def update_webhook(
    rt: Runtime,
    principal: Principal,
    endpoint_id: str,
    *,
    url: str | Unchanged = UNCHANGED,
    event_types: list[str] | Unchanged = UNCHANGED,
    messages: EndpointMessages | Unchanged = UNCHANGED,
    on_client_error: ClientErrorPolicy | Unchanged = UNCHANGED,
    ordering: EndpointOrdering | Unchanged = UNCHANGED,
    enabled: bool | Unchanged = UNCHANGED,
    description: str | None | Unchanged = UNCHANGED,
) -> EndpointRecord:
    """Change what was given. Enabling an endpoint the service disabled clears why, and its failures so far."""
    endpoint = await get_webhook(rt, principal, endpoint_id)
    if not isinstance(url, Unchanged):
        await _check_destination(url, rt.settings)
        endpoint.url = url
    if not isinstance(event_types, Unchanged):
        endpoint.event_types = sorted(set(event_types))
    if not isinstance(messages, Unchanged):
        endpoint.messages = messages
    if not isinstance(on_client_error, Unchanged):
        endpoint.on_client_error = on_client_error
    if not isinstance(ordering, Unchanged):
        endpoint.ordering = ordering
    if not isinstance(description, Unchanged):
        endpoint.description = description
    if not isinstance(enabled, Unchanged):
        if enabled and not endpoint.enabled:
            endpoint.failing_since = endpoint.disabled_reason = None
        endpoint.enabled = enabled
    if not await rt.store.webhooks.update(endpoint):
        raise NotFound(f"No webhook found with id '{endpoint_id}'.", param="webhook_id", code="webhook_not_found")
    rt.state(changes).fire()
    return endpoint


async def rotate_secret(rt: Runtime, principal: Principal, endpoint_id: str) -> EndpointRecord:
    """A new current secret; the previous one still signs for `webhook_secret_grace_hours` (so a receiver can
    switch without losing a delivery). Older ones are dropped, in their grace period or not: a delivery
    carries two signatures at most, however often the secret is rotated."""
    endpoint = await get_webhook(rt, principal, endpoint_id)
    until = time.time() + rt.settings.webhook_secret_grace_hours * 3600
    endpoint.secrets = [WebhookSecret(new_secret()), replace(endpoint.secrets[0], expires_at=until)]
    if not await rt.store.webhooks.update(endpoint):
        raise NotFound(f"No webhook found with id '{endpoint_id}'.", param="webhook_id", code="webhook_not_found")
    return endpoint


def takes(endpoint: EndpointRecord, event: EventRecord) -> bool:
    """Whether an event of the endpoint's actor's inbox becomes a delivery to it (see the module's doc)."""
    if endpoint.event_types and event.type not in endpoint.event_types:
        return False
    if endpoint.messages == "all" or event.type != MESSAGE_CREATED:
        return True
    # a payload of before the neutral log is taken by no "addressed" endpoint: those stores had no webhooks,
    # and an endpoint follows its inbox from its creation on
    if payloads.written_before(event.data):
        return False
    return addressing.reaches(payloads.message_of(event.data), endpoint.actor, "addressed")


def skips(endpoint: EndpointRecord, status: int | None) -> bool:
    """Whether an answer of `status` refuses the event for good on this endpoint (a 4xx but 408 and 429, on
    an endpoint that skips what its receiver refuses): after `CLIENT_ERROR_ATTEMPTS` the delivery fails."""
    if endpoint.on_client_error != "skip" or status is None:
        return False
    return 400 <= status < 500 and status not in RETRIED_CLIENT_ERRORS


def signing_secrets(endpoint: EndpointRecord, at: float) -> list[str]:
    """The secrets that sign a delivery made at `at`: the current one and those still in their grace period."""
    return [s.secret for s in endpoint.secrets if s.expires_at is None or s.expires_at > at]


async def delete_webhook(rt: Runtime, principal: Principal, endpoint_id: str) -> None:
    await get_webhook(rt, principal, endpoint_id)
    if not await rt.store.webhooks.delete(endpoint_id):
        raise NotFound(f"No webhook found with id '{endpoint_id}'.", param="webhook_id", code="webhook_not_found")


def retained_since(settings: Settings, at: float) -> float:
    """The oldest creation time of a finished delivery still kept (the log shows no older one, pruned yet or
    not)."""
    return at - settings.webhook_retention_days * 86_400


async def list_deliveries(
    rt: Runtime,
    principal: Principal,
    endpoint_id: str,
    *,
    limit: int,
    before: str | None = None,
    status: DeliveryStatus | None = None,
) -> tuple[list[DeliveryRecord], bool]:
    """The endpoint's deliveries within the retention period, newest first, before the delivery `before` when
    given, of `status` when given; and whether there are more."""
    await get_webhook(rt, principal, endpoint_id)
    bound = None
    if before is not None:
        bound = (await _delivery(rt, endpoint_id, before, "before")).gid
    since = retained_since(rt.settings, time.time())
    found = await rt.store.webhooks.deliveries(endpoint_id, limit=limit + 1, before=bound, status=status, since=since)
    return found[:limit], len(found) > limit


async def _delivery(rt: Runtime, endpoint_id: str, delivery_id: str, param: str) -> DeliveryRecord:
    delivery = await rt.store.webhooks.get_delivery(delivery_id)
    if delivery is None or delivery.endpoint_id != endpoint_id:
        raise NotFound(f"No delivery found with id '{delivery_id}'.", param=param, code="delivery_not_found")
    return delivery


async def redeliver(rt: Runtime, principal: Principal, endpoint_id: str, delivery_id: str) -> DeliveryRecord:
    """Make a delivery again, now (its id unchanged, so a receiver that has it can tell)."""
    await get_webhook(rt, principal, endpoint_id)
    await _delivery(rt, endpoint_id, delivery_id, "delivery_id")
    again = await rt.store.webhooks.redeliver(delivery_id, time.time())
    if again is None:
        raise NotFound(f"No delivery found with id '{delivery_id}'.", param="delivery_id", code="delivery_not_found")
    rt.state(changes).fire()
    return again


async def cancel_delivery(rt: Runtime, principal: Principal, endpoint_id: str, delivery_id: str) -> DeliveryRecord:
    """Give up a pending delivery: it becomes `canceled` and its thread's next delivery may go (an attempt
    under way records nothing). 409 if it is not pending."""
    await get_webhook(rt, principal, endpoint_id)
    found = await _delivery(rt, endpoint_id, delivery_id, "delivery_id")
    canceled = await rt.store.webhooks.cancel(delivery_id)
    if canceled is None:
        status = (await rt.store.webhooks.get_delivery(delivery_id) or found).status
        raise Conflict(
            f"Delivery '{delivery_id}' is {status}: only a pending delivery may be canceled.",
            param="delivery_id",
            code="delivery_not_pending",
        )
    rt.state(changes).fire()
    return canceled
