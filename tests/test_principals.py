"""The cache of authenticated keys: who a key acts as is read from the store at most once per time to
live; revocations through this process apply at once; unknown keys are never remembered."""

from __future__ import annotations

import pytest

from aitp.auth import Principal, authenticate, hash_key
from aitp.errors import Unauthenticated
from aitp.principals import PrincipalCache
from aitp.services.keys import create_key, revoke_key
from aitp.store.base import Store


async def test_a_known_key_is_answered_from_memory_until_its_time_to_live_ends(store: Store) -> None:
    cache = PrincipalCache(ttl=3600)
    created = await create_key(store, "shop.near", scopes=["capabilities:write"])
    principal = await authenticate(store, created.secret, None, cache)
    assert principal == Principal("shop.near", key_id=created.record.id, scopes=frozenset({"capabilities:write"}))
    # Another process revokes it: this one keeps the remembered principal (at most `ttl` seconds) ...
    assert await store.keys.delete(created.record.id)
    assert await authenticate(store, created.secret, None, cache) == principal
    # ... while without a time to live every request reads the store.
    uncached = PrincipalCache(ttl=0)
    with pytest.raises(Unauthenticated):
        await authenticate(store, created.secret, None, uncached)


async def test_a_key_revoked_through_this_process_is_refused_at_once(store: Store) -> None:
    cache = PrincipalCache(ttl=3600)
    created = await create_key(store, "shop.near")
    await authenticate(store, created.secret, None, cache)
    await revoke_key(store, created.record.id, cache)
    with pytest.raises(Unauthenticated):
        await authenticate(store, created.secret, None, cache)


async def test_unknown_keys_are_never_remembered(store: Store) -> None:
    cache = PrincipalCache(ttl=3600)
    for i in range(50):
        with pytest.raises(Unauthenticated):
            await authenticate(store, f"aitp_guess{i}", None, cache)
    assert len(cache) == 0
    created = await create_key(store, "late.near")  # a key created after a miss works at once
    assert (await authenticate(store, created.secret, None, cache)).actor == "late.near"


async def test_the_least_recently_used_key_is_dropped_beyond_the_size_bound(store: Store) -> None:
    cache = PrincipalCache(ttl=3600, max_size=2)
    first, second, third = [await create_key(store, f"actor{i}") for i in range(3)]
    await authenticate(store, first.secret, None, cache)
    await authenticate(store, second.secret, None, cache)
    await authenticate(store, first.secret, None, cache)  # first is now the most recently used
    await authenticate(store, third.secret, None, cache)
    assert len(cache) == 2
    # second was dropped, so its revocation elsewhere is seen; first is still remembered.
    await store.keys.delete(second.record.id)
    await store.keys.delete(first.record.id)
    with pytest.raises(Unauthenticated):
        await authenticate(store, second.secret, None, cache)
    assert (await authenticate(store, first.secret, None, cache)).actor == "actor0"


async def test_a_revocation_during_a_lookup_is_not_undone_by_that_lookup(store: Store) -> None:
    cache = PrincipalCache(ttl=3600)
    created = await create_key(store, "shop.near")
    principal = Principal("shop.near", key_id=created.record.id)

    async def load_while_revoked() -> Principal | None:
        cache.forget_key(created.record.id)  # the revocation lands while the store read is under way
        return principal

    assert await cache.get(hash_key(created.secret), load_while_revoked) == principal
    assert len(cache) == 0
