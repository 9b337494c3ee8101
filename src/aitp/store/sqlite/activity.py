"""Actors' activity in threads in the `thread_activity` table: its `position` an AUTOINCREMENT key, so a
position is never given twice, even once the rows below it are dropped."""

from __future__ import annotations

import sqlite3
import time

from aitp.store.activity import KEEP_SECONDS, ActivityRecord, ActivityStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads

TABLES = """
CREATE TABLE IF NOT EXISTS thread_activity (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    state TEXT NOT NULL,
    expires_at REAL NOT NULL,
    audience TEXT NOT NULL,
    origin TEXT NOT NULL,
    posted_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS thread_activity_by_time ON thread_activity (posted_at);
"""

PRUNE_EVERY = 30.0  # seconds between drops of old records (by this process)


def _record(row: sqlite3.Row) -> ActivityRecord:
    return ActivityRecord(
        thread_id=row["thread_id"],
        actor=row["actor"],
        state=row["state"],
        expires_at=row["expires_at"],
        audience=tuple(loads(row["audience"])),
        origin=row["origin"],
        posted_at=row["posted_at"],
        position=row["position"],
    )


class SQLiteActivity(ActivityStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine
        self._pruned_at = -PRUNE_EVERY  # the first post of a process drops what earlier ones left

    async def post(self, record: ActivityRecord) -> int:
        prune = time.monotonic() - self._pruned_at >= PRUNE_EVERY
        if prune:
            self._pruned_at = time.monotonic()
        before = time.time() - KEEP_SECONDS

        def op(conn: sqlite3.Connection) -> int:
            if prune:
                conn.execute("DELETE FROM thread_activity WHERE posted_at < ?", (before,))
            cursor = conn.execute(
                "INSERT INTO thread_activity (thread_id, actor, state, expires_at, audience, origin, posted_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.thread_id,
                    record.actor,
                    record.state,
                    record.expires_at,
                    dumps(list(record.audience)),
                    record.origin,
                    record.posted_at,
                ),
            )
            return int(cursor.lastrowid or 0)

        # a small write, as frequent as an agent's work: it may share its commit with messages being posted
        return await self._engine.write_shared(op)

    async def since(self, after: int, limit: int) -> list[ActivityRecord]:
        def op(conn: sqlite3.Connection) -> list[ActivityRecord]:
            rows = conn.execute(
                "SELECT * FROM thread_activity WHERE position > ? ORDER BY position LIMIT ?", (after, limit)
            )
            return [_record(row) for row in rows]

        return await self._engine.run(op)

    async def head(self) -> int:
        def op(conn: sqlite3.Connection) -> int:
            # the sequence's last value, not MAX(position): rows below it may have been dropped, all of them
            row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'thread_activity'").fetchone()
            return int(row[0]) if row is not None else 0

        return await self._engine.run(op)
