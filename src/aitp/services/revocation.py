"""A revoked key loses its open streams too, not only its next requests; so does a key that expires.

Revoked through this process's API, a key's streams here end at once. Revoked elsewhere (another instance
sharing the store, `aitp keys revoke`), they end at this process's next check: every `PRINCIPAL_TTL`
seconds, one store read per `CHECK_BATCH` of the keys holding streams open here (none while no stream is
open) asks which of them still exist, so ending them costs what the principal cache already allows a
revoked key: that long. A WebSocket ends with 4401, an SSE stream with `event: end` and the reason; a post
over a socket authenticates its key again (through the principal cache, as an HTTP request does).
"""

from __future__ import annotations

import asyncio
import logging

from aitp.auth import expired
from aitp.principals import PRINCIPAL_TTL, PrincipalCache
from aitp.services.connections import StreamSlots
from aitp.store.base import Store

log = logging.getLogger(__name__)

REASON = "the API key was revoked"
EXPIRED_REASON = "the API key has expired"
CHECK_BATCH = 500  # keys asked about in one store read


def key_revoked(key_id: str, principals: PrincipalCache, slots: StreamSlots | None, reason: str = REASON) -> None:
    """`key_id` is gone from the store (or expired): stop accepting it here, and end the streams it holds here."""
    principals.forget_key(key_id)
    if slots is not None:
        slots.revoke(key_id, reason)


async def check(store: Store, principals: PrincipalCache, slots: StreamSlots) -> None:
    """End the streams of every key holding some here that the store no longer has, or that has expired."""
    held = slots.stored_keys()
    for start in range(0, len(held), CHECK_BATCH):
        batch = held[start : start + CHECK_BATCH]
        expiries = await store.keys.expiries(batch)
        for key_id in batch:
            if key_id not in expiries:
                key_revoked(key_id, principals, slots)
            elif expired(expiries[key_id]):
                key_revoked(key_id, principals, slots, EXPIRED_REASON)


async def watch(store: Store, principals: PrincipalCache, slots: StreamSlots, interval: float = PRINCIPAL_TTL) -> None:
    """`check` every `interval` seconds, for the process's lifetime."""
    while True:
        await asyncio.sleep(interval)
        try:
            await check(store, principals, slots)
        except Exception:  # a store hiccup must not stop the checks for good
            log.exception("checking the keys of open streams failed; trying again in %gs", interval)
