"""How the embedded store runs its operations on one SQLite file in WAL mode: two connections, the event
loop and a store thread, group commit and WAL checkpoints.

Durability: `synchronous=FULL` by default, so a commit, and the answer to the request behind it, survives
a power failure or an OS crash: each commit fsyncs the WAL (a fraction of a ms on an SSD), once per group
of appends (below). `sqlite:///path.db?synchronous=normal` keeps SQLite's NORMAL instead: commits append to
the WAL without an fsync and only checkpoints sync, so the last commits before a power failure or OS crash
may be lost (never to a crash of the process alone), and the file stays consistent either way.

Every operation is one function of a connection. It runs on the event loop, on a connection that never
waits for a lock: its operations are a few indexed rows in the page cache, plus the commit's fsync under
FULL. What can wait runs on a dedicated store thread with its own connection instead:
- an operation that finds the file locked by another process (SQLITE_BUSY at once: busy timeout 0) is
  retried there with a 30 s busy timeout;
- operations of unbounded size (deleting a thread, purging expired records) always run there;
- so do the WAL checkpoints (the loop's connection never checkpoints). A checkpoint holds the write lock
  for a few ms; writes that meet it wait for it asynchronously, then run on the loop.

Why not everything on the thread: the GIL. A statement releases it around each SQLite call and must take
it back from an event loop busy serving requests, so a 50 µs write took ~450 µs of wall time there and
the store thread, 90% busy while using a third of a core, bounded ingest at ~1,000 requests/s. On the
loop the same POST costs half the CPU (bench/ingest.py, docs/performance.md).

Message appends and thread creations that arrive in the same event-loop turn share one transaction (group
commit), each in its own savepoint: the pages they all touch are written to the WAL once per batch (server
CPU per text POST ~550 -> ~400 µs under 32 concurrent clients).

Writes use `BEGIN IMMEDIATE` so that several processes sharing the file allocate sequence numbers safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

Op = Callable[[sqlite3.Connection], T]

# Every this many commits (~9 pages for a message alone; a shared commit writes the pages its messages share
# once: about SQLite's own 1,000-page autocheckpoint), the store thread checkpoints the WAL in RESTART mode:
# it holds the write lock for the few ms it takes, so the log starts again from its beginning and stays
# small. A PASSIVE checkpoint racing a steady stream of writes never catches up with the end of the log:
# the log then grows without bound and every read and write pays for it (measured: a third of ingest
# throughput). The loop's writes that find the lock held by our own checkpoint wait for it asynchronously,
# then run on the loop again. (Counting each message of a shared commit instead checkpointed ~5x as often
# under load and cost a tenth of text ingest.)
CHECKPOINT_EVERY = 110
# how long the checkpoint waits for other processes' readers and writers before doing what it can
CHECKPOINT_BUSY_MS = 100


BUSY_TIMEOUT_MS = 30_000  # the store thread's wait for a lock held by another process

# `?synchronous=` on the store URL: SQLite's PRAGMA synchronous, on both connections (see the module docstring)
SYNCHRONOUS_MODES = ("full", "normal")
DEFAULT_SYNCHRONOUS = "full"


def _each_in_savepoint(conn: sqlite3.Connection, ops: Sequence[Op[Any]]) -> list[tuple[Exception | None, Any]]:
    """Run each op in its own savepoint: (None, its result), or (its exception, None) with its writes undone."""
    outcomes: list[tuple[Exception | None, Any]] = []
    for op in ops:
        conn.execute("SAVEPOINT op")
        try:
            outcomes.append((None, op(conn)))
        except Exception as exc:
            conn.execute("ROLLBACK TO op")
            outcomes.append((exc, None))
        conn.execute("RELEASE op")
    return outcomes


def _locked(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class SQLiteEngine:
    """The connections to one SQLite file and where each operation runs on them (see the module docstring)."""

    def __init__(self, path: str, synchronous: str) -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"sqlite synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {synchronous!r}")
        self.path = path
        self.synchronous = synchronous
        self._executor: ThreadPoolExecutor | None = None
        self._loop_conn: sqlite3.Connection | None = None  # used on the event loop; never waits
        self._thread_conn: sqlite3.Connection | None = None  # used on the store thread; waits for locks
        self._commits_since_checkpoint = 0
        self._checkpoint: asyncio.Future[Any] | None = None
        self._batch: list[tuple[Op[Any], asyncio.Future[Any]]] = []  # writes waiting to share a commit
        self._batch_tasks: set[asyncio.Task[None]] = set()

    async def open(self, schema: str) -> None:
        if self._executor is not None:
            return
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aitp-sqlite")

        def connect(timeout: float) -> sqlite3.Connection:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=timeout)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            # FULL: each commit fsyncs the WAL; NORMAL: only checkpoints do (durable across process crashes only)
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            conn.execute("PRAGMA foreign_keys=ON")
            return conn

        def connect_both() -> None:
            thread_conn = connect(timeout=BUSY_TIMEOUT_MS / 1000)
            thread_conn.executescript(schema)
            if self.path == ":memory:":
                self._loop_conn = thread_conn  # a second connection would be a second database
                return
            self._thread_conn = thread_conn
            self._loop_conn = connect(timeout=0)
            self._loop_conn.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints fsync: the thread does them

        await asyncio.get_running_loop().run_in_executor(self._executor, connect_both)

    async def close(self) -> None:
        if self._executor is None:
            return
        if self._batch_tasks:  # appends under way: let them commit and answer their callers
            await asyncio.gather(*self._batch_tasks, return_exceptions=True)
        if self._checkpoint is not None:
            with contextlib.suppress(Exception):
                await self._checkpoint

        def disconnect() -> None:
            for conn in (self._loop_conn, self._thread_conn):
                if conn is not None:
                    conn.close()  # the last connection to close checkpoints the WAL
            self._loop_conn = self._thread_conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, disconnect)
        self._executor.shutdown(wait=True)
        self._executor = None

    @property
    def is_open(self) -> bool:
        return self._loop_conn is not None

    async def run(self, op: Op[T], *, may_wait: bool = False) -> T:
        """Run `op` on the loop's connection, or on the store thread when it may wait (see the module
        docstring): because it is unbounded, or because another connection holds the write lock."""
        conn = self._loop_conn
        if conn is None:
            raise RuntimeError("store is not open")
        if self._thread_conn is None:  # an in-memory database: one connection, nothing else can lock it
            return op(conn)
        while not may_wait:
            try:
                return op(conn)
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
            if self._checkpoint is None:
                break  # another process (or a write queued on the thread) holds the lock: wait on the thread
            await asyncio.wait([self._checkpoint])  # our own checkpoint: a few ms, then try again here
        return await asyncio.get_running_loop().run_in_executor(self._executor, op, self._thread_conn)

    @staticmethod
    def _transaction(op: Op[T]) -> Op[T]:
        """`op` inside one IMMEDIATE transaction."""

        def run(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")  # outside the try: a locked file raises before anything ran
            try:
                result = op(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        return run

    async def write(self, op: Op[T], *, may_wait: bool = False) -> T:
        result = await self.run(self._transaction(op), may_wait=may_wait)
        self._commits_since_checkpoint += 1
        if self._commits_since_checkpoint >= CHECKPOINT_EVERY and self._checkpoint is None and self._thread_conn:
            self._commits_since_checkpoint = 0
            self._checkpoint = asyncio.get_running_loop().run_in_executor(self._executor, self._checkpoint_wal)
            self._checkpoint.add_done_callback(self._checkpoint_done)
        return result

    def _checkpoint_wal(self) -> None:
        conn = self._thread_conn
        if conn is None:
            return
        conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_BUSY_MS}")
        try:
            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def _checkpoint_done(self, done: asyncio.Future[Any]) -> None:
        self._checkpoint = None
        if not done.cancelled() and done.exception() is not None:
            log.warning("sqlite: WAL checkpoint failed: %s", done.exception())

    async def write_shared(self, op: Op[T]) -> T:
        """As `write`, but the op shares one transaction with the others that arrive in the same event-loop
        turn (group commit): each in its own savepoint, so one that fails leaves the others' writes, and
        each caller gets its own result or exception once the transaction has committed. A commit writes
        every page it touched to the WAL; the pages a batch's appends share (the thread's row, the index
        pages they end on) are written once per batch, not once per message."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._batch.append((op, future))
        if len(self._batch) == 1:  # the first of this turn: the batch commits after the turn's ready tasks
            task = asyncio.get_running_loop().create_task(self._commit_batch())
            self._batch_tasks.add(task)  # the loop keeps only weak references to tasks
            task.add_done_callback(self._batch_tasks.discard)
        return await future

    async def _commit_batch(self) -> None:
        batch, self._batch = self._batch, []
        ops = [op for op, _ in batch]
        try:
            outcomes = await self.write(ops[0] if len(ops) == 1 else lambda conn: _each_in_savepoint(conn, ops))
        except BaseException as exc:  # the transaction itself failed: nothing was written
            for _, future in batch:
                if future.done():
                    continue
                if isinstance(exc, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        if len(ops) == 1:
            outcomes = [(None, outcomes)]
        for (_, future), (error, value) in zip(batch, outcomes, strict=True):
            if future.done():  # its caller was cancelled; what it wrote is committed all the same
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
