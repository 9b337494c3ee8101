"""The embedded store's own promises, beyond the shared contract: its operations run on the event loop,
yet nothing waits there — a locked file, an unbounded operation and WAL checkpoints go to the store thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from aitp.store import open_store
from aitp.store.base import DuplicateRef
from aitp.store.sqlite import SQLiteStore
from aitp.store.sqlite import engine as sqlite_engine
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.transaction import Tx
from tests.store.test_contract import actor_rec, ev, message_rec, ref_rec, thread_rec


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


@pytest.fixture
def count_transactions(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[Any]]:
    """Call to start counting: the transactions the store's engine commits from then on (a group commit
    counts once)."""

    def start() -> list[Any]:
        committed: list[Any] = []
        write = store.engine.write

        async def counted(op: Any, **options: Any) -> Any:
            committed.append(op)
            return await write(op, **options)

        monkeypatch.setattr(store.engine, "write", counted)
        return committed

    return start


async def new_thread(store: SQLiteStore) -> str:
    """A thread whose actor is alice, who writes the messages `message_rec` makes."""
    thread = thread_rec()
    await store.create_thread(thread, [actor_rec(thread.id, "alice")], ev("thread.created"), [])
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


async def test_the_wal_stays_bounded_under_steady_writes(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # the loop's connection never checkpoints: the store thread does, and the log restarts after each one
    monkeypatch.setattr(sqlite_engine, "CHECKPOINT_EVERY", 20)
    thread_id = await new_thread(store)
    wal = Path(store.path + "-wal")
    for i in range(400):
        await store.append_message(message_rec(thread_id, f"m{i}"), ev("thread.message.created"))
        await asyncio.sleep(0.001)  # a server waits for its clients: the store thread gets its turn
    while store.engine._checkpoint is not None:  # let the last one finish
        await asyncio.sleep(0.01)
    # 400 commits write ~3,600 pages (14 MB) to the log: without checkpoints it would hold them all;
    # its file keeps its largest size, about what 20 commits (and those during a checkpoint) write
    assert wal.stat().st_size < 2 * 1024 * 1024
    assert len(await store.list_messages(thread_id, limit=1000, order="asc")) == 400


async def test_writes_that_meet_a_checkpoint_wait_for_it_then_land(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_engine, "CHECKPOINT_EVERY", 2)  # commits: concurrent appends share them
    checkpoints = []
    real_checkpoint = SQLiteEngine._checkpoint_wal

    def slow_checkpoint(self: SQLiteEngine) -> None:  # holds the write lock for 50 ms, as a big one would
        assert self._thread_conn is not None
        self._thread_conn.execute("BEGIN IMMEDIATE")
        time.sleep(0.05)
        self._thread_conn.execute("COMMIT")
        real_checkpoint(self)
        checkpoints.append(1)

    monkeypatch.setattr(SQLiteEngine, "_checkpoint_wal", slow_checkpoint)
    assert store.engine._executor is not None
    submit = store.engine._executor.submit
    on_thread: list[str] = []

    def record(fn: Any, *args: Any) -> Any:
        on_thread.append(getattr(fn, "__name__", repr(fn)))
        return submit(fn, *args)

    monkeypatch.setattr(store.engine._executor, "submit", record)
    thread_id = await new_thread(store)
    ticker = Ticker()

    async def writer(name: str) -> None:
        for i in range(10):
            await store.append_message(message_rec(thread_id, f"{name}{i}"), ev("thread.message.created"))
            await asyncio.sleep(0.002)

    await asyncio.wait_for(asyncio.gather(*(writer(f"w{n}-") for n in range(10))), 30)
    ticker.stop()
    assert len(checkpoints) >= 3  # 100 writes every ~2 ms met 50 ms checkpoints: they waited, none failed
    assert ticker.ticks >= 20  # the loop went on meanwhile
    assert set(on_thread) == {"slow_checkpoint"}  # and every write ran on the loop, after waiting
    messages = await store.list_messages(thread_id, limit=1000, order="asc")
    assert [m.seq for m in messages] == list(range(2, 102))


async def test_appends_arriving_together_share_one_commit(
    store: SQLiteStore, count_transactions: Callable[[], list[Any]]
) -> None:
    thread_id = await new_thread(store)
    transactions = count_transactions()
    stored = await asyncio.gather(
        *(store.append_message(message_rec(thread_id, f"m{i}"), ev("thread.message.created")) for i in range(8))
    )
    assert [e.seq for e in stored if e is not None] == list(range(2, 10))  # in the order they were made
    assert len(transactions) == 1
    assert [m.content[0]["text"]["value"] for m in await store.list_messages(thread_id, limit=20, order="asc")] == [
        f"m{i}" for i in range(8)
    ]


async def test_an_append_that_fails_in_a_shared_commit_leaves_the_others(store: SQLiteStore) -> None:
    thread_id = await new_thread(store)
    first = message_rec(thread_id, "answer")
    await store.append_message(first, ev("thread.message.created"), [ref_rec(thread_id, "decision", "r1", first)])
    messages = [message_rec(thread_id, f"m{i}") for i in range(5)]
    refs = [[ref_rec(thread_id, "decision", "r1", m)] if i == 2 else [] for i, m in enumerate(messages)]
    outcomes = await asyncio.gather(
        *(store.append_message(m, ev("thread.message.created"), r) for m, r in zip(messages, refs, strict=True)),
        return_exceptions=True,
    )
    assert isinstance(outcomes[2], DuplicateRef)
    assert [o.seq for o in outcomes if not isinstance(o, BaseException) and o is not None] == [3, 4, 5, 6]
    stored = await store.list_messages(thread_id, limit=20, order="asc")
    assert [m.id for m in stored] == [first.id] + [m.id for i, m in enumerate(messages) if i != 2]
    events = await store.list_events(thread_id, after=0, limit=20)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]  # nothing of the refused one, no gap


async def test_threads_created_together_share_one_commit_and_a_refused_one_leaves_the_others(
    store: SQLiteStore, count_transactions: Callable[[], list[Any]]
) -> None:
    thread_id = await new_thread(store)
    transactions = count_transactions()
    threads = [thread_rec() for _ in range(4)]
    first = [message_rec(thread.id, "first") for thread in threads]
    refs = [[ref_rec(t.id, "decision", "r1", m)] for t, m in zip(threads, first, strict=True)]
    refs[1] = refs[1] * 2  # the second thread names its ref twice
    outcomes = await asyncio.gather(
        store.append_message(message_rec(thread_id, "beside"), ev("thread.message.created")),
        *(
            store.create_thread(
                t, [actor_rec(t.id, "alice")], ev("thread.created"), [(m, ev("thread.message.created"))], r
            )
            for t, m, r in zip(threads, first, refs, strict=True)
        ),
        return_exceptions=True,
    )
    assert len(transactions) == 1  # the append and the four creations: one commit
    assert isinstance(outcomes[2], DuplicateRef)  # the second thread repeats its ref: refused, alone
    assert await store.get_thread(threads[1].id) is None
    assert await store.list_events(threads[1].id, after=0, limit=10) == []
    for thread in (threads[0], threads[2], threads[3]):
        assert [m.content[0]["text"]["value"] for m in await store.list_messages(thread.id, limit=5, order="asc")] == [
            "first"
        ]
    assert [m.content[0]["text"]["value"] for m in await store.list_messages(thread_id, limit=5, order="asc")] == [
        "beside"
    ]


async def test_a_shared_commit_waits_on_the_thread_for_another_process_lock(store: SQLiteStore) -> None:
    thread_id = await new_thread(store)
    with write_lock_held_elsewhere(store.path):
        pending = asyncio.gather(
            *(store.append_message(message_rec(thread_id, f"m{i}"), ev("thread.message.created")) for i in range(4))
        )
        await asyncio.sleep(0.2)
        assert not pending.done()
    assert [e.seq for e in await asyncio.wait_for(pending, 10)] == [2, 3, 4, 5]


async def test_closing_lets_the_appends_under_way_commit(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "closing.db")
    await store.open()
    thread_id = await new_thread(store)
    pending = asyncio.gather(
        *(store.append_message(message_rec(thread_id, f"m{i}"), ev("thread.message.created")) for i in range(3))
    )
    await asyncio.sleep(0)  # they are waiting for their shared commit
    await store.close()
    assert [e.seq for e in await pending] == [2, 3, 4]
    reopened = SQLiteStore(tmp_path / "closing.db")
    await reopened.open()
    try:
        assert len(await reopened.list_messages(thread_id, limit=10, order="asc")) == 3
    finally:
        await reopened.close()


async def test_a_transaction_body_may_await_only_its_transaction(store: SQLiteStore) -> None:
    # SQLite runs a body to its end in one go, on the loop or on the store thread: one that waits for
    # anything else is refused, and what it wrote is rolled back
    thread_id = await new_thread(store)

    async def body(tx: Tx) -> None:
        await tx.append_event(thread_id, ev("thread.message.refused"))
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="awaited something other than its Tx"):
        await store.transaction(body)
    assert [e.seq for e in await store.list_events(thread_id, after=0, limit=10)] == [1]


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


# --- durability: PRAGMA synchronous --------------------------------------------------------------

SYNCHRONOUS_VALUES = {0: "off", 1: "normal", 2: "full", 3: "extra"}


async def synchronous_in_effect(store: SQLiteStore) -> tuple[str, str]:
    """PRAGMA synchronous as each connection sees it: the loop's, and the store thread's (read on that thread)."""
    engine = store.engine
    assert engine._loop_conn is not None and engine._thread_conn is not None and engine._executor is not None
    thread_conn = engine._thread_conn
    on_loop = engine._loop_conn.execute("PRAGMA synchronous").fetchone()[0]
    on_thread = await asyncio.get_running_loop().run_in_executor(
        engine._executor, lambda: thread_conn.execute("PRAGMA synchronous").fetchone()[0]
    )
    return SYNCHRONOUS_VALUES[on_loop], SYNCHRONOUS_VALUES[on_thread]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("", "full"), ("?synchronous=full", "full"), ("?synchronous=normal", "normal"), ("?synchronous=NORMAL", "normal")],
)
async def test_synchronous_is_full_unless_the_url_asks_for_normal_on_both_connections(
    tmp_path: Path, query: str, expected: str
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'aitp.db'}{query}")
    assert isinstance(store, SQLiteStore)
    assert store.path == str(tmp_path / "aitp.db")
    await store.open()
    try:
        assert await synchronous_in_effect(store) == (expected, expected)
        thread_id = await new_thread(store)  # and the store works in that mode
        message = message_rec(thread_id)
        assert await store.append_message(message, ev("thread.message.created")) is not None
    finally:
        await store.close()


async def test_a_directly_built_store_is_full_too(store: SQLiteStore) -> None:
    assert await synchronous_in_effect(store) == ("full", "full")


@pytest.mark.parametrize(
    "query", ["?synchronous=off", "?synchronous=", "?synchronous=extra", "?durability=full", "?synchronous=full&x=1"]
)
def test_other_sqlite_url_options_are_refused(tmp_path: Path, query: str) -> None:
    with pytest.raises(ValueError, match="sqlite URL"):
        open_store(f"sqlite:///{tmp_path / 'aitp.db'}{query}")
