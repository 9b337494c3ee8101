"""The embedded store's tables, and how their rows read as records."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    ThreadRecord,
    capability_version_from_document,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    creator TEXT NOT NULL,
    metadata TEXT NOT NULL,
    parent_id TEXT,
    tool_resources TEXT,
    last_seq INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0
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
CREATE TABLE IF NOT EXISTS events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_thread_seq ON events (thread_id, seq);
CREATE TABLE IF NOT EXISTS event_audience (
    actor_id TEXT NOT NULL,
    gid INTEGER NOT NULL,
    PRIMARY KEY (actor_id, gid)
) WITHOUT ROWID;
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
    prefix TEXT NOT NULL
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
"""


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def thread_record(row: sqlite3.Row) -> ThreadRecord:
    return ThreadRecord(
        id=row["id"],
        created_at=row["created_at"],
        creator=row["creator"],
        metadata=loads(row["metadata"]),
        parent_id=row["parent_id"],
        tool_resources=loads(row["tool_resources"]),
        last_seq=row["last_seq"],
    )


def actor_record(row: sqlite3.Row) -> ActorRecord:
    return ActorRecord(
        thread_id=row["thread_id"],
        id=row["actor_id"],
        client_id=row["client_id"],
        capabilities=loads(row["capabilities"]),
        joined_at=row["joined_at"],
    )


def message_record(row: sqlite3.Row) -> MessageRecord:
    return MessageRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        seq=row["seq"],
        created_at=row["created_at"],
        actor=row["actor"],
        role=row["role"],
        content=loads(row["content"]),
        attachments=loads(row["attachments"]),
        metadata=loads(row["metadata"]),
        aitp=loads(row["aitp"]),
    )


def event_record(row: sqlite3.Row) -> EventRecord:
    return EventRecord(
        gid=row["gid"],
        thread_id=row["thread_id"],
        seq=row["seq"],
        type=row["type"],
        created_at=row["created_at"],
        data=loads(row["data"]),
    )


def ref_record(row: sqlite3.Row) -> CapabilityRef:
    return CapabilityRef(
        thread_id=row["thread_id"],
        kind=row["kind"],
        ref_id=row["ref_id"],
        message_id=row["message_id"],
        actor=row["actor"],
        body=loads(row["body"]),
    )


def capability_version_record(row: sqlite3.Row) -> CapabilityVersionRecord:
    return capability_version_from_document(row["document"], row["created_at"], row["created_by"])


def idempotency_record(row: sqlite3.Row) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=row["scope"],
        key=row["key"],
        fingerprint=row["fingerprint"],
        token=row["token"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        status=row["status"],
        body=row["body"],
    )


def key_record(row: sqlite3.Row) -> KeyRecord:
    return KeyRecord(
        id=row["id"],
        hash=row["hash"],
        actor=row["actor"],
        admin=bool(row["admin"]),
        scopes=loads(row["scopes"]),
        created_at=row["created_at"],
        prefix=row["prefix"],
    )
