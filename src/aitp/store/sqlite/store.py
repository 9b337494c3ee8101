"""The embedded store: one SQLite file in WAL mode, the zero-setup default. How its operations run (the
event loop, the store thread, group commit, checkpoints) is its engine's business (engine.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    Page,
    Store,
    ThreadRecord,
    capability_version_document,
)
from aitp.store.sqlite.engine import DEFAULT_SYNCHRONOUS, SYNCHRONOUS_MODES, SQLiteEngine
from aitp.store.sqlite.schema import (
    SCHEMA,
    capability_version_record,
    dumps,
    event_record,
    idempotency_record,
    key_record,
    message_record,
    ref_record,
    thread_record,
)
from aitp.store.sqlite.tx import find_message, live_thread, run_body, thread_actors
from aitp.store.transaction import Body

T = TypeVar("T")
MAX_PARAMS = 500  # values bound in one statement (SQLite allows 32,766 since 3.32, 999 before)


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


class SQLiteStore(Store):
    """The store on one SQLite file: transaction bodies and reads as operations of its engine."""

    def __init__(self, path: str | Path, *, synchronous: str = DEFAULT_SYNCHRONOUS) -> None:
        super().__init__()
        self.engine = SQLiteEngine(str(path), synchronous)

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

    @property
    def path(self) -> str:
        return self.engine.path

    async def open(self) -> None:
        await self.engine.open(SCHEMA)

    async def close(self) -> None:
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

    # keys

    async def create_key(self, key: KeyRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO api_keys (id, hash, actor, admin, scopes, created_at, prefix)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.id, key.hash, key.actor, int(key.admin), dumps(key.scopes), key.created_at, key.prefix),
            )

        await self.engine.write(op)

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        def op(conn: sqlite3.Connection) -> KeyRecord | None:
            row = conn.execute("SELECT * FROM api_keys WHERE hash = ?", (key_hash,)).fetchone()
            return None if row is None else key_record(row)

        return await self.engine.run(op)

    async def list_keys(self) -> list[KeyRecord]:
        def op(conn: sqlite3.Connection) -> list[KeyRecord]:
            return [key_record(r) for r in conn.execute("SELECT * FROM api_keys ORDER BY id")]

        return await self.engine.run(op)

    async def delete_key(self, key_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM api_keys WHERE id = ?", (key_id,)).rowcount > 0

        return await self.engine.write(op)

    async def existing_key_ids(self, key_ids: Sequence[str]) -> set[str]:
        def op(conn: sqlite3.Connection) -> set[str]:
            found: set[str] = set()
            for start in range(0, len(key_ids), MAX_PARAMS):
                chunk = list(key_ids[start : start + MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                found.update(row[0] for row in conn.execute(f"SELECT id FROM api_keys WHERE id IN ({marks})", chunk))
            return found

        return await self.engine.run(op)

    async def has_admin_key(self) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute("SELECT 1 FROM api_keys WHERE admin = 1 LIMIT 1").fetchone() is not None

        return await self.engine.run(op)

    # the store-wide event log

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute("SELECT * FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit))
            return [event_record(r) for r in rows]

        return await self.engine.run(op)

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, set[str]]:
        def op(conn: sqlite3.Connection) -> tuple[int, set[str]]:
            rows = conn.execute(
                "SELECT gid, thread_id FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after_gid, limit)
            ).fetchall()
            return (rows[-1][0] if rows else after_gid), {row[1] for row in rows}

        return await self.engine.run(op)

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        def op(conn: sqlite3.Connection) -> list[EventRecord]:
            rows = conn.execute(
                "SELECT e.* FROM event_audience a JOIN events e ON e.gid = a.gid"
                " WHERE a.actor_id = ? AND a.gid > ? ORDER BY a.gid LIMIT ?",
                (actor_id, after_gid, limit),
            )
            return [event_record(r) for r in rows]

        return await self.engine.run(op)

    async def last_event_gid(self) -> int:
        def op(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT MAX(gid) FROM events").fetchone()
            return row[0] or 0

        return await self.engine.run(op)

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
            return capability_version_record(row)

        return await self.engine.write(op)

    async def list_capability_versions(self) -> list[CapabilityVersionRecord]:
        def op(conn: sqlite3.Connection) -> list[CapabilityVersionRecord]:
            rows = conn.execute("SELECT * FROM capability_versions ORDER BY position")
            return [capability_version_record(r) for r in rows]

        return await self.engine.run(op)

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
                held = idempotency_record(row)
                if not held.reclaimable(claim.created_at, pending_timeout):
                    return held
            conn.execute(
                "INSERT OR REPLACE INTO idempotency_keys"
                " (scope, key, fingerprint, token, created_at, expires_at, status, body)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                (claim.scope, claim.key, claim.fingerprint, claim.token, claim.created_at, claim.expires_at),
            )
            return None

        return await self.engine.write(op, may_wait=purge)  # a purge is unbounded: not on the loop

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

        return await self.engine.write(op)

    async def release_idempotency_key(self, scope: str, key: str, token: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return (
                conn.execute(
                    "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND token = ? AND status IS NULL",
                    (scope, key, token),
                ).rowcount
                > 0
            )

        return await self.engine.write(op)

    async def purge_idempotency_keys(self, now: float) -> int:
        def op(conn: sqlite3.Connection) -> int:
            return conn.execute("DELETE FROM idempotency_keys WHERE expires_at <= ?", (now,)).rowcount

        return await self.engine.write(op, may_wait=True)
