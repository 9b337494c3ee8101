"""Registered capability versions in the `capability_versions` table (the document as one JSON text)."""

from __future__ import annotations

import sqlite3

from aitp.store.capabilities import CapabilityStore, CapabilityVersionRecord
from aitp.store.sqlite.engine import SQLiteEngine


def _version(row: sqlite3.Row) -> CapabilityVersionRecord:
    return CapabilityVersionRecord.from_document(row["document"], row["created_at"], row["created_by"])


class SQLiteCapabilities(CapabilityStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def _keys(self) -> list[tuple[str, str]]:
        select = "SELECT id, version FROM capability_versions ORDER BY position"  # autoincrement: registration order
        return await self._engine.run(lambda conn: [(r[0], r[1]) for r in conn.execute(select)])

    async def _documents(self, keys: list[tuple[str, str]]) -> list[CapabilityVersionRecord]:
        def op(conn: sqlite3.Connection) -> list[CapabilityVersionRecord]:
            select = "SELECT * FROM capability_versions WHERE id = ? AND version = ?"
            return [_version(row) for key in keys if (row := conn.execute(select, key).fetchone()) is not None]

        return await self._engine.run(op)

    async def _add(self, record: CapabilityVersionRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO capability_versions (id, version, document, created_at, created_by)"
                " VALUES (?, ?, ?, ?, ?)",
                (record.id, record.version, record.document(), record.created_at, record.created_by),
            )

        await self._engine.write(op)

    async def _get(self, capability_id: str, version: str) -> CapabilityVersionRecord | None:
        def op(conn: sqlite3.Connection) -> CapabilityVersionRecord | None:
            select = "SELECT * FROM capability_versions WHERE id = ? AND version = ?"
            row = conn.execute(select, (capability_id, version)).fetchone()
            return None if row is None else _version(row)

        return await self._engine.run(op)
