"""Idempotent writes: a POST sent again with the same `Idempotency-Key` gets the first answer.

The first request with a key reserves it in the store (a pending record, unique per caller and key),
runs, and stores its response; a retry with the same request gets that response back without running
again. The rules only: the bindings keep each response as their face answered it (the HTTP faces:
`aitp.bindings.http.idempotency`, for routes and for posts over a WebSocket alike).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from aitp.errors import Conflict, InvalidRequest, Unprocessable
from aitp.principals import ADMIN_ACTOR, Principal
from aitp.runtime import Runtime
from aitp.store.idempotency import IdempotencyRecord

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# A reservation still pending after this long belongs to a request that crashed (requests take
# milliseconds), so a retry may take the key over rather than wait for the record to expire.
PENDING_TIMEOUT = 60.0


@dataclass(frozen=True)
class Reservation:
    """The key is ours: run the request, then `finish` (or `abandon`) it."""

    scope: str
    key: str
    token: str


@dataclass(frozen=True)
class Replay:
    """The key was used for this very request already: answer with its response."""

    status: int
    body: str


def scope_of(principal: Principal) -> str:
    """Keys are scoped per caller: its API key's id, or "admin" for the `AITP_ADMIN_KEY` token."""
    return principal.key_id or ADMIN_ACTOR


def checked_key(value: Any, param: str = HEADER) -> str:
    """The key if it is 1..255 printable ASCII characters, else 400 naming `param`."""
    if not (isinstance(value, str) and 1 <= len(value) <= MAX_KEY_LENGTH and value.isascii() and value.isprintable()):
        raise InvalidRequest(
            f"'{param}' must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
            param=param,
            code="invalid_idempotency_key",
        )
    return value


def fingerprint(method: str, path: str, body: bytes | Any) -> str:
    """What a key was used for: method, path and the SHA-256 of the body.

    A JSON body is hashed in a canonical form (sorted keys, no whitespace), so a retry that serialises
    the same request differently still matches; `body` may also be an already parsed JSON value."""
    if isinstance(body, bytes):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return f"{method} {path} sha256:{hashlib.sha256(body).hexdigest()}"
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return f"{method} {path} sha256:{hashlib.sha256(canonical).hexdigest()}"


async def begin(rt: Runtime, principal: Principal, key: str, request: str, param: str = HEADER) -> Reservation | Replay:
    """Reserve `key` for `request` (a `fingerprint`), or the response to replay.

    422 `idempotency_key_reused` if the key was used for another request; 409 `idempotency_key_in_use`
    while the first request with it still runs (retry shortly). Both name `param`, where the key came from."""
    now = time.time()
    claim = IdempotencyRecord(
        scope=scope_of(principal),
        key=key,
        fingerprint=request,
        token=uuid.uuid4().hex,
        created_at=now,
        expires_at=now + rt.settings.idempotency_ttl_hours * 3600,
    )
    held = await rt.store.idempotency.claim(claim, pending_timeout=PENDING_TIMEOUT)
    if held is None:
        return Reservation(claim.scope, key, claim.token)
    if held.fingerprint != request:
        raise Unprocessable(
            f"This {HEADER} was already used for another request ({held.fingerprint.split(' sha256:')[0]} "
            "with a different body, or another path); use a new key for a new request.",
            param=param,
            code="idempotency_key_reused",
        )
    if held.status is None or held.body is None:
        raise Conflict(
            f"A request with this {HEADER} is still being processed; retry shortly.",
            param=param,
            code="idempotency_key_in_use",
        )
    return Replay(held.status, held.body)


def is_final(status: int) -> bool:
    """Whether a response is kept for replay: every answer of a request that ran, 2xx and 4xx alike,
    but not 429 (it did not run) nor 5xx (it may not have finished): their retries run again."""
    return status < 500 and status != 429


async def finish(rt: Runtime, reservation: Reservation, status: int, body: str) -> None:
    """Keep the response for replays, or release the key if the request should run again."""
    if is_final(status):
        await rt.store.idempotency.complete(reservation.scope, reservation.key, reservation.token, status, body)
    else:
        await abandon(rt, reservation)


async def abandon(rt: Runtime, reservation: Reservation) -> None:
    """Release the key after a failure, so a retry runs the request again."""
    await rt.store.idempotency.release(reservation.scope, reservation.key, reservation.token)
