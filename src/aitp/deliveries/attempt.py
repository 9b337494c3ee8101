"""One attempt of a webhook delivery: the signed POST, what came of it, and when to try again.

Signed in the Standard Webhooks format by the `standardwebhooks` library: `webhook-id` (the delivery's id,
the same on every attempt), `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>` per
signing secret, space-separated while a rotated-out secret is in its grace period).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
from standardwebhooks import Webhook

from aitp.config import Settings
from aitp.errors import APIError
from aitp.services import webhooks
from aitp.services.destinations import tls_context
from aitp.store.webhooks import DeliveryRecord, EndpointRecord

MAX_BACKOFF = 3600.0  # seconds between two attempts at most (unless Retry-After asks for more)
MAX_RETRY_AFTER = 86_400.0  # a Retry-After beyond a day is read as a day
MAX_RESPONSE_BYTES = 64 << 10  # read of an answer's body (then the connection is dropped, not reused)
USER_AGENT = "aitp-webhooks/1"

log = logging.getLogger(__name__)


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


def http_client(connections: int) -> aiohttp.ClientSession:
    """The client of one endpoint's attempts, keeping up to `connections` connections for its next deliveries.

    aiohttp, not httpx (which the rest of the service uses): an attempt is the engine's whole work, and httpx
    spent ~830 us of CPU on each against aiohttp's ~160 us (bench/webhooks.py). One client per endpoint, not
    one for all, so no pool holds every endpoint's connections."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=connections, ssl=tls_context()),
        timeout=aiohttp.ClientTimeout(total=None),  # the attempt's own deadline (`send`) bounds it
        trust_env=False,  # no proxies or .netrc credentials from this process's environment
        auto_decompress=False,  # the answer's body is not read for its meaning: no inflating what a receiver sent
        skip_auto_headers=("Accept-Encoding",),
    )


async def send(
    client: aiohttp.ClientSession, endpoint: EndpointRecord, delivery: DeliveryRecord, settings: Settings
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
    url = str(target.url)
    try:
        async with asyncio.timeout(settings.webhook_timeout):
            request = client.post(
                url,
                data=delivery.body.encode(),
                headers=headers,
                allow_redirects=False,  # a redirect could lead anywhere the destination check never saw
                server_hostname=target.extensions.get("sni_hostname"),  # TLS names the host, not the address
            )
            async with request as response:
                read = 0
                async for chunk in response.content.iter_any():
                    read += len(chunk)
                    if read > MAX_RESPONSE_BYTES:
                        response.close()  # the rest is not read: the connection is dropped, not kept
                        break
                # a line per attempt would cost more CPU than the attempt's own HTTP: failures only, unless asked
                level = logging.DEBUG if 200 <= response.status < 300 else logging.INFO
                log.log(level, "webhook %s: POST %s %d", delivery.id, endpoint.url, response.status)
                return Answer(response.status, None, _retry_after(response.headers.get("retry-after"), at))
    except TimeoutError:
        failure = f"no answer within {settings.webhook_timeout:g} s"
    except aiohttp.ClientError as error:
        failure = f"{type(error).__name__}: {error}".replace(url, endpoint.url)  # the address pinned is ours
    log.info("webhook %s: POST %s failed: %s", delivery.id, endpoint.url, failure)
    return Answer(None, failure)


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
