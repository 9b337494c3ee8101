"""Store-wide positions on MongoDB (`aitp.store.mongo.positions`): each instance issues its own, and a reader
reads below the safe point, under which nothing can still commit. Two issuers on one database stand for two
instances; a position held open stands for a transaction that has not committed yet."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from aitp.store.mongo import positions as module
from aitp.store.mongo.positions import Positions
from tests.conftest import Backend


@pytest.fixture
async def database(mongo_backend: Backend) -> Any:
    """A MongoDB database (SQLite numbers events in its one writer's commit order: nothing of this there)."""
    backend = mongo_backend
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(backend.url)
    try:
        yield client.get_default_database()
    finally:
        await client.close()


async def started(db: Any) -> Positions:
    issuer = Positions()
    await issuer.start(db)
    return issuer


async def until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not await condition():
            await asyncio.sleep(0.01)


async def test_positions_increase_and_two_instances_never_issue_the_same(database: Any) -> None:
    a, b = await started(database), await started(database)
    try:
        assert a.slot != b.slot
        issued = [a.issue() for _ in range(1000)] + [b.issue() for _ in range(1000)]
        assert len(set(issued)) == 2000
        assert issued[:1000] == sorted(issued[:1000]) and issued[1000:] == sorted(issued[1000:])
        assert min(issued) > 2**40  # above every gid a counter-numbered store holds
    finally:
        await a.stop()
        await b.stop()


async def test_the_safe_point_stays_below_a_position_another_instance_has_not_committed(database: Any) -> None:
    a, b = await started(database), await started(database)
    try:
        late = a.issue()  # a's transaction, still open
        await asyncio.sleep(2 * module.HEARTBEAT)  # a has published a mark that holds it
        committed = b.issue()
        b.release([committed])  # b's later event commits first
        assert committed > late
        for _ in range(5):
            assert await b.safe_point() <= late  # a reader at b must not pass the open one
            await asyncio.sleep(module.HEARTBEAT)
        a.release([late])  # now it commits (or aborts)
        await until(lambda: _above(b, committed))  # within a heartbeat of a's, both are readable
    finally:
        await a.stop()
        await b.stop()


async def _above(issuer: Positions, position: int) -> bool:
    return await issuer.safe_point() > position


async def test_an_instance_that_stopped_holds_nothing_back(database: Any) -> None:
    a, b = await started(database), await started(database)
    held = a.issue()
    await asyncio.sleep(2 * module.HEARTBEAT)
    await a.stop()  # a clean stop frees its slot: the open position was never committed
    try:
        assert await b.safe_point() > held
    finally:
        await b.stop()


async def test_a_transaction_does_not_commit_when_its_lease_is_nearly_out(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await started(database)
    try:
        a.check_lease()  # a fresh lease: fine
        monkeypatch.setattr(module, "COMMIT_MARGIN", module.LEASE + 1)
        with pytest.raises(module.LeaseLost):
            a.check_lease()
    finally:
        await a.stop()


async def test_a_crashed_instance_holds_the_safe_point_back_until_its_lease_ends(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "LEASE", 0.5)
    a, b = await started(database), await started(database)
    held = a.issue()  # a transaction open when its instance dies
    await asyncio.sleep(2 * module.HEARTBEAT)
    assert a._task is not None
    a._task.cancel()  # killed: no more heartbeats, no clean stop, the slot still named
    try:
        assert await b.safe_point() <= held
        await until(lambda: _above(b, held), timeout=3)  # the lease ran out: nothing of a's can commit now
    finally:
        await b.stop()
