"""The embedded store: one SQLite file in WAL mode, the zero-setup default.

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
loop the same POST costs half the CPU (bench/ingest.py, README "Performance").

Message appends that arrive in the same event-loop turn share one transaction (group commit), each in
its own savepoint: the pages they all touch are written to the WAL once per batch (server CPU per text
POST ~550 -> ~400 µs under 32 concurrent clients).

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
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    NewEvent,
    Page,
    RefRelease,
    Store,
    ThreadRecord,
    capability_version_document,
    capability_version_from_document,
)
from aitp.store.transaction import Body, Tx

T = TypeVar("T")
log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    creator TEXT NOT NULL,
    metadata TEXT NOT NULL,
    parent_id TEXT,
    tool_resources TEXT,
    last_seq INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS thread_actors (
    thread_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    client_id TEXT,
    capabilities TEXT NOT NULL,
    joined_at INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (thread_id, actor_id)
);
CREATE INDEX IF NOT EXISTS thread_actors_by_actor ON thread_actors (actor_id, thread_id);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    attachments TEXT NOT NULL,
    metadata TEXT NOT NULL,
    aitp TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_thread_seq ON messages (thread_id, seq);
CREATE TABLE IF NOT EXISTS events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_thread_seq ON events (thread_id, seq);
CREATE TABLE IF NOT EXISTS event_audience (
    actor_id TEXT NOT NULL,
    gid INTEGER NOT NULL,
    PRIMARY KEY (actor_id, gid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS capability_refs (
    thread_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    ref_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, kind, ref_id)
);
CREATE INDEX IF NOT EXISTS capability_refs_by_message ON capability_refs (message_id);
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    actor TEXT NOT NULL,
    admin INTEGER NOT NULL,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    prefix TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS capability_versions (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    version TEXT NOT NULL,
    document TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    UNIQUE (id, version)
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    status INTEGER,
    body TEXT,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);
"""


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _thread(row: sqlite3.Row) -> ThreadRecord:
    return ThreadRecord(
        id=row["id"],
        created_at=row["created_at"],
        creator=row["creator"],
        metadata=_loads(row["metadata"]),
        parent_id=row["parent_id"],
        tool_resources=_loads(row["tool_resources"]),
        last_seq=row["last_seq"],
    )


def _actor(row: sqlite3.Row) -> ActorRecord:
    return ActorRecord(
        thread_id=row["thread_id"],
        id=row["actor_id"],
        client_id=row["client_id"],
        capabilities=_loads(row["capabilities"]),
        joined_at=row["joined_at"],
    )


def _message(row: sqlite3.Row) -> MessageRecord:
    return MessageRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        seq=row["seq"],
        created_at=row["created_at"],
        actor=row["actor"],
        role=row["role"],
        content=_loads(row["content"]),
        attachments=_loads(row["attachments"]),
        metadata=_loads(row["metadata"]),
        aitp=_loads(row["aitp"]),
    )


def _event(row: sqlite3.Row) -> EventRecord:
    return EventRecord(
        gid=row["gid"],
        thread_id=row["thread_id"],
        seq=row["seq"],
        type=row["type"],
        created_at=row["created_at"],
        data=_loads(row["data"]),
    )


def _capability_version(row: sqlite3.Row) -> CapabilityVersionRecord:
    return capability_version_from_document(row["document"], row["created_at"], row["created_by"])


def _idempotency(row: sqlite3.Row) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=row["scope"],
        key=row["key"],
        fingerprint=row["fingerprint"],
        token=row["token"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        status=row["status"],
        body=row["body"],
    )


def _key(row: sqlite3.Row) -> KeyRecord:
    return KeyRecord(
        id=row["id"],
        hash=row["hash"],
        actor=row["actor"],
        admin=bool(row["admin"]),
        scopes=_loads(row["scopes"]),
        created_at=row["created_at"],
        prefix=row["prefix"],
    )


def _ref(row: sqlite3.Row) -> CapabilityRef:
    return CapabilityRef(
        thread_id=row["thread_id"],
        kind=row["kind"],
        ref_id=row["ref_id"],
        message_id=row["message_id"],
        actor=row["actor"],
        body=_loads(row["body"]),
    )


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
MAX_PARAMS = 500  # values bound in one statement (SQLite allows 32,766 since 3.32, 999 before)

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


def _live_thread(conn: sqlite3.Connection, thread_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM threads WHERE id = ? AND deleted = 0", (thread_id,)).fetchone()


def _actors(conn: sqlite3.Connection, thread_id: str) -> list[ActorRecord]:
    rows = conn.execute("SELECT * FROM thread_actors WHERE thread_id = ? ORDER BY position", (thread_id,))
    return [_actor(r) for r in rows]


def _message_row(conn: sqlite3.Connection, thread_id: str, message_id: str) -> MessageRecord | None:
    row = conn.execute("SELECT * FROM messages WHERE id = ? AND thread_id = ?", (message_id, thread_id)).fetchone()
    return None if row is None else _message(row)


def _within(column: str, page: Page[Any]) -> tuple[str, list[Any]]:
    """The conditions (`AND ...`) and values that keep `column` strictly between the page's cursors."""
    where, values = "", []
    for operator, bound in ((">", page.above), ("<", page.below)):
        if bound is not None:
            where += f" AND {column} {operator} ?"
            values.append(bound)
    return where, values


def _direction(page: Page[Any]) -> str:
    return "ASC" if page.ascending else "DESC"


def _run_body(body: Body[T], conn: sqlite3.Connection) -> T:
    """Run a transaction body to its end at once, on this thread: `SQLiteTx`'s primitives are plain calls
    on the connection and never suspend, so the body's coroutine finishes on its first step."""
    coroutine = body(SQLiteTx(conn))
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("a SQLite transaction body awaited something other than its Tx")


class SQLiteTx(Tx):
    """The primitives on a connection inside BEGIN IMMEDIATE: one writer at a time, across processes too."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def insert_thread(self, thread: ThreadRecord, actors: Sequence[ActorRecord]) -> None:
        self.conn.execute(
            "INSERT INTO threads (id, created_at, creator, metadata, parent_id, tool_resources, last_seq)"
            " VALUES (?, ?, ?, ?, ?, ?, 0)",
            (
                thread.id,
                thread.created_at,
                thread.creator,
                _dumps(thread.metadata),
                thread.parent_id,
                None if thread.tool_resources is None else _dumps(thread.tool_resources),
            ),
        )
        self.conn.executemany(
            "INSERT INTO thread_actors (thread_id, actor_id, client_id, capabilities, joined_at, position)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(a.thread_id, a.id, a.client_id, _dumps(a.capabilities), a.joined_at, i) for i, a in enumerate(actors)],
        )

    async def thread_is_live(self, thread_id: str) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM threads WHERE id = ? AND deleted = 0", (thread_id,)).fetchone() is not None
        )

    async def update_thread(self, thread_id: str, changes: dict[str, Any]) -> ThreadRecord | None:
        for column in ("metadata", "tool_resources"):
            if column in changes:
                value = changes[column]
                self.conn.execute(
                    f"UPDATE threads SET {column} = ? WHERE id = ? AND deleted = 0",
                    (None if value is None else _dumps(value), thread_id),
                )
        row = _live_thread(self.conn, thread_id)
        return None if row is None else _thread(row)

    async def clear_thread(self, thread_id: str) -> None:
        conn = self.conn
        conn.execute("DELETE FROM messages WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM thread_actors WHERE thread_id = ?", (thread_id,))
        conn.execute(
            "DELETE FROM event_audience WHERE gid IN (SELECT gid FROM events WHERE thread_id = ?)", (thread_id,)
        )
        conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM capability_refs WHERE thread_id = ?", (thread_id,))
        conn.execute(
            "UPDATE threads SET deleted = 1, metadata = '{}', tool_resources = NULL WHERE id = ?", (thread_id,)
        )

    async def actors(self, thread_id: str) -> list[ActorRecord]:
        return _actors(self.conn, thread_id)

    async def is_member(self, thread_id: str, actor_id: str) -> bool:
        member = "SELECT 1 FROM thread_actors WHERE thread_id = ? AND actor_id = ?"
        return self.conn.execute(member, (thread_id, actor_id)).fetchone() is not None

    async def take_seat(self, thread_id: str, members: int, limit: int | None) -> bool:
        # `members` was counted inside BEGIN IMMEDIATE: no other join, of this process or another, writes
        # before this transaction ends
        return limit is None or members < limit

    async def free_seat(self, thread_id: str, members: int) -> None:
        pass  # the actors' rows are the count

    async def insert_actor(self, actor: ActorRecord) -> None:
        self.conn.execute(
            "INSERT INTO thread_actors (thread_id, actor_id, client_id, capabilities, joined_at, position)"
            " SELECT ?, ?, ?, ?, ?, COALESCE(MAX(position), -1) + 1 FROM thread_actors WHERE thread_id = ?",
            (actor.thread_id, actor.id, actor.client_id, _dumps(actor.capabilities), actor.joined_at, actor.thread_id),
        )

    async def update_actor(self, actor: ActorRecord) -> None:
        self.conn.execute(
            "UPDATE thread_actors SET client_id = ?, capabilities = ? WHERE thread_id = ? AND actor_id = ?",
            (actor.client_id, _dumps(actor.capabilities), actor.thread_id, actor.id),
        )

    async def delete_actor(self, thread_id: str, actor_id: str) -> bool:
        gone = self.conn.execute(
            "DELETE FROM thread_actors WHERE thread_id = ? AND actor_id = ?", (thread_id, actor_id)
        )
        return gone.rowcount > 0

    async def insert_message(self, message: MessageRecord) -> None:
        m = message
        self.conn.execute(
            "INSERT INTO messages (id, thread_id, seq, created_at, actor, role, content, attachments, metadata, aitp)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.id,
                m.thread_id,
                m.seq,
                m.created_at,
                m.actor,
                m.role,
                _dumps(m.content),
                _dumps(m.attachments),
                _dumps(m.metadata),
                None if m.aitp is None else _dumps(m.aitp),
            ),
        )

    async def set_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str]
    ) -> MessageRecord | None:
        update = "UPDATE messages SET metadata = ? WHERE id = ? AND thread_id = ?"
        self.conn.execute(update, (_dumps(metadata), message_id, thread_id))
        return _message_row(self.conn, thread_id, message_id)

    async def delete_message(self, thread_id: str, message_id: str) -> bool:
        gone = self.conn.execute("DELETE FROM messages WHERE id = ? AND thread_id = ?", (message_id, thread_id))
        return gone.rowcount > 0

    async def insert_ref(self, ref: CapabilityRef) -> bool:
        try:
            self.conn.execute(
                "INSERT INTO capability_refs (thread_id, kind, ref_id, message_id, actor, body)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (ref.thread_id, ref.kind, ref.ref_id, ref.message_id, ref.actor, _dumps(ref.body)),
            )
        except sqlite3.IntegrityError:
            return False
        return True

    async def release_ref(self, release: RefRelease) -> bool:
        gone = self.conn.execute(
            "DELETE FROM capability_refs WHERE thread_id = ? AND kind = ? AND ref_id = ? AND message_id = ?",
            (release.thread_id, release.kind, release.ref_id, release.message_id),
        )
        return gone.rowcount > 0

    async def delete_refs_of(self, message_id: str) -> None:
        self.conn.execute("DELETE FROM capability_refs WHERE message_id = ?", (message_id,))

    async def append_event(self, thread_id: str, event: NewEvent, also: Sequence[str] = ()) -> EventRecord:
        conn = self.conn
        seq = conn.execute(
            "UPDATE threads SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq", (thread_id,)
        ).fetchone()[0]
        gid = conn.execute(
            "INSERT INTO events (thread_id, seq, type, created_at, data) VALUES (?, ?, ?, ?, ?)",
            (thread_id, seq, event.type, event.created_at, _dumps(event.data)),
        ).lastrowid
        conn.execute(
            "INSERT OR IGNORE INTO event_audience (actor_id, gid) SELECT actor_id, ? FROM thread_actors"
            " WHERE thread_id = ?",
            (gid, thread_id),
        )
        conn.executemany("INSERT OR IGNORE INTO event_audience (actor_id, gid) VALUES (?, ?)", [(a, gid) for a in also])
        return EventRecord(
            thread_id=thread_id, seq=seq, type=event.type, created_at=event.created_at, data=event.data, gid=gid or 0
        )


class SQLiteStore(Store):
    def __init__(self, path: str | Path, *, synchronous: str = DEFAULT_SYNCHRONOUS) -> None:
        super().__init__()
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"sqlite synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {synchronous!r}")
        self.path = str(path)
        self.synchronous = synchronous
        self._executor: ThreadPoolExecutor | None = None
        self._loop_conn: sqlite3.Connection | None = None  # used on the event loop; never waits
        self._thread_conn: sqlite3.Connection | None = None  # used on the store thread; waits for locks
        self._commits_since_checkpoint = 0
        self._checkpoint: asyncio.Future[Any] | None = None
        self._batch: list[tuple[Op[Any], asyncio.Future[Any]]] = []  # message appends waiting to commit
        self._batch_tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        """`sqlite:///relative/path.db`, `sqlite:////absolute/path.db` or `sqlite:///:memory:`, optionally
        with `?synchronous=full` (the default) or `?synchronous=normal`."""
        parts = urlsplit(url)
        options = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(options) - {"synchronous"})
        if unknown:
            raise ValueError(f"sqlite URL {url!r}: unknown option {unknown[0]!r} (known: synchronous)")
        synchronous = options.get("synchronous", [DEFAULT_SYNCHRONOUS])[-1].lower()
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"sqlite URL {url!r}: synchronous must be full or normal, not {synchronous!r}")
        path = unquote(parts.netloc + parts.path)
        if path.startswith("/") and not path.startswith("//") and not url.startswith("sqlite:////"):
            path = path[1:]  # sqlite:///x.db is relative, as in SQLAlchemy
        if url.startswith("sqlite:////"):
            path = "/" + path.lstrip("/")
        if not path:
            raise ValueError(f"sqlite URL {url!r} names no file")
        return cls(path, synchronous=synchronous)

    # plumbing

    async def _run(self, op: Op[T], *, may_wait: bool = False) -> T:
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

    async def _write(self, op: Op[T], *, may_wait: bool = False) -> T:
        result = await self._run(self._transaction(op), may_wait=may_wait)
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

    async def open(self) -> None:
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
            thread_conn.executescript(SCHEMA)
            if self.path == ":memory:":
                self._loop_conn = thread_conn  # a second connection would be a second database
                return
            self._thread_conn = thread_conn
            self._loop_conn = connect(timeout=0)
            self._loop_conn.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints fsync: the thread does them

        await asyncio.get_running_loop().run_in_executor(self._executor, connect_both)

    async def exists(self) -> bool:
        return self.path == ":memory:" or Path(self.path).exists()

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

    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        def op(conn: sqlite3.Connection) -> T:
            return _run_body(body, conn)

        if shared:
            return await self._write_shared(op)
        return await self._write(op, may_wait=large)  # a large write is unbounded: not on the loop

    async def _write_shared(self, op: Op[T]) -> T:
        """As `_write`, but the op shares one transaction with the others that arrive in the same event-loop
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
            outcomes = await self._write(ops[0] if len(ops) == 1 else lambda conn: _each_in_savepoint(conn, ops))
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

    # reads

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        def op(conn: sqlite3.Connection) -> ThreadRecord | None:
            row = _live_thread(conn, thread_id)
            return None if row is None else _thread(row)

        return await self._run(op)

    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        def op(conn: sqlite3.Connection) -> tuple[ThreadRecord, list[ActorRecord]] | None:
            row = _live_thread(conn, thread_id)
            return None if row is None else (_thread(row), _actors(conn, thread_id))

        return await self._run(op)

    async def _list_threads(self, actor_id: str | None, page: Page[str]) -> list[ThreadRecord]:
        def op(conn: sqlite3.Connection) -> list[ThreadRecord]:
            join, params = "", []
            if actor_id is not None:
                join, params = "JOIN thread_actors a ON a.thread_id = t.id AND a.actor_id = ?", [actor_id]
            where, bounds = _within("t.id", page)
            sql = (
                f"SELECT t.* FROM threads t {join} WHERE t.deleted = 0{where} ORDER BY t.id {_direction(page)} LIMIT ?"
            )
            return [_thread(r) for r in conn.execute(sql, [*params, *bounds, page.limit])]

        return await self._run(op)

    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        return await self._run(lambda conn: _actors(conn, thread_id))

    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
        def op(conn: sqlite3.Connection) -> CapabilityRef | None:
            row = conn.execute(
                "SELECT * FROM capability_refs WHERE thread_id = ? AND kind = ? AND ref_id = ?",
                (thread_id, kind, ref_id),
            ).fetchone()
            return None if row is None else _ref(row)

        return await self._run(op)

    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None:
        def op(conn: sqlite3.Connection) -> MessageRecord | None:
            return _message_row(conn, thread_id, message_id)

        return await self._run(op)

    async def _list_messages(self, thread_id: str, page: Page[int]) -> list[MessageRecord]:
        def op(conn: sqlite3.Connection) -> list[MessageRecord]:
            where, bounds = _within("seq", page)
            sql = f"SELECT * FROM messages WHERE thread_id = ?{where} ORDER BY seq {_direction(page)} LIMIT ?"
            return [_message(r) for r in conn.execute(sql, [thread_id, *bounds, page.limit])]

        return await self._run(op)

    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute(
                "SELECT * FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?", (thread_id, after, limit)
            )
            return [_event(r) for r in rows]

        return await self._run(op)

    # keys

    async def create_key(self, key: KeyRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO api_keys (id, hash, actor, admin, scopes, created_at, prefix)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.id, key.hash, key.actor, int(key.admin), _dumps(key.scopes), key.created_at, key.prefix),
            )

        await self._write(op)

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        def op(conn: sqlite3.Connection) -> KeyRecord | None:
            row = conn.execute("SELECT * FROM api_keys WHERE hash = ?", (key_hash,)).fetchone()
            return None if row is None else _key(row)

        return await self._run(op)

    async def list_keys(self) -> list[KeyRecord]:
        def op(conn: sqlite3.Connection) -> list[KeyRecord]:
            return [_key(r) for r in conn.execute("SELECT * FROM api_keys ORDER BY id")]

        return await self._run(op)

    async def delete_key(self, key_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM api_keys WHERE id = ?", (key_id,)).rowcount > 0

        return await self._write(op)

    async def existing_key_ids(self, key_ids: Sequence[str]) -> set[str]:
        def op(conn: sqlite3.Connection) -> set[str]:
            found: set[str] = set()
            for start in range(0, len(key_ids), MAX_PARAMS):
                chunk = list(key_ids[start : start + MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                found.update(row[0] for row in conn.execute(f"SELECT id FROM api_keys WHERE id IN ({marks})", chunk))
            return found

        return await self._run(op)

    async def has_admin_key(self) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute("SELECT 1 FROM api_keys WHERE admin = 1 LIMIT 1").fetchone() is not None

        return await self._run(op)

    # the store-wide event log

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute("SELECT * FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit))
            return [_event(r) for r in rows]

        return await self._run(op)

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, set[str]]:
        def op(conn: sqlite3.Connection) -> tuple[int, set[str]]:
            rows = conn.execute(
                "SELECT gid, thread_id FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit)
            ).fetchall()
            return (rows[-1][0] if rows else after_gid), {row[1] for row in rows}

        return await self._run(op)

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute(
                "SELECT e.* FROM event_audience a JOIN events e ON e.gid = a.gid"
                " WHERE a.actor_id = ? AND a.gid > ? ORDER BY a.gid LIMIT ?",
                (actor_id, after_gid, limit),
            )
            return [_event(r) for r in rows]

        return await self._run(op)

    async def last_event_gid(self) -> int:
        def op(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT MAX(gid) FROM events").fetchone()
            return row[0] or 0

        return await self._run(op)

    # capability registry

    async def register_capability_version(self, record: CapabilityVersionRecord) -> CapabilityVersionRecord:
        def op(conn: sqlite3.Connection) -> CapabilityVersionRecord:
            conn.execute(
                "INSERT OR IGNORE INTO capability_versions (id, version, document, created_at, created_by)"
                " VALUES (?, ?, ?, ?, ?)",
                (record.id, record.version, capability_version_document(record), record.created_at, record.created_by),
            )
            row = conn.execute(
                "SELECT * FROM capability_versions WHERE id = ? AND version = ?", (record.id, record.version)
            ).fetchone()
            return _capability_version(row)

        return await self._write(op)

    async def list_capability_versions(self) -> list[CapabilityVersionRecord]:
        def op(conn: sqlite3.Connection) -> list[CapabilityVersionRecord]:
            rows = conn.execute("SELECT * FROM capability_versions ORDER BY position")
            return [_capability_version(r) for r in rows]

        return await self._run(op)

    # idempotency records

    async def claim_idempotency_key(
        self, claim: IdempotencyRecord, *, pending_timeout: float
    ) -> IdempotencyRecord | None:
        purge = self._idempotency_purge_is_due(claim.created_at)

        def op(conn: sqlite3.Connection) -> IdempotencyRecord | None:
            # BEGIN IMMEDIATE serialises claims, across processes too: read, then insert or take over.
            if purge:
                conn.execute("DELETE FROM idempotency_keys WHERE expires_at <= ?", (claim.created_at,))
            row = conn.execute(
                "SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?", (claim.scope, claim.key)
            ).fetchone()
            if row is not None:
                held = _idempotency(row)
                if not held.reclaimable(claim.created_at, pending_timeout):
                    return held
            conn.execute(
                "INSERT OR REPLACE INTO idempotency_keys"
                " (scope, key, fingerprint, token, created_at, expires_at, status, body)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                (claim.scope, claim.key, claim.fingerprint, claim.token, claim.created_at, claim.expires_at),
            )
            return None

        return await self._write(op, may_wait=purge)  # a purge is unbounded: not on the loop

    async def complete_idempotency_key(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return (
                conn.execute(
                    "UPDATE idempotency_keys SET status = ?, body = ?"
                    " WHERE scope = ? AND key = ? AND token = ? AND status IS NULL",
                    (status, body, scope, key, token),
                ).rowcount
                > 0
            )

        return await self._write(op)

    async def release_idempotency_key(self, scope: str, key: str, token: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return (
                conn.execute(
                    "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND token = ? AND status IS NULL",
                    (scope, key, token),
                ).rowcount
                > 0
            )

        return await self._write(op)

    async def purge_idempotency_keys(self, now: float) -> int:
        def op(conn: sqlite3.Connection) -> int:
            return conn.execute("DELETE FROM idempotency_keys WHERE expires_at <= ?", (now,)).rowcount

        return await self._write(op, may_wait=True)
