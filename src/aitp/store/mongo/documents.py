"""The MongoDB store's documents: how records are stored and read back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.client_session import AsyncClientSession

from aitp.store.base import (
    ActorRecord,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    ThreadRecord,
    capability_version_from_document,
)

Session = AsyncClientSession


def thread_record(doc: dict[str, Any]) -> ThreadRecord:
    return ThreadRecord(
        id=doc["_id"],
        created_at=doc["created_at"],
        creator=doc["creator"],
        metadata=dict(doc.get("metadata") or {}),
        parent_id=doc.get("parent_id"),
        tool_resources=doc.get("tool_resources"),
        last_seq=doc.get("last_seq", 0),
    )


def actor_record(doc: dict[str, Any]) -> ActorRecord:
    return ActorRecord(
        thread_id=doc["thread_id"],
        id=doc["actor_id"],
        client_id=doc.get("client_id"),
        capabilities=list(doc.get("capabilities") or []),
        joined_at=doc["joined_at"],
    )


def actor_doc(a: ActorRecord, position: int) -> dict[str, Any]:
    return {
        "_id": f"{a.thread_id}/{a.id}",
        "thread_id": a.thread_id,
        "actor_id": a.id,
        "client_id": a.client_id,
        "capabilities": a.capabilities,
        "joined_at": a.joined_at,
        "position": position,
    }


def message_record(doc: dict[str, Any]) -> MessageRecord:
    return MessageRecord(
        id=doc["_id"],
        thread_id=doc["thread_id"],
        seq=doc["seq"],
        created_at=doc["created_at"],
        actor=doc["actor"],
        role=doc["role"],
        content=list(doc["content"]),
        attachments=list(doc.get("attachments") or []),
        metadata=dict(doc.get("metadata") or {}),
        aitp=doc.get("aitp"),
    )


def message_doc(m: MessageRecord) -> dict[str, Any]:
    return {
        "_id": m.id,
        "thread_id": m.thread_id,
        "seq": m.seq,
        "created_at": m.created_at,
        "actor": m.actor,
        "role": m.role,
        "content": m.content,
        "attachments": m.attachments,
        "metadata": m.metadata,
        "aitp": m.aitp,
    }


def event_record(doc: dict[str, Any]) -> EventRecord:
    return EventRecord(
        thread_id=doc["thread_id"],
        seq=doc["seq"],
        type=doc["type"],
        created_at=doc["created_at"],
        data=doc["data"],
        gid=doc.get("gid", 0),
    )


def key_record(doc: dict[str, Any]) -> KeyRecord:
    return KeyRecord(
        id=doc["_id"],
        hash=doc["hash"],
        actor=doc["actor"],
        admin=bool(doc["admin"]),
        scopes=list(doc.get("scopes") or []),
        created_at=doc["created_at"],
        prefix=doc["prefix"],
    )


def capability_version_record(doc: dict[str, Any]) -> CapabilityVersionRecord:
    return capability_version_from_document(doc["document"], doc["created_at"], doc["created_by"])


def idempotency_id(scope: str, key: str) -> str:
    return f"{scope} {key}"  # a scope (key id or "admin") has no space, so the pair is unambiguous


def idempotency_doc(record: IdempotencyRecord) -> dict[str, Any]:
    # Dates, not numbers: a TTL index only expires documents by a BSON date.
    return {
        "scope": record.scope,
        "key": record.key,
        "fingerprint": record.fingerprint,
        "token": record.token,
        "created_at": datetime.fromtimestamp(record.created_at, UTC),
        "expires_at": datetime.fromtimestamp(record.expires_at, UTC),
        "status": record.status,
        "body": record.body,
    }


def seconds(value: Any) -> float:
    if value.tzinfo is None:  # a client without tz_aware: BSON dates are UTC
        value = value.replace(tzinfo=UTC)
    return float(value.timestamp())


def idempotency_record(doc: dict[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=doc["scope"],
        key=doc["key"],
        fingerprint=doc["fingerprint"],
        token=doc["token"],
        created_at=seconds(doc["created_at"]),
        expires_at=seconds(doc["expires_at"]),
        status=doc.get("status"),
        body=doc.get("body"),
    )


async def thread_actors(db: Any, thread_id: str, session: Session | None = None) -> list[ActorRecord]:
    cursor = db.thread_actors.find({"thread_id": thread_id}, session=session).sort("position", ASCENDING)
    return [actor_record(d) async for d in cursor]


def ref_key(thread_id: str, kind: str, ref_id: str) -> str:
    return f"{thread_id}|{kind}|{ref_id}"
