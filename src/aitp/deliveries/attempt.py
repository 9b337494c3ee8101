"""One attempt of a webhook delivery: the signed POST, what came of it, and when to try again.

Signed in the Standard Webhooks format by the `standardwebhooks` library: `webhook-id` (the delivery's id,
the same on every attempt), `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>` per
signing secret, space-separated while a rotated-out secret is in its grace period).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from standardwebhooks import Webhook

from aitp.config import Settings
from aitp.errors import APIError
from aitp.services import webhooks
from aitp.store.webhooks import DeliveryRecord, EndpointRecord

MAX_BACKOFF = 3600.0  # seconds between two attempts at most (unless Retry-After asks for more)
MAX_RETRY_AFTER = 86_400.0  # a Retry-After beyond a day is read as a day
MAX_RESPONSE_BYTES = 64 << 10  # read of an answer's body (then the connection is dropped, not reused)
USER_AGENT = "aitp-webhooks/1"


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer (refused destination, timeout, connection error)
    error: str | None = None
    retry_after: float | None = None  # seconds the receiver asked to wait

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def signed_headers(secrets: list[str], message_id: str, at: float, body: str) -> dict[str, str]:
    """The Standard Webhooks headers of `body` sent as `message_id` at `at` (Unix seconds)."""
    timestamp = datetime.fromtimestamp(int(at), UTC)
    signatures = " ".join(Webhook(secret).sign(message_id, timestamp, body) for secret in secrets)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at)),
        "webhook-signature": signatures,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def http_client() -> httpx.AsyncClient:
    """The client every attempt of an engine shares (its connections are kept for the next delivery)."""
    return httpx.AsyncClient(
        follow_redirects=False,  # a redirect could lead anywhere the destination check never saw
        trust_env=False,  # no proxies or .netrc credentials from this process's environment
        # no pool-wide bound: each endpoint bounds its own attempts, so one slow endpoint never holds a
        # connection another needs
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=1000),
    )


async def send(
    client: httpx.AsyncClient, endpoint: EndpointRecord, delivery: DeliveryRecord, settings: Settings
) -> Answer:
    """POST the delivery's body to the endpoint, signed; never raises for what the receiver or the network did."""
    try:
        target = await webhooks.destination(endpoint.url, settings)
    except APIError as error:
        return Answer(None, error.message)
    if isinstance(target, str):
        return Answer(None, f"destination refused: {target}")
    at = time.time()
    headers = {
        **signed_headers(webhooks.signing_secrets(endpoint, at), delivery.id, at, delivery.body),
        **target.headers,
    }
    body = delivery.body.encode()
    try:
        async with asyncio.timeout(settings.webhook_timeout):
            request = client.stream("POST", target.url, content=body, headers=headers, extensions=target.extensions)
            async with request as response:
                read = 0
                async for chunk in response.aiter_raw():
                    read += len(chunk)
                    if read > MAX_RESPONSE_BYTES:
                        break
                return Answer(response.status_code, None, _retry_after(response.headers.get("retry-after"), at))
    except TimeoutError:
        return Answer(None, f"no answer within {settings.webhook_timeout:g} s")
    except httpx.HTTPError as error:
        return Answer(None, f"{type(error).__name__}: {error}")


def _retry_after(value: str | None, at: float) -> float | None:
    """A Retry-After header (seconds, or an HTTP date) as seconds from `at`."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when.timestamp() - at, 0.0), MAX_RETRY_AFTER)


def backoff(attempts: int, base: float, retry_after: float | None) -> float:
    """Seconds before the next attempt after `attempts` failed ones: exponential from `base`, capped, with
    jitter (so the retries of many deliveries do not land together); at least what Retry-After asked."""
    delay = min(base * 2 ** max(attempts - 1, 0), MAX_BACKOFF)
    jittered = delay * random.uniform(0.5, 1.0)
    return max(jittered, retry_after or 0.0)
