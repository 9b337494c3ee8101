"""The transaction primitives in a MongoDB session's transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pymongo import DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from aitp.store.base import ActorRecord, CapabilityRef, EventRecord, MessageRecord, NewEvent, RefRelease, ThreadRecord
from aitp.store.idempotency import IdempotencyRecord
from aitp.store.mongo.documents import (
    Session,
    actor_doc,
    deleted_key,
    membership_key,
    message_doc,
    message_record,
    ref_key,
    thread_actors,
    thread_record,
)
from aitp.store.mongo.idempotency import document_of, record_id, unix_seconds
from aitp.store.mongo.search import search_fields
from aitp.store.transaction import Tx

THREAD_CHANGES = ("metadata", "tool_resources", "turn_budget", "persons")
TURN_FIELDS = {"turn_budget": 1, "agent_turns": 1, "paused": 1}


class MongoTx(Tx):
    """The primitives in a session's transaction. Writers of one thread all update its document (`last_seq`),
    so MongoDB fails all but one of concurrent writers with a write conflict, and they run again."""

    __slots__ = ("db", "session", "issue")

    def __init__(self, db: Any, session: Session, issue: Callable[[], int]) -> None:
        self.db = db
        self.session = session
        self.issue = issue  # the next store-wide position (`positions.Positions`), held until the write ends

    async def insert_thread(self, thread: ThreadRecord, actors: Sequence[ActorRecord]) -> None:
        await self.db.threads.insert_one(
            {
                "_id": thread.id,
                "created_at": thread.created_at,
                "creator": thread.creator,
                "metadata": thread.metadata,
                "parent_id": thread.parent_id,
                "tool_resources": thread.tool_resources,
                "last_seq": 0,
                "deleted": False,
                "actor_count": len(actors),
            },
            session=self.session,
        )
        if actors:
            await self.db.thread_actors.insert_many(
                [actor_doc(a, i) for i, a in enumerate(actors)], session=self.session
            )

    async def thread_is_live(self, thread_id: str) -> bool:
        live = {"_id": thread_id, "deleted": False}
        return await self.db.threads.find_one(live, {"_id": 1}, session=self.session) is not None

    async def update_thread(self, thread_id: str, changes: dict[str, Any]) -> ThreadRecord | None:
        doc = await self.db.threads.find_one_and_update(
            {"_id": thread_id, "deleted": False},
            {"$set": {k: v for k, v in changes.items() if k in THREAD_CHANGES}},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        return None if doc is None else thread_record(doc)

    async def turns(self, thread_id: str) -> tuple[int | None, int, bool] | None:
        live = {"_id": thread_id, "deleted": False}
        doc = await self.db.threads.find_one(live, TURN_FIELDS, session=self.session)
        if doc is None:
            return None
        return doc.get("turn_budget"), doc.get("agent_turns") or 0, bool(doc.get("paused"))

    async def set_turns(self, thread_id: str, agent_turns: int, paused: bool) -> None:
        turns = {"$set": {"agent_turns": agent_turns, "paused": paused}}
        await self.db.threads.update_one({"_id": thread_id}, turns, session=self.session)

    async def clear_thread(self, thread_id: str) -> None:
        tombstone = {"$set": {"deleted": True, "metadata": {}, "tool_resources": None}}
        await self.db.threads.update_one({"_id": thread_id}, tombstone, session=self.session)
        for name in ("messages", "thread_actors", "events", "capability_refs", "deleted_messages"):
            await self.db[name].delete_many({"thread_id": thread_id}, session=self.session)

    async def actors(self, thread_id: str) -> list[ActorRecord]:
        return await thread_actors(self.db, thread_id, self.session)

    async def is_member(self, thread_id: str, actor_id: str) -> bool:
        member = {"thread_id": thread_id, "actor_id": actor_id}
        return await self.db.thread_actors.find_one(member, {"_id": 1}, session=self.session) is not None

    async def take_seat(self, thread_id: str, members: int, limit: int | None) -> bool:
        """Counting the actor documents would not do: two transactions inserting different actors do not
        conflict, so each could see the other's seat as free. Both update the thread's `actor_count`
        instead, through a filter that matches only below the limit: MongoDB fails the second writer of
        one document with a write conflict and `with_transaction` runs it again on the newer count."""
        threads = self.db.threads
        thread = await threads.find_one({"_id": thread_id}, {"actor_count": 1}, session=self.session)
        if not isinstance(thread.get("actor_count"), int):  # stored before actors were counted: count them now
            await threads.update_one({"_id": thread_id}, {"$set": {"actor_count": members}}, session=self.session)
        guard: dict[str, Any] = {"_id": thread_id}
        if limit is not None:
            guard["actor_count"] = {"$lt": limit}
        taken = await threads.update_one(guard, {"$inc": {"actor_count": 1}}, session=self.session)
        return bool(taken.matched_count)

    async def free_seat(self, thread_id: str, members: int) -> None:
        await self.db.threads.update_one({"_id": thread_id}, {"$set": {"actor_count": members}}, session=self.session)

    async def insert_actor(self, actor: ActorRecord) -> None:
        members = self.db.thread_actors
        last = await members.find_one(
            {"thread_id": actor.thread_id}, sort=[("position", DESCENDING)], session=self.session
        )
        position = 0 if last is None else last["position"] + 1
        await members.insert_one(actor_doc(actor, position), session=self.session)

    async def update_actor(self, actor: ActorRecord) -> None:
        await self.db.thread_actors.update_one(
            {"_id": f"{actor.thread_id}/{actor.id}"},
            {"$set": {"client_id": actor.client_id, "capabilities": actor.capabilities}},
            session=self.session,
        )

    async def delete_actor(self, thread_id: str, actor_id: str) -> bool:
        result = await self.db.thread_actors.delete_one({"_id": f"{thread_id}/{actor_id}"}, session=self.session)
        return result.deleted_count > 0

    async def insert_message(self, message: MessageRecord) -> None:
        # with its searchable text: indexed in this transaction (search.py)
        await self.db.messages.insert_one({**message_doc(message), **search_fields(message)}, session=self.session)

    async def set_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str]
    ) -> MessageRecord | None:
        doc = await self.db.messages.find_one_and_update(
            {"_id": message_id, "thread_id": thread_id},
            {"$set": {"metadata": metadata}},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        return None if doc is None else message_record(doc)

    async def delete_message(self, thread_id: str, message_id: str) -> bool:
        gone = await self.db.messages.find_one_and_delete(
            {"_id": message_id, "thread_id": thread_id}, {"seq": 1}, session=self.session
        )
        if gone is None:
            return False
        # an update with upsert, not replace_one: nx-27017 did not keep a replace_one upsert in a transaction
        tombstone = {"thread_id": thread_id, "seq": gone["seq"]}
        await self.db.deleted_messages.update_one(
            {"_id": deleted_key(thread_id, message_id)}, {"$set": tombstone}, upsert=True, session=self.session
        )
        return True

    async def insert_ref(self, ref: CapabilityRef) -> bool:
        try:
            await self.db.capability_refs.insert_one(
                {
                    "_id": ref_key(ref.thread_id, ref.kind, ref.ref_id),
                    "thread_id": ref.thread_id,
                    "kind": ref.kind,
                    "ref_id": ref.ref_id,
                    "message_id": ref.message_id,
                    "actor": ref.actor,
                    "body": ref.body,
                },
                session=self.session,
            )
        except DuplicateKeyError:
            return False
        return True

    async def release_ref(self, release: RefRelease) -> bool:
        key = ref_key(release.thread_id, release.kind, release.ref_id)
        gone = await self.db.capability_refs.delete_one(
            {"_id": key, "message_id": release.message_id}, session=self.session
        )
        return gone.deleted_count > 0

    async def delete_refs_of(self, message_id: str) -> None:
        await self.db.capability_refs.delete_many({"message_id": message_id}, session=self.session)

    async def keep_once(self, record: IdempotencyRecord) -> bool:
        records, key = self.db.idempotency_keys, record_id(record.scope, record.key)
        # read, then insert: a duplicate key error would abort the whole transaction; two transactions
        # keeping one key conflict on it, and the one run again finds the other's record
        held = await records.find_one({"_id": key}, {"expires_at": 1}, session=self.session)
        if held is not None:
            if unix_seconds(held["expires_at"]) > record.created_at:
                return False
            await records.delete_one({"_id": key}, session=self.session)
        await records.insert_one({"_id": key, **document_of(record)}, session=self.session)
        return True

    async def append_event(self, thread_id: str, event: NewEvent) -> EventRecord:
        doc = await self.db.threads.find_one_and_update(
            {"_id": thread_id},
            {"$inc": {"last_seq": 1}},
            projection={"last_seq": 1},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        seq = doc["last_seq"]
        gid = self.issue()  # no shared counter: see positions.py
        await self.db.events.insert_one(
            {
                "thread_id": thread_id,
                "seq": seq,
                "gid": gid,
                "type": event.type,
                "created_at": event.created_at,
                "data": event.data,
            },
            session=self.session,
        )
        return EventRecord(
            thread_id=thread_id, seq=seq, type=event.type, created_at=event.created_at, data=event.data, gid=gid
        )

    async def open_membership(self, thread_id: str, actor_id: str, from_seq: int) -> None:
        doc = {"_id": membership_key(thread_id, actor_id, from_seq), "thread_id": thread_id, "actor_id": actor_id}
        await self.db.memberships.insert_one({**doc, "from_seq": from_seq, "to_seq": None}, session=self.session)

    async def close_memberships(self, thread_id: str, actor_ids: Sequence[str], to_seq: int) -> None:
        if actor_ids:
            open_ones = {"thread_id": thread_id, "actor_id": {"$in": list(actor_ids)}, "to_seq": None}
            await self.db.memberships.update_many(open_ones, {"$set": {"to_seq": to_seq}}, session=self.session)
