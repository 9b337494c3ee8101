"""The transaction primitives on a SQLite connection, and how a transaction body runs on one."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, TypeVar

from aitp.store.base import ActorRecord, CapabilityRef, EventRecord, MessageRecord, NewEvent, RefRelease, ThreadRecord
from aitp.store.idempotency import IdempotencyRecord
from aitp.store.sqlite.schema import actor_record, dumps, message_record, thread_record
from aitp.store.sqlite.search import unindex_message, unindex_thread
from aitp.store.transaction import Body, Tx

T = TypeVar("T")


def live_thread(conn: sqlite3.Connection, thread_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM threads WHERE id = ? AND deleted = 0", (thread_id,)).fetchone()


def thread_actors(conn: sqlite3.Connection, thread_id: str) -> list[ActorRecord]:
    rows = conn.execute("SELECT * FROM thread_actors WHERE thread_id = ? ORDER BY position", (thread_id,))
    return [actor_record(r) for r in rows]


def find_message(conn: sqlite3.Connection, thread_id: str, message_id: str) -> MessageRecord | None:
    row = conn.execute("SELECT * FROM messages WHERE id = ? AND thread_id = ?", (message_id, thread_id)).fetchone()
    return None if row is None else message_record(row)


def run_body(body: Body[T], conn: sqlite3.Connection) -> T:
    """Run a transaction body to its end at once, on this thread: `SQLiteTx`'s primitives are plain calls
    on the connection and never suspend, so the body's coroutine finishes on its first step."""
    coroutine = body(SQLiteTx(conn))
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a SQLite transaction body awaited something other than its Tx")


class SQLiteTx(Tx):
    """The primitives on a connection inside BEGIN IMMEDIATE: one writer at a time, across processes too."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def insert_thread(self, thread: ThreadRecord, actors: Sequence[ActorRecord]) -> None:
        self.conn.execute(
            "INSERT INTO threads (id, created_at, creator, metadata, parent_id, tool_resources, last_seq)"
            " VALUES (?, ?, ?, ?, ?, ?, 0)",
            (
                thread.id,
                thread.created_at,
                thread.creator,
                dumps(thread.metadata),
                thread.parent_id,
                None if thread.tool_resources is None else dumps(thread.tool_resources),
            ),
        )
        self.conn.executemany(
            "INSERT INTO thread_actors (thread_id, actor_id, client_id, capabilities, joined_at, position)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(a.thread_id, a.id, a.client_id, dumps(a.capabilities), a.joined_at, i) for i, a in enumerate(actors)],
        )

    async def thread_is_live(self, thread_id: str) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM threads WHERE id = ? AND deleted = 0", (thread_id,)).fetchone() is not None
        )

    async def update_thread(self, thread_id: str, changes: dict[str, Any]) -> ThreadRecord | None:
        for column in ("metadata", "tool_resources", "turn_budget", "persons"):
            if column in changes:
                value = changes[column]
                self.conn.execute(
                    f"UPDATE threads SET {column} = ? WHERE id = ? AND deleted = 0",
                    (value if value is None or isinstance(value, int) else dumps(value), thread_id),
                )
        row = live_thread(self.conn, thread_id)
        return None if row is None else thread_record(row)

    async def turns(self, thread_id: str) -> tuple[int | None, int, bool] | None:
        row = self.conn.execute(
            "SELECT turn_budget, agent_turns, paused FROM threads WHERE id = ? AND deleted = 0", (thread_id,)
        ).fetchone()
        return None if row is None else (row[0], row[1], bool(row[2]))

    async def set_turns(self, thread_id: str, agent_turns: int, paused: bool) -> None:
        self.conn.execute(
            "UPDATE threads SET agent_turns = ?, paused = ? WHERE id = ?", (agent_turns, int(paused), thread_id)
        )

    async def clear_thread(self, thread_id: str) -> None:
        conn = self.conn
        unindex_thread(conn, thread_id)  # (through its messages: first)
        conn.execute("DELETE FROM messages WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM thread_actors WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM capability_refs WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM deleted_messages WHERE thread_id = ?", (thread_id,))
        conn.execute(
            "UPDATE threads SET deleted = 1, metadata = '{}', tool_resources = NULL WHERE id = ?", (thread_id,)
        )

    async def actors(self, thread_id: str) -> list[ActorRecord]:
        return thread_actors(self.conn, thread_id)

    async def is_member(self, thread_id: str, actor_id: str) -> bool:
        member = "SELECT 1 FROM thread_actors WHERE thread_id = ? AND actor_id = ?"
        return self.conn.execute(member, (thread_id, actor_id)).fetchone() is not None

    async def take_seat(self, thread_id: str, members: int, limit: int | None) -> bool:
        # `members` was counted inside BEGIN IMMEDIATE: no other join, of this process or another, writes
        # before this transaction ends
        return limit is None or members < limit

    async def free_seat(self, thread_id: str, members: int) -> None:
        pass  # the actors' rows are the count

    async def insert_actor(self, actor: ActorRecord) -> None:
        self.conn.execute(
            "INSERT INTO thread_actors (thread_id, actor_id, client_id, capabilities, joined_at, position)"
            " SELECT ?, ?, ?, ?, ?, COALESCE(MAX(position), -1) + 1 FROM thread_actors WHERE thread_id = ?",
            (actor.thread_id, actor.id, actor.client_id, dumps(actor.capabilities), actor.joined_at, actor.thread_id),
        )

    async def update_actor(self, actor: ActorRecord) -> None:
        self.conn.execute(
            "UPDATE thread_actors SET client_id = ?, capabilities = ? WHERE thread_id = ? AND actor_id = ?",
            (actor.client_id, dumps(actor.capabilities), actor.thread_id, actor.id),
        )

    async def delete_actor(self, thread_id: str, actor_id: str) -> bool:
        gone = self.conn.execute(
            "DELETE FROM thread_actors WHERE thread_id = ? AND actor_id = ?", (thread_id, actor_id)
        )
        return gone.rowcount > 0

    async def insert_message(self, message: MessageRecord) -> None:
        m = message
        self.conn.execute(
            "INSERT INTO messages (id, thread_id, seq, created_at, actor, role, content, attachments, metadata, aitp)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.id,
                m.thread_id,
                m.seq,
                m.created_at,
                m.actor,
                m.role,
                dumps(m.content),
                dumps(m.attachments),
                dumps(m.metadata),
                None if m.aitp is None else dumps(m.aitp),
            ),
        )

    async def set_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str]
    ) -> MessageRecord | None:
        update = "UPDATE messages SET metadata = ? WHERE id = ? AND thread_id = ?"
        self.conn.execute(update, (dumps(metadata), message_id, thread_id))
        return find_message(self.conn, thread_id, message_id)

    async def delete_message(self, thread_id: str, message_id: str) -> bool:
        gone = self.conn.execute(
            "DELETE FROM messages WHERE id = ? AND thread_id = ? RETURNING seq", (message_id, thread_id)
        ).fetchone()
        if gone is None:
            return False
        unindex_message(self.conn, message_id)
        self.conn.execute(
            "INSERT OR REPLACE INTO deleted_messages (thread_id, id, seq) VALUES (?, ?, ?)",
            (thread_id, message_id, gone[0]),
        )
        return True

    async def insert_ref(self, ref: CapabilityRef) -> bool:
        try:
            self.conn.execute(
                "INSERT INTO capability_refs (thread_id, kind, ref_id, message_id, actor, body)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (ref.thread_id, ref.kind, ref.ref_id, ref.message_id, ref.actor, dumps(ref.body)),
            )
        except sqlite3.IntegrityError:
            return False
        return True

    async def release_ref(self, release: RefRelease) -> bool:
        gone = self.conn.execute(
            "DELETE FROM capability_refs WHERE thread_id = ? AND kind = ? AND ref_id = ? AND message_id = ?",
            (release.thread_id, release.kind, release.ref_id, release.message_id),
        )
        return gone.rowcount > 0

    async def delete_refs_of(self, message_id: str) -> None:
        self.conn.execute("DELETE FROM capability_refs WHERE message_id = ?", (message_id,))

    async def keep_once(self, record: IdempotencyRecord) -> bool:
        r = record
        expired = "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND expires_at <= ?"
        self.conn.execute(expired, (r.scope, r.key, r.created_at))
        inserted = self.conn.execute(
            "INSERT OR IGNORE INTO idempotency_keys"
            " (scope, key, fingerprint, token, created_at, expires_at, status, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (r.scope, r.key, r.fingerprint, r.token, r.created_at, r.expires_at, r.status, r.body),
        )
        return inserted.rowcount > 0

    async def append_event(self, thread_id: str, event: NewEvent) -> EventRecord:
        conn = self.conn
        seq = conn.execute(
            "UPDATE threads SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq", (thread_id,)
        ).fetchone()[0]
        gid = conn.execute(
            "INSERT INTO events (thread_id, seq, type, created_at, data) VALUES (?, ?, ?, ?, ?)",
            (thread_id, seq, event.type, event.created_at, dumps(event.data)),
        ).lastrowid
        return EventRecord(
            thread_id=thread_id, seq=seq, type=event.type, created_at=event.created_at, data=event.data, gid=gid or 0
        )

    async def open_membership(self, thread_id: str, actor_id: str, from_seq: int) -> None:
        self.conn.execute(
            "INSERT INTO memberships (actor_id, thread_id, from_seq, to_seq) VALUES (?, ?, ?, NULL)",
            (actor_id, thread_id, from_seq),
        )

    async def close_memberships(self, thread_id: str, actor_ids: Sequence[str], to_seq: int) -> None:
        self.conn.executemany(
            "UPDATE memberships SET to_seq = ? WHERE thread_id = ? AND actor_id = ? AND to_seq IS NULL",
            [(to_seq, thread_id, actor_id) for actor_id in actor_ids],
        )
