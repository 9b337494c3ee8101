"""Who follows its inbox live, per instance (`actor_presence`), and the last call made to each actor
(`actor_calls`)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection

from aitp.store.presence import CallRecord, PresenceStore
from aitp.store.sqlite.engine import SQLiteEngine

TABLES = """
CREATE TABLE IF NOT EXISTS actor_presence (
    actor TEXT NOT NULL,
    instance TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (actor, instance)
);
CREATE INDEX IF NOT EXISTS actor_presence_by_expiry ON actor_presence (expires_at);
CREATE TABLE IF NOT EXISTS actor_calls (
    actor TEXT NOT NULL,
    via TEXT NOT NULL,
    ok INTEGER NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (actor, via)
);
"""


class SQLitePresence(PresenceStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def beat(self, instance: str, actors: Collection[str], expires_at: float) -> None:
        rows = [(actor, instance, expires_at) for actor in actors]
        now = time.time()

        def op(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO actor_presence (actor, instance, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (actor, instance) DO UPDATE SET expires_at = excluded.expires_at",
                rows,
            )
            # beats of instances that stopped beating (they died): expired by now
            conn.execute("DELETE FROM actor_presence WHERE expires_at < ?", (now,))

        await self._engine.write(op)

    async def leave(self, instance: str, actor: str) -> None:
        delete = "DELETE FROM actor_presence WHERE actor = ? AND instance = ?"
        await self._engine.write(lambda conn: conn.execute(delete, (actor, instance)))

    async def followed(self, actor: str, now: float) -> bool:
        live = "SELECT 1 FROM actor_presence WHERE actor = ? AND expires_at > ? LIMIT 1"
        return await self._engine.run(lambda conn: conn.execute(live, (actor, now)).fetchone() is not None)

    async def note_call(self, call: CallRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO actor_calls (actor, via, ok, at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (actor, via) DO UPDATE SET ok = excluded.ok, at = excluded.at",
                (call.actor, call.via, int(call.ok), call.at),
            )

        await self._engine.write(op)

    async def last_call(self, actor: str, via: str) -> CallRecord | None:
        def op(conn: sqlite3.Connection) -> CallRecord | None:
            row = conn.execute("SELECT ok, at FROM actor_calls WHERE actor = ? AND via = ?", (actor, via)).fetchone()
            return None if row is None else CallRecord(actor, via, bool(row["ok"]), row["at"])

        return await self._engine.run(op)
