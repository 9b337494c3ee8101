"""The Store contract for webhook endpoints and deliveries, on every backend (through the `store` fixture).

Deliveries are derived from the log by an endpoint's cursor, so deriving twice inserts nothing twice; an
attempt is made by whoever leases the delivery, each the oldest pending delivery of its thread; only the
holder of a lease records its outcome, and a lease that ran out (its instance crashed) is taken over. Time is
passed in, so expiry is tested by claiming "later", not by waiting. An endpoint stored before it chose its
messages takes all of them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import asdict, replace

from aitp.store import Store, open_store
from aitp.store.mongo import MongoStore
from aitp.store.sqlite import SQLiteStore
from aitp.store.webhooks import (
    Claim,
    DeliveryRecord,
    EndpointRecord,
    Pending,
    WebhookSecret,
    claimable,
    delivery_id,
    next_ready,
)
from tests.conftest import Backend

NOW = 1_000_000.0
LEASE = 30.0


def endpoint(endpoint_id: str = "wh_1", actor: str = "shop.near", cursor: int = 0) -> EndpointRecord:
    return EndpointRecord(
        id=endpoint_id,
        actor=actor,
        url="https://hooks.example.com/aitp",
        event_types=[],
        enabled=True,
        secrets=[WebhookSecret("whsec_c2VjcmV0")],
        created_at=1,
        cursor=cursor,
    )


def delivery(gid: int, thread_id: str = "thread_a", endpoint_id: str = "wh_1") -> DeliveryRecord:
    return DeliveryRecord(
        id=delivery_id(endpoint_id, gid),
        endpoint_id=endpoint_id,
        thread_id=thread_id,
        gid=gid,
        type="thread.message.created",
        body=f'{{"cursor": {gid}}}',
        created_at=NOW,
        next_attempt_at=NOW,
    )


async def test_an_endpoint_is_read_back_as_written_and_updated_without_its_cursor(store: Store) -> None:
    await store.webhooks.create(endpoint(cursor=7))
    await store.webhooks.create(replace(endpoint("wh_2", actor="other.near"), messages="addressed"))
    assert await store.webhooks.get("wh_1") == endpoint(cursor=7)
    assert (await store.webhooks.get("wh_1")).messages == "all"  # type: ignore[union-attr]
    assert (await store.webhooks.get("wh_2")).messages == "addressed"  # type: ignore[union-attr]
    assert [e.id for e in await store.webhooks.of_actor("shop.near")] == ["wh_1"]
    assert [e.id for e in await store.webhooks.of_actor(None)] == ["wh_1", "wh_2"]

    changed = replace(
        endpoint(cursor=99),
        url="https://other.example.com/",
        enabled=False,
        event_types=["thread.created"],
        messages="addressed",
        secrets=[WebhookSecret("whsec_bmV3"), WebhookSecret("whsec_c2VjcmV0", expires_at=NOW)],
        failing_since=NOW,
        disabled_reason="410",
    )
    assert await store.webhooks.update(changed)
    assert await store.webhooks.get("wh_1") == replace(changed, cursor=7)  # the cursor is the engine's
    assert [e.id for e in await store.webhooks.enabled()] == ["wh_2"]
    assert not await store.webhooks.update(endpoint("wh_gone"))


async def test_the_engine_records_failures_and_disables_without_touching_the_rest(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.set_health("wh_1", NOW, None)
    assert await store.webhooks.get("wh_1") == replace(endpoint(), failing_since=NOW)
    await store.webhooks.set_health("wh_1", NOW, "410 Gone")
    assert await store.webhooks.get("wh_1") == replace(
        endpoint(), failing_since=NOW, enabled=False, disabled_reason="410 Gone"
    )


async def test_deriving_deliveries_twice_inserts_them_once_and_moves_the_cursor_once(store: Store) -> None:
    await store.webhooks.create(endpoint())
    assert await store.webhooks.advance("wh_1", 0, 5, [delivery(3), delivery(5)])
    # a second instance that read from the same cursor: nothing doubled, and its cursor move refused
    assert not await store.webhooks.advance("wh_1", 0, 5, [delivery(3), delivery(5)])
    assert (await store.webhooks.get("wh_1")).cursor == 5  # type: ignore[union-attr]
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10)] == [5, 3]
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10, before=5)] == [3]
    assert await store.webhooks.get_delivery(delivery_id("wh_1", 3)) == delivery(3)


async def test_a_claim_takes_the_oldest_pending_delivery_of_each_thread_only(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 4, [delivery(1, "a"), delivery(2, "a"), delivery(3, "b"), delivery(4, "b")])
    claimed = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 10))
    assert [(d.gid, d.attempts, d.lease_owner) for d in claimed] == [(1, 1, "one"), (3, 1, "one")]
    # while they are out, nothing else of those threads goes
    assert await store.webhooks.claim("wh_1", Claim("two", NOW, NOW + LEASE, 10)) == []

    first, third = claimed
    assert await store.webhooks.finish(replace(first, status="succeeded", last_status=200, last_attempt_at=NOW), "one")
    retry = replace(third, last_status=500, last_attempt_at=NOW, next_attempt_at=NOW + 60)
    assert await store.webhooks.finish(retry, "one")
    # thread a moves on; thread b waits for its head's retry, in order
    assert [d.gid for d in await store.webhooks.claim("wh_1", Claim("two", NOW, NOW + LEASE, 10))] == [2]
    assert await store.webhooks.next_due("wh_1") == NOW + LEASE  # gid 2's lease ends before gid 3's retry
    # then gid 2's lease runs out (its holder never finished) and gid 3 is due again
    later = await store.webhooks.claim("wh_1", Claim("three", NOW + 61, NOW + 61 + LEASE, 10))
    assert [(d.gid, d.attempts) for d in later] == [(2, 2), (3, 2)]


async def test_an_unordered_claim_takes_any_due_delivery_oldest_first(store: Store) -> None:
    """An endpoint whose ordering is "none": a thread's later deliveries go beside its head, oldest first,
    and the next due is that of any pending delivery."""
    await store.webhooks.create(replace(endpoint(), ordering="none"))
    assert (await store.webhooks.get("wh_1")).ordering == "none"  # type: ignore[union-attr]
    await store.webhooks.advance("wh_1", 0, 4, [delivery(1, "a"), delivery(2, "a"), delivery(3, "b"), delivery(4, "a")])
    claimed = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 3, ordered=False))
    assert [d.gid for d in claimed] == [1, 2, 3]
    retry = replace(claimed[1], last_status=500, next_attempt_at=NOW + 5)
    assert await store.webhooks.finish(retry, "one")
    assert await store.webhooks.next_due("wh_1", ordered=False) == NOW  # gid 4, due now
    assert await store.webhooks.next_due("wh_1") == NOW + LEASE  # ordered: thread a's head is leased
    [fourth] = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 10, ordered=False))
    assert fourth.gid == 4
    assert await store.webhooks.next_due("wh_1", ordered=False) == NOW + 5  # gid 2's retry


def mixed_pending() -> list[DeliveryRecord]:
    """Pending deliveries in four threads, some due, some retried later, some leased (one lease run out)."""
    shapes = [  # (thread, retry in, lease ends in), gid in order
        ("a", 0, 0), ("a", 0, 0), ("b", 40, 0), ("b", 0, 0), ("c", 0, 30), ("c", 0, 0),
        ("d", 0, -5), ("a", 10, 0), ("d", 0, 0), ("b", 0, 0), ("c", 20, 0), ("d", 5, 0),
    ]  # fmt: skip
    return [
        replace(
            delivery(gid, thread), next_attempt_at=NOW + retry, lease_until=NOW + lease, lease_owner="x" * (lease > 0)
        )
        for gid, (thread, retry, lease) in enumerate(shapes, start=1)
    ]


def candidates(deliveries: list[DeliveryRecord]) -> list[Pending]:
    return [Pending(d.id, d.thread_id, d.gid, d.next_attempt_at, d.lease_until) for d in deliveries]


def test_the_claim_rule_takes_each_threads_oldest_when_ready_or_any_ready_one_unordered() -> None:
    pending = candidates(mixed_pending())
    # a: 1 ready; b: its oldest (3) retried later, so b waits; c: its oldest (5) leased; d: 7's lease ran out
    assert [p.gid for p in claimable(pending, Claim("o", NOW, NOW + LEASE, 10))] == [1, 7]
    assert [p.gid for p in claimable(pending, Claim("o", NOW, NOW + LEASE, 1))] == [1]
    unordered = Claim("o", NOW, NOW + LEASE, 10, ordered=False)
    assert [p.gid for p in claimable(pending, unordered)] == [1, 2, 4, 6, 7, 9, 10]
    assert next_ready(pending, ordered=True) == NOW
    assert next_ready([p for p in pending if p.thread_id in "bc"], ordered=True) == NOW + 30  # c's lease, b's 40
    assert next_ready([p for p in pending if p.thread_id in "bc"], ordered=False) == NOW


async def test_every_backend_claims_what_the_claim_rule_chooses_from_all_pending(store: Store) -> None:
    """Backends read candidates their own way (each thread's oldest through an index); the answer is always
    the rule's, applied to every pending delivery."""
    for ordered, endpoint_id in ((True, "wh_1"), (False, "wh_2")):
        await store.webhooks.create(replace(endpoint(endpoint_id), ordering="thread" if ordered else "none"))
        pending = [replace(d, id=delivery_id(endpoint_id, d.gid), endpoint_id=endpoint_id) for d in mixed_pending()]
        await store.webhooks.advance(endpoint_id, 0, len(pending), pending)
        for now in (NOW, NOW + 12, NOW + 45):
            expected = claimable(candidates(pending), Claim("o", now, now + LEASE, 10, ordered))
            assert await store.webhooks.next_due(endpoint_id, ordered=ordered) == next_ready(
                candidates(pending), ordered=ordered
            )
            claimed = await store.webhooks.claim(endpoint_id, Claim("o", now, now + 1, 10, ordered))
            assert [d.gid for d in claimed] == [p.gid for p in expected], (ordered, now)
            await store.webhooks.release("o", [endpoint_id])  # as they were, for the next look
            pending = [await store.webhooks.get_delivery(d.id) or d for d in pending]


async def test_deriving_with_a_claim_leases_only_what_a_claim_would_and_never_twice(store: Store) -> None:
    await store.webhooks.create(endpoint())
    fresh = [delivery(1, "a"), delivery(2, "a"), delivery(3, "b")]
    moved, claimed = await store.webhooks.advance_and_claim("wh_1", 0, 3, fresh, Claim("one", NOW, NOW + LEASE, 10))
    assert moved and (await store.webhooks.get("wh_1")).cursor == 3  # type: ignore[union-attr]
    # what deriving did not claim (a backend may leave it all to the worker), a claim takes: each thread's head
    rest = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 10))
    assert sorted((d.gid, d.attempts, d.lease_owner) for d in claimed + rest) == [(1, 1, "one"), (3, 1, "one")]
    # another instance that derived the same events: nothing doubled, its cursor move refused, nothing claimed
    again = await store.webhooks.advance_and_claim("wh_1", 0, 3, fresh, Claim("two", NOW, NOW + LEASE, 10))
    assert again == (False, [])
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10)] == [3, 2, 1]
    # no slot free: nothing claimed
    _, none = await store.webhooks.advance_and_claim(
        "wh_1", 3, 4, [delivery(4, "c")], Claim("one", NOW, NOW + LEASE, 0)
    )
    assert none == []


async def test_finishing_an_attempt_claims_what_is_due_next_with_the_slot_it_frees(store: Store) -> None:
    """The thread's next delivery goes in the finishing write (one commit where the backend can); a finish
    whose lease was lost claims nothing; a claim of no slot leaves the rest for the worker."""
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 5, [delivery(gid, "a" if gid < 4 else "b") for gid in range(1, 6)])
    first, fourth = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 10))
    sent = replace(first, status="succeeded", last_status=204, last_attempt_at=NOW)
    kept, claimed = await store.webhooks.finish_and_claim(sent, "one", Claim("one", NOW, NOW + LEASE, 10))
    assert kept and [(d.gid, d.attempts, d.lease_owner) for d in claimed] == [(2, 1, "one")]  # b's head is out
    assert (await store.webhooks.get_delivery(first.id)).status == "succeeded"  # type: ignore[union-attr]

    [second] = claimed
    assert await store.webhooks.finish_and_claim(second, "lost", Claim("lost", NOW, NOW + LEASE, 10)) == (False, [])
    kept, claimed = await store.webhooks.finish_and_claim(
        replace(fourth, status="succeeded"), "one", Claim("one", NOW, NOW + LEASE, 0)
    )
    assert (kept, claimed) == (True, [])
    assert [d.gid for d in await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 10))] == [5]


async def test_a_lease_that_ran_out_is_taken_over_and_its_old_holder_records_nothing(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 1, [delivery(1)])
    [crashed] = await store.webhooks.claim("wh_1", Claim("crashed", NOW, NOW + LEASE, 1))
    assert await store.webhooks.claim("wh_1", Claim("other", NOW + LEASE - 1, NOW + 2 * LEASE, 1)) == []
    [taken] = await store.webhooks.claim("wh_1", Claim("other", NOW + LEASE, NOW + 2 * LEASE, 1))
    assert (taken.id, taken.attempts) == (crashed.id, 2)
    assert not await store.webhooks.finish(replace(crashed, status="succeeded"), "crashed")
    assert await store.webhooks.finish(replace(taken, status="succeeded"), "other")
    assert (await store.webhooks.get_delivery(crashed.id)).status == "succeeded"  # type: ignore[union-attr]
    assert await store.webhooks.next_due("wh_1") is None


async def test_concurrent_claims_never_lease_one_delivery_twice(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 40, [delivery(gid, f"t{gid}") for gid in range(1, 41)])
    claims = await asyncio.gather(
        *(store.webhooks.claim("wh_1", Claim(f"owner{n}", NOW, NOW + LEASE, 40)) for n in range(8))
    )
    ids = [d.id for claim in claims for d in claim]
    assert sorted(ids) == sorted(delivery_id("wh_1", gid) for gid in range(1, 41))


async def test_redelivering_makes_a_finished_delivery_pending_and_due_again(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 1, [delivery(1)])
    [out] = await store.webhooks.claim("wh_1", Claim("one", NOW, NOW + LEASE, 1))
    await store.webhooks.finish(replace(out, status="failed", last_status=410), "one")
    assert await store.webhooks.claim("wh_1", Claim("one", NOW + 5, NOW + LEASE, 1)) == []
    again = await store.webhooks.redeliver(out.id, NOW + 5)
    assert again is not None and (again.status, again.next_attempt_at, again.attempts) == ("pending", NOW + 5, 1)
    assert [d.attempts for d in await store.webhooks.claim("wh_1", Claim("one", NOW + 5, NOW + LEASE, 1))] == [2]
    assert await store.webhooks.redeliver("whd_missing", NOW) is None


async def test_deleting_an_endpoint_deletes_its_deliveries(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 1, [delivery(1)])
    assert await store.webhooks.delete("wh_1")
    assert await store.webhooks.get("wh_1") is None
    assert await store.webhooks.get_delivery(delivery_id("wh_1", 1)) is None
    assert not await store.webhooks.delete("wh_1")


# the webhook_endpoints table as stores wrote it before endpoints chose their messages
TABLE_BEFORE_MESSAGES = """
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY, actor TEXT NOT NULL, url TEXT NOT NULL, event_types TEXT NOT NULL,
    enabled INTEGER NOT NULL, secrets TEXT NOT NULL, created_at INTEGER NOT NULL, cursor INTEGER NOT NULL,
    description TEXT, failing_since REAL, disabled_reason TEXT
)"""


async def _written_before_messages(backend: Backend) -> Store:
    """An opened store holding endpoint() as a version before the `messages` option wrote it (and before the
    `on_client_error` and `ordering` ones)."""
    old = asdict(endpoint())
    del old["messages"], old["on_client_error"], old["ordering"]
    if backend.name == "sqlite":
        conn = sqlite3.connect(SQLiteStore.from_url(backend.url).path)
        conn.execute(TABLE_BEFORE_MESSAGES)
        old |= {"event_types": "[]", "secrets": '[{"secret": "whsec_c2VjcmV0", "expires_at": null}]'}
        conn.execute(f"INSERT INTO webhook_endpoints VALUES ({', '.join('?' * len(old))})", list(old.values()))
        conn.commit()
        conn.close()
        store = open_store(backend.url)
        await store.open()  # the upgrade adds the column
        return store
    store = open_store(backend.url)
    await store.open()
    assert isinstance(store, MongoStore)
    await store.engine.db.webhook_endpoints.insert_one({"_id": old.pop("id"), **old})
    return store


async def test_an_endpoint_stored_before_the_messages_option_takes_all_and_can_change(backend: Backend) -> None:
    store = await _written_before_messages(backend)
    try:
        assert await store.webhooks.get("wh_1") == endpoint()
        assert [e.messages for e in await store.webhooks.enabled()] == ["all"]
        assert [e.on_client_error for e in await store.webhooks.enabled()] == ["skip"]
        assert [e.ordering for e in await store.webhooks.enabled()] == ["thread"]
        assert await store.webhooks.update(replace(endpoint(), messages="addressed"))
        assert await store.webhooks.get("wh_1") == replace(endpoint(), messages="addressed")
        await store.webhooks.create(endpoint("wh_2"))  # and new ones are written whole beside it
        assert [e.messages for e in await store.webhooks.of_actor(None)] == ["addressed", "all"]
    finally:
        await store.close()


async def test_endpoints_stored_before_slots_count_against_the_limit_of_concurrent_creations(
    mongo_backend: Backend,
) -> None:
    """MongoDB: an endpoint written before creations took slots is given one when the store is opened, so
    concurrent creations see it held (SQLite counts in the insert's own transaction: nothing to upgrade)."""
    store = open_store(mongo_backend.url)
    await store.open()
    assert isinstance(store, MongoStore)
    legacy = [asdict(endpoint(f"wh_old{n}")) for n in range(3)]
    await store.engine.db.webhook_endpoints.insert_many([{"_id": e.pop("id"), **e} for e in legacy])
    await store.close()

    store = open_store(mongo_backend.url)
    await store.open()  # the upgrade gives each its slot
    assert isinstance(store, MongoStore)
    try:
        slots = {doc["_id"]: doc.get("slot") async for doc in store.engine.db.webhook_endpoints.find({})}
        assert sorted(slots.values()) == [0, 1, 2]
        made = await asyncio.gather(*(store.webhooks.create(endpoint(f"wh_new{n}"), limit=4) for n in range(6)))
        assert sum(made) == 1
        assert len(await store.webhooks.of_actor("shop.near")) == 4
    finally:
        await store.close()
