"""One-time codes, so that an API key never has to travel in a URL: a WebSocket ticket (browsers cannot set
headers on a WebSocket) and a sign-in link (the web UI's link carries a code, not a key).

A code is a random secret handed out once; the store keeps only its hash, with the hash of the key that made
it. Redeeming deletes it (once, on any instance sharing the store) and checks that key again, so a code of a
revoked key is worth nothing. A ticket lives `TICKET_TTL` seconds and stands for its key; a sign-in code
lives up to `MAX_SIGN_IN_TTL` and, redeemed, mints a new key of the same actor and rights for the browser
that followed the link (revocable like any key, never the key that made the code, and refused after
`AITP_SIGN_IN_KEY_DAYS`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from aitp.auth import authenticate_hash, hash_key
from aitp.errors import InvalidRequest, PermissionDenied, Unauthenticated
from aitp.gate import Gate
from aitp.principals import ADMIN_ACTOR, Principal
from aitp.runtime import Runtime
from aitp.services import identities, keys
from aitp.store.base import Store
from aitp.store.codes import CodeRecord

WEBSOCKET = "websocket"
SIGN_IN = "sign_in"
TICKET_TTL = 30.0  # seconds: a ticket is for the connect that follows at once (and its reconnects fetch anew)
DEFAULT_SIGN_IN_TTL = 900.0
SERVE_LINK_TTL = 3600.0  # the admin link `aitp serve` prints
MAX_SIGN_IN_TTL = 7 * 24 * 3600.0
_PREFIXES = {WEBSOCKET: "aitpt_", SIGN_IN: "aitps_"}


@dataclass(frozen=True)
class IssuedCode:
    secret: str  # shown this once: the store keeps only its hash
    record: CodeRecord


async def issue(
    rt: Runtime,
    principal: Principal,
    key_hash: str,
    purpose: str,
    *,
    actor: str | None = None,
    ttl: float | None = None,
) -> IssuedCode:
    """A new code of `purpose` made by the caller's key (`key_hash`). A sign-in code is for the caller's own
    actor with its rights; an admin may make one for another `actor` (an ordinary key, no scopes). A shop's
    customer may make tickets, not sign-in codes (403 `customer_not_allowed`)."""
    if purpose != WEBSOCKET:  # a sign-in code mints a key that would outlive a customer's short session
        identities.refuse_customer(principal, "make sign-in links (its shop asks for its sessions)")
    if purpose == WEBSOCKET:
        ttl = TICKET_TTL
    elif ttl is None:
        ttl = DEFAULT_SIGN_IN_TTL
    elif not 60 <= ttl <= MAX_SIGN_IN_TTL:
        raise InvalidRequest(f"expires_in must be between 60 and {int(MAX_SIGN_IN_TTL)} seconds.", param="expires_in")
    return await _create(rt.store, principal, key_hash, purpose, actor, ttl)


async def admin_sign_in_code(store: Store, admin_key: str, ttl: float) -> str:
    """A sign-in code for the admin key `admin_key` (the link `aitp serve` prints)."""
    admin = Principal(actor=ADMIN_ACTOR, admin=True)
    return (await _create(store, admin, hash_key(admin_key), SIGN_IN, None, ttl)).secret


async def _create(
    store: Store, principal: Principal, key_hash: str, purpose: str, actor: str | None, ttl: float
) -> IssuedCode:
    for_other = actor is not None and actor != principal.actor
    if for_other and not principal.admin:
        raise PermissionDenied("Only an admin key may make a sign-in link for another actor.", param="actor")
    secret = _PREFIXES[purpose] + secrets.token_urlsafe(32)
    now = time.time()
    record = CodeRecord(
        hash=hash_key(secret),
        purpose=purpose,
        key_hash=key_hash,
        actor=actor if actor is not None and for_other else principal.actor,
        admin=False if for_other else principal.admin,
        scopes=[] if for_other else sorted(principal.scopes),
        created_at=now,
        expires_at=now + ttl,
    )
    await store.codes.purge(now)  # an indexed delete; MongoDB's TTL index does it too
    await store.codes.create(record)
    return IssuedCode(secret, record)


async def admit_ticket(rt: Runtime, ticket: str) -> tuple[Principal, str]:
    """The principal a WebSocket `ticket` stands for, and its key's hash; the connect counts as a request
    of that key (429). 401 when the ticket is unknown, used, expired, or its key revoked."""
    record = await rt.store.codes.redeem(hash_key(ticket), WEBSOCKET, time.time())
    if record is None:
        raise Unauthenticated(
            "The WebSocket ticket is unknown, expired or already used: get a new ticket for each connect.",
            code="invalid_ticket",
        )
    return await rt.state(Gate).admit_hash(record.key_hash), record.key_hash


async def sign_in(rt: Runtime, code: str) -> keys.CreatedKey:
    """Redeem a sign-in code: a new key of its actor (401 if the code is unknown, used or expired, or the key
    that made it was revoked)."""
    record = await rt.store.codes.redeem(hash_key(code), SIGN_IN, time.time())
    refused = Unauthenticated(
        "This sign-in link has expired or was already used; ask for a new one.", code="invalid_sign_in_code"
    )
    if record is None:
        raise refused
    try:
        await authenticate_hash(rt.store, record.key_hash, rt.settings.admin_key, rt.state(Gate).principals)
    except Unauthenticated:
        raise refused from None
    lifetime = rt.settings.sign_in_key_days * 86_400  # a browser's key: it ends, even if nobody signs out
    return await keys.create_key(
        rt.store,
        record.actor,
        admin=record.admin,
        scopes=record.scopes,
        lifetime=lifetime,
        contact_policy=rt.settings.contact_policy,
    )
