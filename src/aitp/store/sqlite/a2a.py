"""A2A settings in the `a2a_agents` table, contexts in `a2a_contexts`."""

from __future__ import annotations

import sqlite3

from aitp.store.a2a import A2AAgentRecord, A2AStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads


def _record(row: sqlite3.Row) -> A2AAgentRecord:
    return A2AAgentRecord(
        actor=row["actor"],
        serve=bool(row["serve"]),
        capabilities=loads(row["capabilities"]),
        card_url=row["card_url"],
        updated_at=row["updated_at"],
        cursor=row["cursor"],
    )


class SQLiteA2A(A2AStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def put(self, record: A2AAgentRecord) -> None:
        values = (record.actor, int(record.serve), dumps(record.capabilities), record.card_url, record.updated_at)

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO a2a_agents (actor, serve, capabilities, card_url, updated_at, cursor)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (actor) DO UPDATE SET serve = excluded.serve,"
                " capabilities = excluded.capabilities, card_url = excluded.card_url,"
                " updated_at = excluded.updated_at",
                (*values, record.cursor),
            )

        await self._engine.write(op)

    async def get(self, actor: str) -> A2AAgentRecord | None:
        def op(conn: sqlite3.Connection) -> A2AAgentRecord | None:
            row = conn.execute("SELECT * FROM a2a_agents WHERE actor = ?", (actor,)).fetchone()
            return None if row is None else _record(row)

        return await self._engine.run(op)

    async def remotes(self) -> list[A2AAgentRecord]:
        def op(conn: sqlite3.Connection) -> list[A2AAgentRecord]:
            rows = conn.execute("SELECT * FROM a2a_agents WHERE card_url IS NOT NULL ORDER BY actor")
            return [_record(row) for row in rows]

        return await self._engine.run(op)

    async def advance(self, actor: str, after: int, to: int) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            moved = conn.execute("UPDATE a2a_agents SET cursor = ? WHERE actor = ? AND cursor = ?", (to, actor, after))
            return moved.rowcount > 0

        return await self._engine.write(op)

    async def context(self, caller: str, agent: str, context_id: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT thread_id FROM a2a_contexts WHERE caller = ? AND agent = ? AND context_id = ?",
                (caller, agent, context_id),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._engine.run(op)

    async def bind_context(self, caller: str, agent: str, context_id: str, thread_id: str) -> str:
        def op(conn: sqlite3.Connection) -> str:
            conn.execute(
                "INSERT OR IGNORE INTO a2a_contexts (caller, agent, context_id, thread_id) VALUES (?, ?, ?, ?)",
                (caller, agent, context_id, thread_id),
            )
            row = conn.execute(
                "SELECT thread_id FROM a2a_contexts WHERE caller = ? AND agent = ? AND context_id = ?",
                (caller, agent, context_id),
            ).fetchone()
            return str(row[0])

        return await self._engine.write(op)
