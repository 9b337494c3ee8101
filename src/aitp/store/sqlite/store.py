"""The embedded store: one SQLite file in WAL mode, the zero-setup default. How its operations run (the
event loop, the store thread, group commit, checkpoints) is its engine's business (engine.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    EventRecord,
    MessageRecord,
    Page,
    Store,
    ThreadRecord,
    threads_of,
)
from aitp.store.sqlite.a2a import SQLiteA2A
from aitp.store.sqlite.a2a import upgrade as upgrade_a2a
from aitp.store.sqlite.activity import TABLES as ACTIVITY_TABLES
from aitp.store.sqlite.activity import SQLiteActivity
from aitp.store.sqlite.capabilities import SQLiteCapabilities
from aitp.store.sqlite.codes import SQLiteCodes
from aitp.store.sqlite.engine import DEFAULT_SYNCHRONOUS, SYNCHRONOUS_MODES, SQLiteEngine
from aitp.store.sqlite.idempotency import SQLiteIdempotency
from aitp.store.sqlite.identities import SQLiteIdentities
from aitp.store.sqlite.identities import create_table as create_identities
from aitp.store.sqlite.keys import SQLiteKeys
from aitp.store.sqlite.presence import TABLES as PRESENCE_TABLES
from aitp.store.sqlite.presence import SQLitePresence
from aitp.store.sqlite.profiles import SQLiteProfiles
from aitp.store.sqlite.schema import (
    AUDIENCE_TO_MEMBERSHIPS,
    SCHEMA,
    THREAD_COLUMNS_ADDED,
    event_record,
    message_record,
    ref_record,
    thread_record,
)
from aitp.store.sqlite.search import SQLiteSearch
from aitp.store.sqlite.search import upgrade as upgrade_search
from aitp.store.sqlite.tx import find_message, live_thread, run_body, thread_actors
from aitp.store.sqlite.webhooks import TABLES as WEBHOOK_TABLES
from aitp.store.sqlite.webhooks import SQLiteWebhooks
from aitp.store.transaction import Body

T = TypeVar("T")


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


INBOX_WINDOW = 2_000  # gids an inbox read scans before it reads through the actor's memberships instead
INBOX_WINDOW_READ = (
    "SELECT e.* FROM events e WHERE e.gid > ? AND e.gid <= ? AND EXISTS (SELECT 1 FROM memberships m"
    " WHERE m.actor_id = ? AND m.thread_id = e.thread_id AND m.from_seq <= e.seq"
    " AND (m.to_seq IS NULL OR m.to_seq >= e.seq)) ORDER BY e.gid LIMIT ?"
)
INBOX_BY_MEMBERSHIP_READ = (
    "SELECT e.* FROM memberships m JOIN events e ON e.thread_id = m.thread_id AND e.seq >= m.from_seq"
    " AND (m.to_seq IS NULL OR e.seq <= m.to_seq) WHERE m.actor_id = ? AND e.gid > ? ORDER BY e.gid LIMIT ?"
)


def _audience_to_memberships(conn: sqlite3.Connection) -> None:
    """Once, on a store written before memberships (see `AUDIENCE_TO_MEMBERSHIPS`)."""
    legacy = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_audience'").fetchone()
    if legacy:
        for statement in AUDIENCE_TO_MEMBERSHIPS.split(";"):
            if statement.strip():
                conn.execute(statement)


def _key_expiry_column(conn: sqlite3.Connection) -> None:
    """Once, on a store written before keys could expire: its keys never do (NULL)."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(api_keys)")}
    if "expires_at" not in columns:
        conn.execute("ALTER TABLE api_keys ADD COLUMN expires_at INTEGER")
    # here, not in the schema: a store written before has the column only from the line above
    conn.execute("CREATE INDEX IF NOT EXISTS api_keys_expires_at ON api_keys (expires_at)")


def _webhook_messages_column(conn: sqlite3.Connection) -> None:
    """Once, on a store written before webhooks chose their messages: its endpoints take all of them."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(webhook_endpoints)")}
    if "messages" not in columns:
        conn.execute("ALTER TABLE webhook_endpoints ADD COLUMN messages TEXT NOT NULL DEFAULT 'all'")


def _webhook_client_error_column(conn: sqlite3.Connection) -> None:
    """Once, on a store written before endpoints chose what a 4xx does (theirs skip, the default) and their
    ordering (theirs by thread, the default)."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(webhook_endpoints)")}
    if "on_client_error" not in columns:
        conn.execute("ALTER TABLE webhook_endpoints ADD COLUMN on_client_error TEXT NOT NULL DEFAULT 'skip'")
    if "ordering" not in columns:
        conn.execute("ALTER TABLE webhook_endpoints ADD COLUMN ordering TEXT NOT NULL DEFAULT 'thread'")


def _thread_turn_columns(conn: sqlite3.Connection) -> None:
    """Once, on a store written before turn budgets: its threads take the default budget, no turns used."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(threads)")}
    for name, definition in THREAD_COLUMNS_ADDED.items():
        if name not in columns:
            conn.execute(f"ALTER TABLE threads ADD COLUMN {name} {definition}")


def _upgrade(conn: sqlite3.Connection) -> None:
    _audience_to_memberships(conn)
    _key_expiry_column(conn)
    _thread_turn_columns(conn)
    _webhook_messages_column(conn)
    _webhook_client_error_column(conn)
    create_identities(conn)
    upgrade_a2a(conn)
    upgrade_search(conn)


class SQLiteStore(Store):
    """The store on one SQLite file: transaction bodies and reads as operations of its engine."""

    def __init__(self, path: str | Path, *, synchronous: str = DEFAULT_SYNCHRONOUS) -> None:
        super().__init__()
        self.engine = SQLiteEngine(str(path), synchronous)
        self.keys = SQLiteKeys(self.engine)
        self.idempotency = SQLiteIdempotency(self.engine)
        self.capabilities = SQLiteCapabilities(self.engine)
        self.profiles = SQLiteProfiles(self.engine)
        self.codes = SQLiteCodes(self.engine)
        self.webhooks = SQLiteWebhooks(self.engine)
        self.a2a = SQLiteA2A(self.engine)
        self.identities = SQLiteIdentities(self.engine)
        self.search = self._search = SQLiteSearch(self.engine)
        self.add_commit_listener(self._search.changed)  # what this process appends is indexed a moment later
        self.activity = SQLiteActivity(self.engine)
        self.presence = SQLitePresence(self.engine)

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        """`sqlite:///relative/path.db`, `sqlite:////absolute/path.db` or `sqlite:///:memory:`, optionally
        with `?synchronous=full` (the default) or `?synchronous=normal`; any other URL is a ValueError saying
        what is wrong and what to write."""
        slashes = "three slashes before a relative path, four before an absolute one: sqlite:////var/lib/aitp/aitp.db"
        parts = urlsplit(url)
        if parts.netloc:  # `sqlite://x.db`: x.db reads as a host, and a file has none; whatever was meant, say how
            raise ValueError(
                f"sqlite URL {url!r} has two slashes, so {parts.netloc!r} reads as a host name, which a SQLite "
                f"file has not: write sqlite:///{parts.netloc}{parts.path} ({slashes})"
            )
        options = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(options) - {"synchronous"})
        if unknown:
            raise ValueError(f"sqlite URL {url!r}: unknown option {unknown[0]!r} (known: synchronous)")
        synchronous = options.get("synchronous", [DEFAULT_SYNCHRONOUS])[-1].lower()
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"sqlite URL {url!r}: synchronous must be full or normal, not {synchronous!r}")
        path = unquote(parts.path)
        if path.startswith("/") and not path.startswith("//") and not url.startswith("sqlite:////"):
            path = path[1:]  # sqlite:///x.db is relative, as in SQLAlchemy
        if url.startswith("sqlite:////"):
            path = "/" + path.lstrip("/")
        if not path or path.endswith("/"):
            raise ValueError(f"sqlite URL {url!r} names no file: write sqlite:///aitp-data/aitp.db ({slashes})")
        return cls(path, synchronous=synchronous)

    @property
    def path(self) -> str:
        return self.engine.path

    async def open(self) -> None:
        # CREATE ... IF NOT EXISTS: the tables added since a store was written are made when it is opened
        await self.engine.open(SCHEMA + WEBHOOK_TABLES + ACTIVITY_TABLES + PRESENCE_TABLES)
        await self.engine.write(_upgrade, may_wait=True)  # unbounded, once: off the loop

    async def close(self) -> None:
        await self._search.close()
        await self.engine.close()

    async def exists(self) -> bool:
        return self.path == ":memory:" or Path(self.path).exists()

    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        def op(conn: sqlite3.Connection) -> T:
            return run_body(body, conn)

        if shared:
            return await self.engine.write_shared(op)
        return await self.engine.write(op, may_wait=large)  # a large write is unbounded: not on the loop

    # reads

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        def op(conn: sqlite3.Connection) -> ThreadRecord | None:
            row = live_thread(conn, thread_id)
            return None if row is None else thread_record(row)

        return await self.engine.run(op)

    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        def op(conn: sqlite3.Connection) -> tuple[ThreadRecord, list[ActorRecord]] | None:
            row = live_thread(conn, thread_id)
            return None if row is None else (thread_record(row), thread_actors(conn, thread_id))

        return await self.engine.run(op)

    async def _list_threads(self, actor_id: str | None, page: Page[str]) -> list[ThreadRecord]:
        def op(conn: sqlite3.Connection) -> list[ThreadRecord]:
            join, params = "", []
            if actor_id is not None:
                join, params = "JOIN thread_actors a ON a.thread_id = t.id AND a.actor_id = ?", [actor_id]
            where, bounds = _within("t.id", page)
            sql = (
                f"SELECT t.* FROM threads t {join} WHERE t.deleted = 0{where} ORDER BY t.id {_direction(page)} LIMIT ?"
            )
            return [thread_record(r) for r in conn.execute(sql, [*params, *bounds, page.limit])]

        return await self.engine.run(op)

    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        return await self.engine.run(lambda conn: thread_actors(conn, thread_id))

    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
        def op(conn: sqlite3.Connection) -> CapabilityRef | None:
            row = conn.execute(
                "SELECT * FROM capability_refs WHERE thread_id = ? AND kind = ? AND ref_id = ?",
                (thread_id, kind, ref_id),
            ).fetchone()
            return None if row is None else ref_record(row)

        return await self.engine.run(op)

    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None:
        def op(conn: sqlite3.Connection) -> MessageRecord | None:
            return find_message(conn, thread_id, message_id)

        return await self.engine.run(op)

    async def message_seq(self, thread_id: str, message_id: str) -> int | None:
        def op(conn: sqlite3.Connection) -> int | None:
            row = conn.execute(
                "SELECT seq FROM messages WHERE id = ? AND thread_id = ?"
                " UNION ALL SELECT seq FROM deleted_messages WHERE thread_id = ? AND id = ? LIMIT 1",
                (message_id, thread_id, thread_id, message_id),
            ).fetchone()
            return None if row is None else int(row[0])

        return await self.engine.run(op)

    async def _list_messages(self, thread_id: str, page: Page[int]) -> list[MessageRecord]:
        def op(conn: sqlite3.Connection) -> list[MessageRecord]:
            where, bounds = _within("seq", page)
            sql = f"SELECT * FROM messages WHERE thread_id = ?{where} ORDER BY seq {_direction(page)} LIMIT ?"
            return [message_record(r) for r in conn.execute(sql, [thread_id, *bounds, page.limit])]

        return await self.engine.run(op)

    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute(
                "SELECT * FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?", (thread_id, after, limit)
            )
            return [event_record(r) for r in rows]

        return await self.engine.run(op)

    # the store-wide event log

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute("SELECT * FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit))
            return [event_record(r) for r in rows]

        return await self.engine.run(op)

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, dict[str, bool]]:
        def op(conn: sqlite3.Connection) -> tuple[int, dict[str, bool]]:
            rows = conn.execute(
                "SELECT gid, thread_id, type FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit)
            ).fetchall()
            return (rows[-1][0] if rows else after_gid), threads_of((row[1], row[2]) for row in rows)

        return await self.engine.run(op)

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            # A follower near the head: the next INBOX_WINDOW events of the log, each kept if the actor was a
            # member when it was written (one probe of its memberships per event).
            found = [
                event_record(r)
                for r in conn.execute(INBOX_WINDOW_READ, (after_gid, after_gid + INBOX_WINDOW, actor_id, limit))
            ]
            if len(found) == limit:
                return found
            if conn.execute("SELECT 1 FROM events WHERE gid > ?", (after_gid + INBOX_WINDOW,)).fetchone() is None:
                return found  # the window reached the end of the log
            # Further back: through the actor's memberships, each a range of its thread's log.
            rest = conn.execute(INBOX_BY_MEMBERSHIP_READ, (actor_id, after_gid + INBOX_WINDOW, limit - len(found)))
            return found + [event_record(r) for r in rest]

        return await self.engine.run(op)

    async def last_event_gid(self) -> int:
        def op(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT MAX(gid) FROM events").fetchone()
            return row[0] or 0

        return await self.engine.run(op)
