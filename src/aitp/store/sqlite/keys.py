"""API keys in the `api_keys` table."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from aitp.store.keys import KeyRecord, KeyStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads

MAX_PARAMS = 500  # values bound in one statement (SQLite allows 32,766 since 3.32, 999 before)


def _key(row: sqlite3.Row) -> KeyRecord:
    return KeyRecord(**{**dict(row), "admin": bool(row["admin"]), "scopes": loads(row["scopes"])})


class SQLiteKeys(KeyStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def create(self, key: KeyRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO api_keys (id, hash, actor, admin, scopes, created_at, prefix, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.id,
                    key.hash,
                    key.actor,
                    int(key.admin),
                    dumps(key.scopes),
                    key.created_at,
                    key.prefix,
                    key.expires_at,
                ),
            )

        await self._engine.write(op)

    async def find(self, key_hash: str) -> KeyRecord | None:
        def op(conn: sqlite3.Connection) -> KeyRecord | None:
            row = conn.execute("SELECT * FROM api_keys WHERE hash = ?", (key_hash,)).fetchone()
            return None if row is None else _key(row)

        return await self._engine.run(op)

    async def all(self) -> list[KeyRecord]:
        return await self._engine.run(
            lambda conn: [_key(r) for r in conn.execute("SELECT * FROM api_keys ORDER BY id")]
        )

    async def delete(self, key_id: str) -> bool:
        return await self._engine.write(
            lambda conn: conn.execute("DELETE FROM api_keys WHERE id = ?", (key_id,)).rowcount > 0
        )

    async def expiries(self, key_ids: Sequence[str]) -> dict[str, int | None]:
        def op(conn: sqlite3.Connection) -> dict[str, int | None]:
            found: dict[str, int | None] = {}
            for start in range(0, len(key_ids), MAX_PARAMS):
                chunk = list(key_ids[start : start + MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT id, expires_at FROM api_keys WHERE id IN ({marks})", chunk)
                found.update((row[0], row[1]) for row in rows)
            return found

        return await self._engine.run(op)

    async def purge_expired(self, before: int) -> int:
        expired = "DELETE FROM api_keys WHERE expires_at IS NOT NULL AND expires_at < ?"
        return await self._engine.write(lambda conn: conn.execute(expired, (before,)).rowcount)

    async def has_admin(self) -> bool:
        admin = "SELECT 1 FROM api_keys WHERE admin = 1 LIMIT 1"
        return await self._engine.run(lambda conn: conn.execute(admin).fetchone() is not None)
