"""The Store contract for idempotency records, on every backend (through the `store` fixture).

A record is claimed (reserved, pending) by the first request with a (scope, key), completed with its
response, or released when the request failed; it is kept until `expires_at`. Time is passed in,
so expiry is tested by claiming "later", not by waiting.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from aitp.store import Store, open_store
from aitp.store.idempotency import IdempotencyRecord
from tests.conftest import Backend

DAY = 24 * 3600.0
PENDING_TIMEOUT = 60.0
# Real time, whole seconds: a real MongoDB's TTL monitor must not expire records made "now", and its
# dates keep milliseconds only.
NOW = float(int(time.time()))


def claim(
    key: str = "key-1",
    *,
    scope: str = "key_alice",
    fingerprint: str = "POST /v1/threads body-sha",
    at: float = NOW,
) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=scope,
        key=key,
        fingerprint=fingerprint,
        token=uuid.uuid4().hex,
        created_at=at,
        expires_at=at + DAY,
    )


async def reserve(store: Store, record: IdempotencyRecord) -> IdempotencyRecord | None:
    return await store.idempotency.claim(record, pending_timeout=PENDING_TIMEOUT)


async def test_the_first_claim_reserves_the_key(store: Store) -> None:
    assert await reserve(store, claim()) is None


async def test_a_second_claim_sees_the_pending_reservation(store: Store) -> None:
    first = claim()
    await reserve(store, first)

    held = await reserve(store, claim(at=NOW + 1))

    assert held is not None
    assert held.pending
    assert (held.token, held.fingerprint, held.created_at, held.expires_at) == (
        first.token,
        first.fingerprint,
        NOW,
        NOW + DAY,
    )


async def test_a_completed_record_is_returned_with_its_response(store: Store) -> None:
    first = claim()
    await reserve(store, first)

    assert await store.idempotency.complete(first.scope, first.key, first.token, 201, '{"id": "thread_1"}')
    held = await reserve(store, claim(at=NOW + 5))

    assert held is not None
    assert not held.pending
    assert (held.status, held.body) == (201, '{"id": "thread_1"}')


async def test_a_record_is_completed_once(store: Store) -> None:
    first = claim()
    await reserve(store, first)
    await store.idempotency.complete(first.scope, first.key, first.token, 200, '{"n": 1}')

    assert not await store.idempotency.complete(first.scope, first.key, first.token, 200, '{"n": 2}')
    held = await reserve(store, claim())
    assert held is not None and held.body == '{"n": 1}'


async def test_keys_are_unique_per_scope_not_globally(store: Store) -> None:
    await reserve(store, claim("shared", scope="key_alice"))

    assert await reserve(store, claim("shared", scope="key_bob")) is None
    assert await reserve(store, claim("other", scope="key_alice")) is None
    assert await reserve(store, claim("shared", scope="key_alice")) is not None


async def test_a_released_reservation_frees_the_key(store: Store) -> None:
    first = claim()
    await reserve(store, first)

    assert await store.idempotency.release(first.scope, first.key, first.token)
    assert await reserve(store, claim()) is None


async def test_release_and_complete_need_the_reservations_token(store: Store) -> None:
    first = claim()
    await reserve(store, first)

    assert not await store.idempotency.release(first.scope, first.key, "someone-else")
    assert not await store.idempotency.complete(first.scope, first.key, "someone-else", 200, "{}")
    held = await reserve(store, claim())
    assert held is not None and held.token == first.token and held.pending


async def test_a_completed_record_is_not_released(store: Store) -> None:
    first = claim()
    await reserve(store, first)
    await store.idempotency.complete(first.scope, first.key, first.token, 200, "{}")

    assert not await store.idempotency.release(first.scope, first.key, first.token)
    assert await reserve(store, claim()) is not None


async def test_an_abandoned_reservation_is_taken_over_after_the_pending_timeout(store: Store) -> None:
    crashed = claim()
    await reserve(store, crashed)

    assert await reserve(store, claim(at=NOW + PENDING_TIMEOUT - 1)) is not None
    retry = claim(at=NOW + PENDING_TIMEOUT)
    assert await reserve(store, retry) is None

    # the crashed request, should it finish after all, no longer owns the key
    assert not await store.idempotency.complete(crashed.scope, crashed.key, crashed.token, 200, "{}")
    assert await store.idempotency.complete(retry.scope, retry.key, retry.token, 200, '{"retry": true}')


async def test_a_completed_record_is_kept_until_it_expires(store: Store) -> None:
    first = claim()
    await reserve(store, first)
    await store.idempotency.complete(first.scope, first.key, first.token, 200, "{}")

    assert await reserve(store, claim(at=NOW + DAY - 1)) is not None
    assert await reserve(store, claim(at=NOW + DAY)) is None


async def test_purge_deletes_expired_records_only(store: Store) -> None:
    old, recent = claim("old"), claim("recent", at=NOW + 10)
    for record in (old, recent):
        await reserve(store, record)
        await store.idempotency.complete(record.scope, record.key, record.token, 200, "{}")

    assert await store.idempotency.purge(NOW + DAY) == 1
    assert await store.idempotency.purge(NOW + DAY) == 0

    # "old" is gone (a later claim made before its expiry would otherwise see it), "recent" is kept
    assert await reserve(store, claim("old", at=NOW + 20)) is None
    assert await reserve(store, claim("recent", at=NOW + 20)) is not None


@pytest.fixture
async def second_store(backend: Backend) -> AsyncIterator[Store]:
    """Another store on the same database: its own connection, as another process would have."""
    other = open_store(backend.url)
    await other.open()
    try:
        yield other
    finally:
        await other.close()


async def test_concurrent_claims_of_one_key_have_exactly_one_winner(store: Store, second_store: Store) -> None:
    claims = [claim() for _ in range(6)]

    results = await asyncio.gather(*(reserve(s, c) for s, c in zip([store, second_store] * 3, claims, strict=True)))

    winners = [c for c, held in zip(claims, results, strict=True) if held is None]
    assert len(winners) == 1
    assert {held.token for held in results if held is not None} == {winners[0].token}


async def test_concurrent_takeovers_of_an_abandoned_reservation_have_exactly_one_winner(
    store: Store, second_store: Store
) -> None:
    await reserve(store, claim())
    later = [claim(at=NOW + PENDING_TIMEOUT + 1) for _ in range(6)]

    results = await asyncio.gather(*(reserve(s, c) for s, c in zip([store, second_store] * 3, later, strict=True)))

    winners = [c for c, held in zip(later, results, strict=True) if held is None]
    assert len(winners) == 1
    assert {held.token for held in results if held is not None} == {winners[0].token}
