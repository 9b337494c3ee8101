"""The MongoDB store's documents: how records are stored and read back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from pymongo import ASCENDING
from pymongo.asynchronous.client_session import AsyncClientSession

from aitp.store.base import ActorRecord, CapabilityRef, EventRecord, MessageRecord, ThreadRecord

Session = AsyncClientSession
R = TypeVar("R")


def _reader(record: type[R], **keys: str) -> Callable[[dict[str, Any]], R]:
    """How a document reads as `record`: each field from the key of its name (or the one `keys` names). A
    field the document lacks or holds null for (one written by an earlier version) takes the record's default."""
    plan = [(f.name, keys.get(f.name, f.name)) for f in fields(record)]  # type: ignore[arg-type]

    def read(doc: dict[str, Any]) -> R:
        return record(**{name: doc[key] for name, key in plan if doc.get(key) is not None})

    return read


thread_record = _reader(ThreadRecord, id="_id")
actor_record = _reader(ActorRecord, id="actor_id")
message_record = _reader(MessageRecord, id="_id")
event_record = _reader(EventRecord)
ref_record = _reader(CapabilityRef)


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


async def thread_actors(db: Any, thread_id: str, session: Session | None = None) -> list[ActorRecord]:
    cursor = db.thread_actors.find({"thread_id": thread_id}, session=session).sort("position", ASCENDING)
    return [actor_record(d) async for d in cursor]


def ref_key(thread_id: str, kind: str, ref_id: str) -> str:
    return f"{thread_id}|{kind}|{ref_id}"


def deleted_key(thread_id: str, message_id: str) -> str:
    """A deleted message's tombstone (`deleted_messages`): where it stood, for cursors that name it."""
    return f"{thread_id}|{message_id}"


def membership_key(thread_id: str, actor_id: str, from_seq: int) -> str:
    """A membership's `_id`: one per actor, thread and joining event (an actor may leave and join again)."""
    return f"{thread_id}\x00{actor_id}\x00{from_seq}"
