"""API keys, and resolving one to the principal a request acts as.

A key belongs to one actor id, or is an admin key. Only a SHA-256 hash of each key is stored; keys
are 256-bit random tokens, so a fast hash is enough (no password stretching needed).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from aitp.errors import Unauthenticated
from aitp.principals import ADMIN_ACTOR, Principal, PrincipalCache
from aitp.store.base import Store

KEY_PREFIX = "aitp_"


EXPIRED = "This API key has expired: sign in again (or ask for a new key)."


def expired(expires_at: int | None) -> bool:
    """Whether a key with this `expires_at` is refused now."""
    return expires_at is not None and time.time() >= expires_at


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header, or raise 401."""
    if not authorization:
        raise Unauthenticated("Missing API key: send 'Authorization: Bearer <key>'.", code="missing_api_key")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Malformed Authorization header: expected 'Bearer <key>'.")
    return token.strip()


async def authenticate(
    store: Store, token: str, env_admin_key: str | None, cache: PrincipalCache | None = None
) -> Principal:
    """Resolve a bearer token to its principal (through `cache` when given), or raise 401."""
    return await authenticate_hash(store, hash_key(token), env_admin_key, cache)


async def authenticate_hash(
    store: Store, key_hash: str, env_admin_key: str | None, cache: PrincipalCache | None = None
) -> Principal:
    """As `authenticate`, for a key known by its hash (what a one-time code keeps of the key that made it)."""
    if env_admin_key is not None and hmac.compare_digest(key_hash.encode(), hash_key(env_admin_key).encode()):
        return Principal(actor=ADMIN_ACTOR, admin=True, key_id=None)

    async def load() -> Principal | None:
        record = await store.keys.find(key_hash)
        if record is None:
            return None
        if expired(record.expires_at):  # raised, not returned: an expired key is never remembered
            raise Unauthenticated(EXPIRED, code="expired_api_key")
        return Principal(actor=record.actor, admin=record.admin, key_id=record.id, scopes=frozenset(record.scopes))

    principal = await (load() if cache is None else cache.get(key_hash, load))
    if principal is None:
        raise Unauthenticated("Incorrect API key provided.")
    return principal
