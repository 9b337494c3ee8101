"""Sign-in without an admin: an actor proves who it is by signing a single-use challenge, and gets an API key.

1. `challenge(actor)`: a nonce of 32 bytes (its expiry in the first 8, so a late one is told apart from an
   unknown one after the store has forgotten it), kept as a one-time code of purpose `auth_challenge`.
2. `token(actor, nonce, proof)`: the nonce is spent first (a failed proof spends it too: nothing can be tried
   twice against one nonce), then the proof is checked (`aitp.identity`):
   - a domain agent: a JWT signed with a key its host publishes at `/.well-known/aitp.json`
     (`services.well_known`: fetched under the SSRF policy, bounded, cached by its HTTP caching headers);
   - a NEAR account: a NEP-413 message signed with its key: an implicit account's id is its public key, a
     named account's key must be a full-access key of it (looked up through `near_rpc_url`).
   The actor becomes (or stays) a verified actor, and gets a key that expires after `sign_in_token_hours`.

Each step refuses with its own code: `invalid_nonce`, `nonce_expired`, `nonce_used`, and the proof's
(`key_not_published`, `bad_signature`, `claims_mismatch`, `proof_malformed`, `well_known_unreachable`,
`well_known_too_large`, `well_known_invalid`, `near_rpc_unreachable`). Attempts (challenges and tokens) are
rate limited per actor and per client address, in this process.

A one-time sign-in code (`POST /v1/sign-in`, `redeem_code`) is guarded the same way: the codes a client
address had refused are counted (`sign_in_code_failures_per_minute`), and past them it is answered 429
before its code is looked at. Only refusals count: a browser that signs in with good links is never held up.
"""

from __future__ import annotations

import base64
import binascii
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from aitp.auth import hash_key
from aitp.errors import InvalidRequest, PermissionDenied, RateLimited, Unauthenticated
from aitp.identity import (
    ProofRefused,
    full_access_key,
    implicit_account_of,
    is_near_implicit,
    kind_of,
    verify_domain_proof,
    verify_nep413,
)
from aitp.identity.names import name_key
from aitp.runtime import Runtime
from aitp.services import codes, keys
from aitp.services.destinations import tls_context
from aitp.services.rate_limit import PRUNE_ABOVE, RateLimiter, TokenBucket
from aitp.services.well_known import WellKnownCache
from aitp.store.codes import CodeRecord
from aitp.store.identities import IdentityRecord

CHALLENGE = "auth_challenge"
SPENT = "auth_challenge_spent"  # what is left of a nonce once spent, until it would have expired
NONCE_BYTES = 32  # NEP-413's nonce, as it is
EXPIRY_BYTES = 8


@dataclass(frozen=True)
class Challenge:
    actor: str
    kind: str
    nonce: str
    expires_at: int
    audience: str
    message: str  # what a NEAR account signs (NEP-413 `message`), `recipient` the audience
    recipient: str


@dataclass(frozen=True)
class SignedIn:
    key: keys.CreatedKey
    identity: IdentityRecord


class SignIns:
    """This process's sign-in state (`rt.state(SignIns)`): attempts per actor and per client address, and
    when it last deleted expired challenges."""

    def __init__(self, rt: Runtime) -> None:
        self.by_actor = RateLimiter()
        self.by_address = RateLimiter()
        self.code_failures = FailureLimiter()
        self.purged_at = 0.0


class FailureLimiter:
    """Refusals per client address: a token bucket per address that only a refusal takes from, and that is
    read (not taken from) before each attempt, so successes never count. `clock` is injectable."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def wait(self, address: str, rate: float, burst: int) -> float:
        """Seconds until `address` may try again (0.0: now)."""
        bucket = self._buckets.get(address)
        if rate <= 0 or bucket is None:
            return 0.0
        tokens = min(float(burst), bucket.tokens + (self.clock() - bucket.updated) * rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate

    def failed(self, address: str, rate: float, burst: int) -> None:
        """Count one refusal of `address`."""
        if rate <= 0:
            return
        now = self.clock()
        bucket = self._buckets.get(address)
        if bucket is None:
            if len(self._buckets) >= PRUNE_ABOVE:  # buckets full again say nothing: dropped
                self._buckets = {a: b for a, b in self._buckets.items() if b.full_at(rate, burst) > now}
            bucket = self._buckets[address] = TokenBucket(tokens=float(burst), updated=now)
        bucket.take(now, rate, burst)


async def redeem_code(rt: Runtime, code: str, address: str | None) -> keys.CreatedKey:
    """`codes.sign_in`, unless `address` had too many codes refused lately (429 `too_many_sign_in_attempts`
    with Retry-After, the code not looked at); a refusal (401) counts against `address`."""
    failures, per_minute = rt.state(SignIns).code_failures, rt.settings.sign_in_code_failures_per_minute
    rate, burst = per_minute / 60, max(1, int(per_minute))
    if address is not None and (wait := failures.wait(address, rate, burst)) > 0:
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(
            f"Rate limit reached for refused sign-in codes from here: {per_minute:g} per minute. "
            f"Retry after {retry_after} s.",
            retry_after=retry_after,
            code="too_many_sign_in_attempts",
        )
    try:
        return await codes.sign_in(rt, code)
    except Unauthenticated:
        if address is not None:
            failures.failed(address, rate, burst)
        raise


PURGE_EVERY = 10.0  # seconds between deletes of expired challenges: one write (an fsync) less per sign-in


def well_known_cache(rt: Runtime) -> WellKnownCache:
    """This process's cache of domain agents' key documents (`rt.state(well_known_cache)`)."""
    settings = rt.settings
    return WellKnownCache(
        settings.identity_allow, max_bytes=settings.identity_max_bytes, timeout=settings.identity_timeout
    )


def audience(rt: Runtime, request_origin: str) -> str:
    """Whom proofs are made for: the configured public URL, else the origin the request came to."""
    return rt.settings.public_url or request_origin.rstrip("/")


def message_for(audience: str, actor: str) -> str:
    return f"Sign in to {audience} as {actor}"


def _count(rt: Runtime, actor: str, address: str | None) -> None:
    """One sign-in attempt, counted against the actor and the client address (429 past either)."""
    sign_ins, settings = rt.state(SignIns), rt.settings
    counted = [(sign_ins.by_actor, actor, settings.sign_in_attempts_per_minute, f"as '{actor}'")]
    if address is not None:
        counted.append((sign_ins.by_address, address, settings.sign_in_address_attempts_per_minute, "from here"))
    for limiter, key, per_minute, whose in counted:
        limiter.check(
            key,
            per_minute / 60,
            max(1, int(per_minute)),
            limit=f"sign-in attempts {whose}: {per_minute:g} per minute",
            code="too_many_sign_in_attempts",
        )


def _kind(rt: Runtime, actor: str) -> str:
    """The kind of actor `actor` names, if it may sign in here (400 `invalid_actor_id`, 403 otherwise)."""
    kind = kind_of(actor)
    if kind == "local":
        raise InvalidRequest(
            f"'{actor[:100]}' is neither a host name (a domain agent: shop.example.com, shop.example.com/sales) "
            "nor a NEAR account (alice.near, or 64 hex characters): only this server's admin makes keys for "
            "other actors. Actor ids are lowercase.",
            param="actor",
            code="invalid_actor_id",
        )
    if kind not in rt.settings.sign_in_kinds:
        allowed = ", ".join(rt.settings.sign_in_kinds) or "none"
        raise PermissionDenied(
            f"This server does not let {kind} actors sign in by themselves (allowed: {allowed}); ask its admin.",
            param="actor",
            code="sign_in_not_allowed",
        )
    return kind


async def challenge(rt: Runtime, actor: str, request_origin: str, address: str | None) -> Challenge:
    """A single-use nonce for `actor` to sign, valid for `sign_in_challenge_seconds`."""
    _count(rt, actor, address)
    kind = _kind(rt, actor)
    now = time.time()
    expires_at = math.ceil(now + rt.settings.sign_in_challenge_seconds)
    raw = expires_at.to_bytes(EXPIRY_BYTES, "big") + secrets.token_bytes(NONCE_BYTES - EXPIRY_BYTES)
    nonce = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    sign_ins = rt.state(SignIns)
    if now - sign_ins.purged_at >= PURGE_EVERY:  # an expired nonce is refused whether or not it is deleted yet
        sign_ins.purged_at = now
        await rt.store.codes.purge(now)
    await rt.store.codes.create(_code(nonce, CHALLENGE, actor, now, expires_at))
    whom = audience(rt, request_origin)
    return Challenge(actor, kind, nonce, expires_at, whom, message_for(whom, actor), whom)


def _code(secret: str, purpose: str, actor: str, now: float, expires_at: float) -> CodeRecord:
    """A nonce (or what is left of a spent one) as a one-time code: no key made it."""
    return CodeRecord(
        hash=hash_key(secret),
        purpose=purpose,
        key_hash="",
        actor=actor,
        admin=False,
        created_at=now,
        expires_at=expires_at,
    )


def _nonce_bytes(nonce: str) -> bytes:
    refused = Unauthenticated("The nonce is not one this server gave.", param="nonce", code="invalid_nonce")
    try:
        raw = base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))
    except (binascii.Error, ValueError):
        raise refused from None
    if len(raw) != NONCE_BYTES:
        raise refused
    return raw


async def _spend(rt: Runtime, actor: str, nonce: str) -> bytes:
    """The nonce's bytes, spent: 401 `nonce_expired`, `nonce_used` or `invalid_nonce` unless it is `actor`'s
    and live."""
    raw = _nonce_bytes(nonce)
    now = time.time()
    record = await rt.store.codes.redeem(hash_key(nonce), CHALLENGE, now)
    if record is None:
        if int.from_bytes(raw[:EXPIRY_BYTES], "big") <= now:
            raise Unauthenticated(
                "The nonce has expired: ask for a new challenge.", param="nonce", code="nonce_expired"
            )
        if await rt.store.codes.find(hash_key(SPENT + nonce), SPENT, now):
            raise Unauthenticated(
                "The nonce was used already (each works once, a failed attempt included): ask for a new challenge.",
                param="nonce",
                code="nonce_used",
            )
        raise Unauthenticated("The nonce is not one this server gave.", param="nonce", code="invalid_nonce")
    await rt.store.codes.create(_code(SPENT + nonce, SPENT, actor, now, record.expires_at))
    if record.actor != actor:
        raise Unauthenticated("The nonce was given to another actor.", param="nonce", code="invalid_nonce")
    return raw


async def _key_id(rt: Runtime, kind: str, actor: str, proof: Any, nonce: str, raw: bytes, whom: str) -> str:
    """The id of the key `proof` was made with, once it is shown to be `actor`'s: ProofRefused otherwise."""
    if kind == "domain":
        if not isinstance(proof, str):
            raise ProofRefused("proof_malformed", "A domain agent's proof is a compact JWS (a string).")
        published = await rt.state(well_known_cache).keys(actor)
        return verify_domain_proof(proof, published, actor=actor, audience=whom, nonce=nonce)
    public_key = verify_nep413(proof, message=message_for(whom, actor), nonce=raw, recipient=whom)
    if is_near_implicit(actor):
        if implicit_account_of(public_key) != actor:
            raise ProofRefused("key_not_published", "The key that signed is not the implicit account's own key.")
        return public_key
    async with httpx.AsyncClient(trust_env=False, verify=tls_context()) as client:
        full = await full_access_key(
            rt.settings.near_rpc_url, actor, public_key, client=client, timeout=rt.settings.identity_timeout
        )
    if not full:
        raise ProofRefused("key_not_published", f"The key that signed is not a full-access key of {actor}.")
    return public_key


async def token(
    rt: Runtime,
    actor: str,
    nonce: str,
    proof: Any,
    request_origin: str,
    address: str | None,
) -> SignedIn:
    """An API key for `actor`, once `proof` shows it signed `nonce` (see the module's docstring): an actor's
    key as an admin makes one, without scopes (a scope such as capabilities:write is the admin's to give)."""
    _count(rt, actor, address)
    kind = _kind(rt, actor)
    raw = await _spend(rt, actor, nonce)
    try:
        key_id = await _key_id(rt, kind, actor, proof, nonce, raw, audience(rt, request_origin))
    except ProofRefused as refused:
        raise Unauthenticated(refused.message, param="proof", code=refused.code) from None
    now = int(time.time())
    new = IdentityRecord(actor, kind, now, contact_policy=rt.settings.contact_policy)
    identity = await rt.store.identities.proven(actor, kind, now, key_id, new=new)
    if not identity.name_key:  # a name set before identities existed: protected from now on
        profile = await rt.store.profiles.get(actor)
        if profile is not None and profile.display_name:
            await rt.store.identities.set_name_key(actor, name_key(profile.display_name))
    created = await keys.create_key(rt.store, actor, lifetime=rt.settings.sign_in_token_hours * 3600, known=True)
    return SignedIn(created, identity)
