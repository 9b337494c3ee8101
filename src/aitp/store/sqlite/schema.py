"""The embedded store's tables, and how their rows read as records."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping
from dataclasses import fields
from typing import Any, TypeVar

import orjson

from aitp.store.base import ActorRecord, CapabilityRef, EventRecord, MessageRecord, ThreadRecord

R = TypeVar("R")
Reader = Callable[[sqlite3.Row], R]

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    creator TEXT NOT NULL,
    metadata TEXT NOT NULL,
    parent_id TEXT,
    tool_resources TEXT,
    last_seq INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    turn_budget INTEGER,
    persons TEXT NOT NULL DEFAULT '[]',
    agent_turns INTEGER NOT NULL DEFAULT 0,
    paused INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS thread_actors (
    thread_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    client_id TEXT,
    capabilities TEXT NOT NULL,
    joined_at INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (thread_id, actor_id)
);
CREATE INDEX IF NOT EXISTS thread_actors_by_actor ON thread_actors (actor_id, thread_id);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    attachments TEXT NOT NULL,
    metadata TEXT NOT NULL,
    aitp TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_thread_seq ON messages (thread_id, seq);
-- Where a deleted message stood in its thread: a page cursor naming it still reads on from there.
CREATE TABLE IF NOT EXISTS deleted_messages (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (thread_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_thread_seq ON events (thread_id, seq);
-- Who sees which events in its inbox: per actor and thread, the seqs from its joining event to the event
-- it left by (open while it is a member). Written when actors join and leave, never per event.
CREATE TABLE IF NOT EXISTS memberships (
    actor_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    from_seq INTEGER NOT NULL,
    to_seq INTEGER,
    PRIMARY KEY (actor_id, thread_id, from_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS open_memberships_by_thread ON memberships (thread_id, actor_id) WHERE to_seq IS NULL;
CREATE TABLE IF NOT EXISTS capability_refs (
    thread_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    ref_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, kind, ref_id)
);
CREATE INDEX IF NOT EXISTS capability_refs_by_message ON capability_refs (message_id);
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    actor TEXT NOT NULL,
    admin INTEGER NOT NULL,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    prefix TEXT NOT NULL,
    expires_at INTEGER
);
CREATE TABLE IF NOT EXISTS capability_versions (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    version TEXT NOT NULL,
    document TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    UNIQUE (id, version)
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    status INTEGER,
    body TEXT,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);
CREATE TABLE IF NOT EXISTS actor_profiles (
    actor TEXT PRIMARY KEY,
    display_name TEXT,
    avatar_url TEXT,
    description TEXT,
    updated_at INTEGER NOT NULL,
    accent_color TEXT
);
CREATE TABLE IF NOT EXISTS one_time_codes (
    hash TEXT PRIMARY KEY,
    purpose TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    actor TEXT NOT NULL,
    admin INTEGER NOT NULL,
    scopes TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS one_time_codes_by_expiry ON one_time_codes (expires_at);
CREATE TABLE IF NOT EXISTS a2a_agents (
    actor TEXT PRIMARY KEY,
    serve INTEGER NOT NULL,
    capabilities TEXT NOT NULL,
    card_url TEXT,
    updated_at INTEGER NOT NULL,
    cursor INTEGER NOT NULL,
    reply_policy TEXT NOT NULL DEFAULT 'addressed',
    credentials TEXT
);
-- A remote A2A agent's work per thread: its context there and the task waiting for input (store/a2a.py).
CREATE TABLE IF NOT EXISTS a2a_remote_tasks (
    actor TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    task_id TEXT,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (actor, thread_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_contexts (
    caller TEXT NOT NULL,
    agent TEXT NOT NULL,
    context_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    PRIMARY KEY (caller, agent, context_id)
);
"""


# Stores written before memberships kept one audience row per event and member: their memberships are the
# runs of consecutive seqs each actor saw of each thread (open if it is still a member), then the rows go.
AUDIENCE_TO_MEMBERSHIPS = """
INSERT OR IGNORE INTO memberships (actor_id, thread_id, from_seq, to_seq)
SELECT actor_id, thread_id, MIN(seq), MAX(seq) FROM (
    SELECT a.actor_id, e.thread_id, e.seq,
           e.seq - ROW_NUMBER() OVER (PARTITION BY a.actor_id, e.thread_id ORDER BY e.seq) AS run
    FROM event_audience a JOIN events e ON e.gid = a.gid
) GROUP BY actor_id, thread_id, run;
UPDATE memberships SET to_seq = NULL
WHERE EXISTS (
    SELECT 1 FROM thread_actors ta WHERE ta.thread_id = memberships.thread_id AND ta.actor_id = memberships.actor_id
) AND to_seq = (SELECT last_seq FROM threads t WHERE t.id = memberships.thread_id);
DROP TABLE event_audience;
"""


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _reader(record: type[R], *, json: Collection[str] = (), columns: Mapping[str, str] | None = None) -> Reader[R]:
    """How a row reads as `record`: each field, in order, from the column of its name (or the one `columns`
    names), the JSON text of the `json` fields decoded. (Positional: a quarter faster than keywords.)"""
    renamed = columns or {}
    plan = [(renamed.get(f.name, f.name), f.name in json) for f in fields(record)]  # type: ignore[arg-type]

    def read(row: sqlite3.Row) -> R:
        return record(*[loads(row[column]) if decoded else row[column] for column, decoded in plan])

    return read


thread_record = _reader(ThreadRecord, json=("metadata", "tool_resources", "persons"))
# the threads table's columns added since its first version, each with its definition (`ALTER TABLE` on a store
# written before)
THREAD_COLUMNS_ADDED = {
    "turn_budget": "INTEGER",
    "persons": "TEXT NOT NULL DEFAULT '[]'",
    "agent_turns": "INTEGER NOT NULL DEFAULT 0",
    "paused": "INTEGER NOT NULL DEFAULT 0",
}
# the actor_profiles columns added since its first version, each with its definition (`ALTER TABLE` on a store
# written before: aitp.store.sqlite.profiles.upgrade)
PROFILE_COLUMNS_ADDED = {"accent_color": "TEXT"}
actor_record = _reader(ActorRecord, json=("capabilities",), columns={"id": "actor_id"})
message_record = _reader(MessageRecord, json=("content", "attachments", "metadata", "aitp"))
event_record = _reader(EventRecord, json=("data",))
ref_record = _reader(CapabilityRef, json=("body",))
