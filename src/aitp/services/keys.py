"""API key administration, and the first-start admin key."""

from __future__ import annotations

from dataclasses import dataclass

from aitp.auth import generate_key, hash_key
from aitp.errors import NotFound
from aitp.ids import new_id
from aitp.principals import ADMIN_ACTOR, CUSTOMER_SESSION, PrincipalCache
from aitp.runtime import now
from aitp.services import identities, revocation
from aitp.services.connections import StreamSlots
from aitp.store.base import Store
from aitp.store.identities import CUSTOMER, VERIFIED_ONLY
from aitp.store.keys import KeyRecord

# How long an expired key is kept: its holder is told `expired_api_key` ("sign in again"), not that the key
# is unknown. Then it is deleted, when another key that expires is made (each sign-in makes one): keys from
# sign-in links would otherwise pile up for good.
EXPIRED_KEYS_KEPT = 7 * 86_400


@dataclass(frozen=True)
class CreatedKey:
    record: KeyRecord
    secret: str  # shown this once: the store keeps only its hash


async def create_key(
    store: Store,
    actor: str,
    *,
    admin: bool = False,
    scopes: list[str] | None = None,
    lifetime: float | None = None,
    contact_policy: str = VERIFIED_ONLY,
    known: bool = False,
) -> CreatedKey:
    """Create a key, refused after `lifetime` seconds (None: never); its secret is returned this once and
    stored only as a hash. An actor's key makes the actor known to this server: an actor it did not know
    becomes a local actor (only admins make keys), whom `contact_policy` says who may contact (`known`: the
    caller has just made sure it is known, e.g. by a sign-in)."""
    created_at = now()
    if not admin and not known and not await store.identities.add(identities.local(actor, contact_policy)):
        identity = await store.identities.get(actor)
        if identity is not None and identity.kind == CUSTOMER:
            # an admin's key of a shop's customer is held to the shop as the shop's own sessions are
            scopes = [*(scopes or []), CUSTOMER_SESSION]
    secret = generate_key()
    record = KeyRecord(
        id=new_id("key"),
        hash=hash_key(secret),
        actor=actor,
        admin=admin,
        created_at=created_at,
        prefix=secret[:9],
        scopes=sorted(set(scopes or [])),
        expires_at=None if lifetime is None else created_at + int(lifetime),
    )
    if record.expires_at is not None:
        await store.keys.purge_expired(created_at - EXPIRED_KEYS_KEPT)
    await store.keys.create(record)
    return CreatedKey(record, secret)


async def list_keys(store: Store) -> list[KeyRecord]:
    return await store.keys.all()


async def revoke_key(
    store: Store, key_id: str, principals: PrincipalCache | None = None, slots: StreamSlots | None = None
) -> None:
    """Delete a key; this process (its cache of authenticated keys, and its open streams, when given) stops
    accepting it at once. Other processes notice within `PRINCIPAL_TTL` (`aitp.services.revocation`)."""
    if not await store.keys.delete(key_id):
        raise NotFound(f"No API key found with id '{key_id}'.", param="key_id", code="key_not_found")
    if principals is not None:
        revocation.key_revoked(key_id, principals, slots)


async def ensure_admin_key(store: Store) -> str | None:
    """On first start with no admin key at all, create one and return its secret (else None)."""
    if await store.keys.has_admin():
        return None
    return (await create_key(store, ADMIN_ACTOR, admin=True)).secret
