"""Idempotency records in the `idempotency_keys` table, keyed by (scope, key)."""

from __future__ import annotations

import sqlite3

from aitp.store.idempotency import IdempotencyRecord, IdempotencyStore
from aitp.store.sqlite.engine import SQLiteEngine

# a reservation: no response yet
_PENDING = "status IS NULL"


class SQLiteIdempotency(IdempotencyStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        super().__init__()
        self._engine = engine

    async def complete(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        update = (
            f"UPDATE idempotency_keys SET status = ?, body = ? WHERE scope = ? AND key = ? AND token = ? AND {_PENDING}"
        )
        return await self._engine.write(
            lambda conn: conn.execute(update, (status, body, scope, key, token)).rowcount > 0
        )

    async def release(self, scope: str, key: str, token: str) -> bool:
        delete = f"DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND token = ? AND {_PENDING}"
        return await self._engine.write(lambda conn: conn.execute(delete, (scope, key, token)).rowcount > 0)

    async def purge(self, now: float) -> int:
        delete = "DELETE FROM idempotency_keys WHERE expires_at <= ?"
        # unbounded: on the store thread, not on the loop
        return await self._engine.write(lambda conn: conn.execute(delete, (now,)).rowcount, may_wait=True)

    async def _insert(self, record: IdempotencyRecord) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            inserted = conn.execute(
                "INSERT OR IGNORE INTO idempotency_keys (scope, key, fingerprint, token, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (record.scope, record.key, record.fingerprint, record.token, record.created_at, record.expires_at),
            )
            return inserted.rowcount > 0

        return await self._engine.write(op)

    async def _get(self, scope: str, key: str) -> IdempotencyRecord | None:
        def op(conn: sqlite3.Connection) -> IdempotencyRecord | None:
            row = conn.execute("SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?", (scope, key)).fetchone()
            return None if row is None else IdempotencyRecord(**dict(row))

        return await self._engine.run(op)

    async def _replace(self, token: str, record: IdempotencyRecord) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            replaced = conn.execute(
                "UPDATE idempotency_keys SET fingerprint = ?, token = ?, created_at = ?, expires_at = ?,"
                " status = NULL, body = NULL WHERE scope = ? AND key = ? AND token = ?",
                (
                    record.fingerprint,
                    record.token,
                    record.created_at,
                    record.expires_at,
                    record.scope,
                    record.key,
                    token,
                ),
            )
            return replaced.rowcount > 0

        return await self._engine.write(op)
