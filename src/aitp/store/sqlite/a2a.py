"""A2A settings in the `a2a_agents` table, contexts in `a2a_contexts`, remote agents' tasks in
`a2a_remote_tasks`."""

from __future__ import annotations

import sqlite3

from aitp.store.a2a import A2AAgentRecord, A2AStore, RemoteTaskRecord
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads

# the a2a_agents columns added since its first version, each with its definition (`upgrade`)
COLUMNS_ADDED = {"reply_policy": "TEXT NOT NULL DEFAULT 'addressed'", "credentials": "TEXT"}


def upgrade(conn: sqlite3.Connection) -> None:
    """Once, on a store written before reply policies and credentials: its agents answer what is addressed
    to them (the default) and hold no credentials."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(a2a_agents)")}
    for name, definition in COLUMNS_ADDED.items():
        if name not in columns:
            conn.execute(f"ALTER TABLE a2a_agents ADD COLUMN {name} {definition}")


# the caller's memberships newest first (the actor index), each kept if the agent is in that live thread too
SHARED = (
    "SELECT c.thread_id FROM thread_actors c"
    " JOIN thread_actors a ON a.thread_id = c.thread_id AND a.actor_id = :agent"
    " JOIN threads t ON t.id = c.thread_id AND t.deleted = 0"
    " WHERE c.actor_id = :caller AND (:before IS NULL OR c.thread_id < :before)"
    " ORDER BY c.thread_id DESC LIMIT :limit"
)


def _record(row: sqlite3.Row) -> A2AAgentRecord:
    return A2AAgentRecord(
        actor=row["actor"],
        serve=bool(row["serve"]),
        capabilities=loads(row["capabilities"]),
        card_url=row["card_url"],
        updated_at=row["updated_at"],
        cursor=row["cursor"],
        reply_policy=row["reply_policy"],
        credentials=loads(row["credentials"]) or {},
    )


def _task(row: sqlite3.Row) -> RemoteTaskRecord:
    return RemoteTaskRecord(row["actor"], row["thread_id"], row["context_id"], row["task_id"], row["updated_at"])


class SQLiteA2A(A2AStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def put(self, record: A2AAgentRecord) -> None:
        values = (
            record.actor,
            int(record.serve),
            dumps(record.capabilities),
            record.card_url,
            record.updated_at,
            record.reply_policy,
            dumps(record.credentials) if record.credentials else None,
        )

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO a2a_agents (actor, serve, capabilities, card_url, updated_at, reply_policy,"
                " credentials, cursor) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (actor) DO UPDATE SET"
                " serve = excluded.serve, capabilities = excluded.capabilities, card_url = excluded.card_url,"
                " updated_at = excluded.updated_at, reply_policy = excluded.reply_policy,"
                " credentials = excluded.credentials",
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

    async def shared_threads(self, caller: str, agent: str, *, limit: int, before: str | None = None) -> list[str]:
        def op(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(SHARED, {"caller": caller, "agent": agent, "before": before, "limit": limit})
            return [str(row[0]) for row in rows]

        return await self._engine.run(op)

    async def remote_task(self, actor: str, thread_id: str) -> RemoteTaskRecord | None:
        def op(conn: sqlite3.Connection) -> RemoteTaskRecord | None:
            row = conn.execute(
                "SELECT * FROM a2a_remote_tasks WHERE actor = ? AND thread_id = ?", (actor, thread_id)
            ).fetchone()
            return None if row is None else _task(row)

        return await self._engine.run(op)

    async def put_remote_task(self, record: RemoteTaskRecord) -> None:
        values = (record.actor, record.thread_id, record.context_id, record.task_id, record.updated_at)

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO a2a_remote_tasks (actor, thread_id, context_id, task_id, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                values,
            )

        await self._engine.write(op)

    async def forget_remote_tasks(self, actor: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM a2a_remote_tasks WHERE actor = ?", (actor,))

        await self._engine.write(op)
