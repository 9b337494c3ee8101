"""What the webhook store's hot paths cost as finished deliveries pile up, and what else keeps that cost flat.

Specification (issue 28, item 9): `claim` and `next_due` read pending deliveries only, never the endpoint's
history: on SQLite both go through the pending index, one seek per thread waiting (the query plan says so,
and says the same with 20,000 succeeded and 2,000 pending deliveries analysed as with none); on every
backend they give the same answers with that history as without it. Finished deliveries are pruned after the
retention period (pending ones never), and the delivery log reads within it. The per-actor endpoint limit
holds for concurrent creations, and a delivery can be canceled (its thread goes on), made due at once
(`hasten`), or released by its lease holder.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace

import pytest

from aitp.store import Store
from aitp.store.sqlite import SQLiteStore
from aitp.store.sqlite.webhooks import HASTEN, HEADS, PENDING, PRUNE
from aitp.store.webhooks import Claim, DeliveryRecord, delivery_id
from tests.store.test_webhooks import LEASE, NOW, delivery, endpoint

HISTORY = 20_000
BACKLOG = 2_000  # pending deliveries, in 10 threads: heads are found per thread, not per pending delivery
DAY = 86_400.0


def plan(conn: sqlite3.Connection, sql: str, values: tuple[object, ...] | dict[str, object]) -> str:
    return "\n".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", values))


def plans(conn: sqlite3.Connection) -> dict[str, str]:
    return {
        "heads": plan(conn, HEADS, {"endpoint": "wh_1"}),  # what an ordered claim and next_due read
        "pending": plan(conn, PENDING, {"endpoint": "wh_1"}),  # what an unordered one reads
        "hasten": plan(conn, HASTEN, (NOW, "wh_1", NOW)),
        "prune": plan(conn, PRUNE, (NOW, 100)),
    }


def succeeded(count: int, start: int = 1) -> list[DeliveryRecord]:
    return [replace(delivery(gid, thread_id=f"thread_{gid % 50}"), status="succeeded") for gid in range(start, count)]


async def test_the_engine_reads_of_sqlite_go_through_the_pending_index_however_long_the_history(
    tmp_path: pytest.TempPathFactory,
) -> None:
    store = SQLiteStore(f"{tmp_path}/cost.db")
    await store.open()
    try:
        await store.webhooks.create(endpoint())
        conn = sqlite3.connect(f"{tmp_path}/cost.db")
        empty = plans(conn)
        backlog = [delivery(gid, f"thread_{gid % 10}") for gid in range(HISTORY, HISTORY + BACKLOG)]
        await store.webhooks.advance("wh_1", 0, HISTORY + BACKLOG, [*succeeded(HISTORY), *backlog])
        conn.execute("ANALYZE")  # the planner now knows how many rows of wh_1 each index holds
        full = plans(conn)
        conn.close()
    finally:
        await store.close()

    assert full == empty  # the same plan, with the history as without it
    for name in ("heads", "pending"):
        # each read of the table a seek in the pending index (one per thread waiting), none in another
        reads = [line for line in full[name].splitlines() if line.startswith(("SEARCH", "SCAN")) and " USING " in line]
        assert reads and all("USING INDEX webhook_deliveries_pending" in line for line in reads), full[name]
        assert "SCAN webhook_deliveries" not in full[name] and "SCAN d" not in full[name], full[name]
    head = "SEARCH d USING INDEX webhook_deliveries_pending (endpoint_id=? AND thread_id=? AND gid=?)"
    assert head in full["heads"], full["heads"]  # each head looked up by its key, from the heads found
    assert "USING INDEX webhook_deliveries_pending" in full["hasten"]
    assert "USING INDEX webhook_deliveries_finished" in full["prune"]


async def test_claim_and_next_due_see_only_the_pending_heads_among_a_long_history(store: Store) -> None:
    await store.webhooks.create(endpoint())
    history = succeeded(2_000)
    waiting = replace(delivery(2_001, "thread_a"), next_attempt_at=NOW + 50)  # a retry: its thread waits
    behind = delivery(2_002, "thread_a")
    due = delivery(2_003, "thread_b")
    await store.webhooks.advance("wh_1", 0, 2_003, [*history, waiting, behind, due])

    assert await store.webhooks.next_due("wh_1") == NOW
    claimed = await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 8))
    assert [d.gid for d in claimed] == [2_003]  # thread_a's head is not due; what is behind it waits
    assert await store.webhooks.next_due("wh_1") == NOW + LEASE  # thread_b's lease end, before thread_a's retry


async def test_finished_deliveries_past_the_retention_are_pruned_and_pending_ones_never(store: Store) -> None:
    await store.webhooks.create(endpoint())
    old = replace(delivery(1), created_at=NOW - 8 * DAY)
    statuses = ["succeeded", "failed", "canceled", "pending"]
    made = [replace(old, id=delivery_id("wh_1", gid), gid=gid, status=s) for gid, s in enumerate(statuses, 1)]
    recent = replace(delivery(5), status="succeeded", created_at=NOW - DAY)
    await store.webhooks.advance("wh_1", 0, 5, [*made, recent])
    cutoff = NOW - 7 * DAY

    listed = await store.webhooks.deliveries("wh_1", limit=10, since=cutoff)
    assert [d.gid for d in listed] == [5, 4]  # the log reads within the retention, pruned yet or not
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10, since=cutoff, status="pending")] == [4]

    assert await store.webhooks.prune(cutoff, limit=2) == 2  # a batch at most
    assert await store.webhooks.prune(cutoff, limit=2) == 1
    assert await store.webhooks.prune(cutoff, limit=2) == 0
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10)] == [5, 4]


async def test_the_log_filters_by_status(store: Store) -> None:
    await store.webhooks.create(endpoint())
    statuses = ["succeeded", "failed", "pending", "succeeded"]
    await store.webhooks.advance(
        "wh_1", 0, 4, [replace(delivery(gid, f"t{gid}"), status=s) for gid, s in enumerate(statuses, 1)]
    )
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10, status="succeeded")] == [4, 1]
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=1, status="succeeded")] == [4]
    assert [d.gid for d in await store.webhooks.deliveries("wh_1", limit=10, status="succeeded", before=4)] == [1]
    assert await store.webhooks.deliveries("wh_1", limit=10, status="canceled") == []


async def test_concurrent_creations_never_exceed_the_per_actor_limit(store: Store) -> None:
    created = await asyncio.gather(
        *(store.webhooks.create(endpoint(f"wh_{n:02d}"), limit=16) for n in range(40)),
        store.webhooks.create(endpoint("wh_other", actor="other.near"), limit=16),
    )
    assert sum(created) == 17 and created[-1]
    assert len(await store.webhooks.of_actor("shop.near")) == 16
    assert await store.webhooks.create(endpoint("wh_nolimit"))  # the engine's and an upgrade's: no limit


async def test_a_canceled_delivery_lets_its_thread_go_on_and_its_holder_records_nothing(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 2, [delivery(1), delivery(2)])
    [held] = await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 8))

    canceled = await store.webhooks.cancel(held.id)
    assert canceled is not None and (canceled.status, canceled.lease_owner) == ("canceled", None)
    assert await store.webhooks.cancel(held.id) is None  # no longer pending
    assert await store.webhooks.cancel("whd_nothing") is None
    assert not await store.webhooks.finish(replace(held, status="succeeded"), "inst_a")
    assert (await store.webhooks.get_delivery(held.id)).status == "canceled"  # type: ignore[union-attr]
    assert [d.gid for d in await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 8))] == [2]


async def test_hasten_makes_waiting_retries_due_at_once(store: Store) -> None:
    await store.webhooks.create(endpoint())
    later = [replace(delivery(gid, f"t{gid}"), next_attempt_at=NOW + 600) for gid in (1, 2)]
    done = replace(delivery(3, "t3"), status="succeeded", next_attempt_at=NOW + 600)
    await store.webhooks.advance("wh_1", 0, 3, [*later, done])
    assert await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 8)) == []

    assert await store.webhooks.hasten("wh_1", NOW) == 2  # the finished one is left alone
    assert await store.webhooks.next_due("wh_1") == NOW
    assert [d.gid for d in await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 8))] == [1, 2]


async def test_a_stopping_instance_releases_its_leases_only(store: Store) -> None:
    await store.webhooks.create(endpoint())
    await store.webhooks.advance("wh_1", 0, 3, [delivery(gid, f"t{gid}") for gid in (1, 2, 3)])
    [mine] = await store.webhooks.claim("wh_1", Claim("inst_a", NOW, NOW + LEASE, 1))
    [theirs] = await store.webhooks.claim("wh_1", Claim("inst_b", NOW, NOW + LEASE, 1))

    assert await store.webhooks.release("inst_a", ["wh_1"]) == 1
    assert not await store.webhooks.finish(replace(mine, status="succeeded"), "inst_a")  # it let go
    again = await store.webhooks.claim("wh_1", Claim("inst_c", NOW, NOW + LEASE, 8))
    assert sorted(d.gid for d in again) == sorted([mine.gid, 3])  # at once, not a lease later
    assert (await store.webhooks.get_delivery(theirs.id)).lease_owner == "inst_b"  # type: ignore[union-attr]
