"""One-time codes in the `one_time_codes` table, keyed by the code's hash."""

from __future__ import annotations

import sqlite3

from aitp.store.codes import CodeRecord, CodeStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads


class SQLiteCodes(CodeStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def create(self, code: CodeRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO one_time_codes (hash, purpose, key_hash, actor, admin, scopes, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    code.hash,
                    code.purpose,
                    code.key_hash,
                    code.actor,
                    int(code.admin),
                    dumps(code.scopes),
                    code.created_at,
                    code.expires_at,
                ),
            )

        await self._engine.write(op)

    async def redeem(self, code_hash: str, purpose: str, now: float) -> CodeRecord | None:
        def op(conn: sqlite3.Connection) -> CodeRecord | None:
            # one statement: the row is gone for whoever comes second
            row = conn.execute(
                "DELETE FROM one_time_codes WHERE hash = ? AND purpose = ? AND expires_at > ? RETURNING *",
                (code_hash, purpose, now),
            ).fetchone()
            if row is None:
                return None
            return CodeRecord(**{**dict(row), "admin": bool(row["admin"]), "scopes": loads(row["scopes"])})

        return await self._engine.write(op)

    async def find(self, code_hash: str, purpose: str, now: float) -> bool:
        live = "SELECT 1 FROM one_time_codes WHERE hash = ? AND purpose = ? AND expires_at > ?"
        return await self._engine.run(lambda conn: conn.execute(live, (code_hash, purpose, now)).fetchone() is not None)

    async def purge(self, now: float) -> int:
        delete = "DELETE FROM one_time_codes WHERE expires_at <= ?"
        return await self._engine.write(lambda conn: conn.execute(delete, (now,)).rowcount, may_wait=True)
