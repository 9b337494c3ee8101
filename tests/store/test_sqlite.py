"""The embedded store's own promises, beyond the shared contract: its operations run on the event loop,
yet nothing waits there — a locked file, an unbounded operation and WAL checkpoints go to the store thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from aitp.store import sqlite as sqlite_store
from aitp.store.sqlite import SQLiteStore

from tests.store.test_contract import ev, message_rec, thread_rec


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "aitp.db")
    await store.open()
    yield store
    await store.close()


@contextmanager
def write_lock_held_elsewhere(path: str) -> Iterator[sqlite3.Connection]:
    """Another connection (as another process would) holding the write lock until the block ends."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        other.execute("COMMIT")
        other.close()


class Ticker:
    """Counts event-loop iterations while it runs: a blocked loop stops counting."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.005)
            self.ticks += 1

    def stop(self) -> None:
        self._task.cancel()


async def new_thread(store: SQLiteStore) -> str:
    thread = thread_rec()
    await store.create_thread(thread, [], ev("thread.created"), [])
    return thread.id


async def test_a_write_waits_for_a_lock_held_by_another_process_without_blocking_the_loop(store: SQLiteStore) -> None:
    thread_id = await new_thread(store)
    ticker = Ticker()
    with write_lock_held_elsewhere(store.path):
        pending = asyncio.create_task(store.append_message(message_rec(thread_id), ev("thread.message.created")))
        await asyncio.sleep(0.3)
        assert not pending.done()  # waiting for the lock, on the store thread
        assert ticker.ticks >= 20  # and the loop went on meanwhile (0.3 s / 5 ms = 60 at most)
    stored = await asyncio.wait_for(pending, 10)
    ticker.stop()
    assert stored is not None and stored.seq == 2
    assert [m.seq for m in await store.list_messages(thread_id, limit=10, order="asc")] == [2]


async def test_reads_answer_at_once_while_another_process_holds_the_write_lock(store: SQLiteStore) -> None:
    thread_id = await new_thread(store)
    await store.append_message(message_rec(thread_id, "committed"), ev("thread.message.created"))
    with write_lock_held_elsewhere(store.path) as other:
        other.execute("UPDATE threads SET last_seq = 99 WHERE id = ?", (thread_id,))  # not committed yet
        found = await asyncio.wait_for(store.get_thread_with_actors(thread_id), 1)
        assert found is not None and found[0].last_seq == 2  # the last committed state
        messages = await store.list_messages(thread_id, limit=10, order="asc")
        assert [m.content[0]["text"]["value"] for m in messages] == ["committed"]
        other.execute("UPDATE threads SET last_seq = 2 WHERE id = ?", (thread_id,))


async def test_deleting_a_thread_runs_on_the_store_thread(store: SQLiteStore) -> None:
    # deleting a thread's whole log is unbounded work: it queues for the lock rather than trying on the loop
    thread_id = await new_thread(store)
    ticker = Ticker()
    with write_lock_held_elsewhere(store.path):
        pending = asyncio.create_task(store.delete_thread(thread_id, ev("thread.deleted")))
        await asyncio.sleep(0.2)
        assert not pending.done()
        assert ticker.ticks >= 10
    assert await asyncio.wait_for(pending, 10) is not None
    ticker.stop()
    assert await store.get_thread(thread_id) is None


async def test_the_wal_is_checkpointed_by_the_store_thread(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_EVERY", 20)
    thread_id = await new_thread(store)
    for i in range(300):
        await store.append_message(message_rec(thread_id, f"m{i}"), ev("thread.message.created"))
    while store._checkpoint is not None:  # let the last one finish
        await asyncio.sleep(0.01)
    await store.append_message(message_rec(thread_id, "after"), ev("thread.message.created"))
    probe = sqlite3.connect(store.path)
    try:
        probe.execute("SELECT COUNT(*) FROM threads").fetchone()  # opens the database (and its WAL)
        # (busy, frames in the WAL now, frames checkpointed): the WAL restarted after a checkpoint,
        # so it holds about the last 20 commits, not 300 (each commit writes several pages)
        _, frames, _ = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        probe.close()
    assert 0 < frames < 300
    assert len(await store.list_messages(thread_id, limit=100, order="asc")) == 100


async def test_an_in_memory_database_is_one_connection(tmp_path: Path) -> None:
    store = SQLiteStore(":memory:")
    await store.open()
    try:
        thread_id = await new_thread(store)
        await store.append_message(message_rec(thread_id), ev("thread.message.created"))
        assert await store.delete_thread(thread_id, ev("thread.deleted")) is not None
        assert await store.get_thread(thread_id) is None
    finally:
        await store.close()
