"""The MongoDB store, through PyMongo's native async API: transaction bodies in multi-document transactions,
reads, and a change stream to hear of other instances' writes. Its connection and collections are its
engine's (engine.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError, OperationFailure

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    Page,
    Store,
    ThreadRecord,
    capability_version_document,
)
from aitp.store.mongo.documents import (
    capability_version_record,
    event_record,
    idempotency_doc,
    idempotency_id,
    idempotency_record,
    key_record,
    message_record,
    ref_key,
    thread_actors,
    thread_record,
)
from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.tx import MongoTx
from aitp.store.transaction import Body

T = TypeVar("T")
log = logging.getLogger(__name__)


def _within(page: Page[Any]) -> dict[str, Any]:
    """The filter that keeps a key strictly between the page's cursors."""
    return {op: bound for op, bound in (("$gt", page.above), ("$lt", page.below)) if bound is not None}


class MongoStore(Store):
    """The store on a MongoDB database: transaction bodies and reads through its engine's client."""

    def __init__(self, url: str, database: str) -> None:
        super().__init__()
        self.engine = MongoEngine(url, database)

    @classmethod
    def from_url(cls, url: str) -> MongoStore:
        """The database name comes from the URL path; `aitp` when there is none."""
        path = urlsplit(url).path.strip("/")
        return cls(url, path or "aitp")

    @property
    def _db(self) -> Any:
        return self.engine.db

    async def open(self) -> None:
        await self.engine.open()

    async def close(self) -> None:
        await self.engine.close()

    async def exists(self) -> bool:
        return await self.engine.exists()

    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        db = self.engine.db
        return await self.engine.transaction(lambda session: body(MongoTx(db, session)))

    # reads

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        doc = await self._db.threads.find_one({"_id": thread_id, "deleted": False})
        return None if doc is None else thread_record(doc)

    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        # Both reads at once: one round trip's latency instead of two (the actors are dropped if no thread).
        doc, actors = await asyncio.gather(
            self._db.threads.find_one({"_id": thread_id, "deleted": False}), thread_actors(self._db, thread_id)
        )
        return None if doc is None else (thread_record(doc), actors)

    async def _list_threads(self, actor_id: str | None, page: Page[str]) -> list[ThreadRecord]:
        bounds = _within(page)
        direction = ASCENDING if page.ascending else DESCENDING
        if actor_id is None:
            query: dict[str, Any] = {"deleted": False}
            if bounds:
                query["_id"] = bounds
            cursor = self._db.threads.find(query).sort("_id", direction).limit(page.limit)
            return [thread_record(d) async for d in cursor]
        # Page over memberships (indexed by actor), then load those threads.
        query = {"actor_id": actor_id}
        if bounds:
            query["thread_id"] = bounds
        memberships = self._db.thread_actors.find(query).sort("thread_id", direction).limit(page.limit)
        ids = [d["thread_id"] async for d in memberships]
        docs = {d["_id"]: d async for d in self._db.threads.find({"_id": {"$in": ids}, "deleted": False})}
        return [thread_record(docs[i]) for i in ids if i in docs]

    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        return await thread_actors(self._db, thread_id)

    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
        doc = await self._db.capability_refs.find_one({"_id": ref_key(thread_id, kind, ref_id)})
        if doc is None:
            return None
        fields = ("thread_id", "kind", "ref_id", "message_id", "actor", "body")
        return CapabilityRef(**{name: doc[name] for name in fields})

    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None:
        doc = await self._db.messages.find_one({"_id": message_id, "thread_id": thread_id})
        return None if doc is None else message_record(doc)

    async def _list_messages(self, thread_id: str, page: Page[int]) -> list[MessageRecord]:
        query: dict[str, Any] = {"thread_id": thread_id}
        bounds = _within(page)
        if bounds:
            query["seq"] = bounds
        cursor = self._db.messages.find(query).sort("seq", ASCENDING if page.ascending else DESCENDING)
        return [message_record(d) async for d in cursor.limit(page.limit)]

    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        cursor = (
            self._db.events.find({"thread_id": thread_id, "seq": {"$gt": after}}).sort("seq", ASCENDING).limit(limit)
        )
        return [event_record(d) async for d in cursor]

    # keys

    async def create_key(self, key: KeyRecord) -> None:
        await self._db.api_keys.insert_one(
            {
                "_id": key.id,
                "hash": key.hash,
                "actor": key.actor,
                "admin": key.admin,
                "scopes": key.scopes,
                "created_at": key.created_at,
                "prefix": key.prefix,
            }
        )

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        doc = await self._db.api_keys.find_one({"hash": key_hash})
        return None if doc is None else key_record(doc)

    async def list_keys(self) -> list[KeyRecord]:
        return [key_record(d) async for d in self._db.api_keys.find({}).sort("_id", ASCENDING)]

    async def delete_key(self, key_id: str) -> bool:
        return (await self._db.api_keys.delete_one({"_id": key_id})).deleted_count > 0

    async def existing_key_ids(self, key_ids: Sequence[str]) -> set[str]:
        return {doc["_id"] async for doc in self._db.api_keys.find({"_id": {"$in": list(key_ids)}}, {"_id": 1})}

    async def has_admin_key(self) -> bool:
        return await self._db.api_keys.find_one({"admin": True}) is not None

    # the store-wide event log

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        cursor = self._db.events.find({"gid": {"$gt": after_gid}}).sort("gid", ASCENDING).limit(limit)
        return [event_record(d) async for d in cursor]

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, set[str]]:
        query = {"gid": {"$gt": after_gid}}
        cursor = self._db.events.find(query, {"gid": 1, "thread_id": 1}).sort("gid", ASCENDING).limit(limit)
        docs = [d async for d in cursor]
        return (int(docs[-1]["gid"]) if docs else after_gid), {d["thread_id"] for d in docs}

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        query = {"audience": actor_id, "gid": {"$gt": after_gid}}
        return [event_record(d) async for d in self._db.events.find(query).sort("gid", ASCENDING).limit(limit)]

    async def watch_threads(self, poll_interval: float) -> AsyncIterator[set[str]]:
        """A change stream on `events` (needs a replica set, as in docker-compose); polling without one."""
        pipeline = [{"$match": {"operationType": "insert"}}, {"$project": {"fullDocument.thread_id": 1}}]
        try:
            async with await self._db.events.watch(pipeline) as changes:
                log.info("following events through a MongoDB change stream")
                async for change in changes:
                    yield {change["fullDocument"]["thread_id"]}
        except OperationFailure as exc:  # e.g. a standalone server: change streams need a replica set
            log.warning("no change stream (%s); polling the event log every %.2fs instead", exc, poll_interval)
        async for threads in super().watch_threads(poll_interval):
            yield threads

    async def last_event_gid(self) -> int:
        doc = await self._db.counters.find_one({"_id": "events"})
        return 0 if doc is None else int(doc["gid"])

    # capability registry

    async def register_capability_version(self, record: CapabilityVersionRecord) -> CapabilityVersionRecord:
        key = f"{record.id}@{record.version}"
        try:
            await self._db.capability_versions.insert_one(
                {
                    "_id": key,
                    # a JSON string: schemas are full of "$ref"/"$schema" keys, which MongoDB < 5 refuses
                    "document": capability_version_document(record),
                    "created_at": record.created_at,
                    "created_by": record.created_by,
                }
            )
        except DuplicateKeyError:
            pass
        doc = await self._db.capability_versions.find_one({"_id": key})
        return capability_version_record(doc)

    async def list_capability_versions(self) -> list[CapabilityVersionRecord]:
        cursor = self._db.capability_versions.find({}).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [capability_version_record(d) async for d in cursor]

    # idempotency records

    async def claim_idempotency_key(
        self, claim: IdempotencyRecord, *, pending_timeout: float
    ) -> IdempotencyRecord | None:
        # Single-document atomic writes, no transaction: the unique _id decides who inserts first, and a
        # takeover replaces only the exact reservation it saw (by token), so two takeovers cannot both win.
        if self._idempotency_purge_is_due(claim.created_at):
            await self.purge_idempotency_keys(claim.created_at)  # the TTL monitor's job, where there is none
        records = self._db.idempotency_keys
        key = idempotency_id(claim.scope, claim.key)
        document = idempotency_doc(claim)
        while True:  # each pass that fails saw another claim win, whose fresh record the next pass returns
            try:
                await records.insert_one({"_id": key, **document})
                return None
            except DuplicateKeyError:
                pass
            found = await records.find_one({"_id": key})
            if found is None:
                continue  # released or purged meanwhile
            held = idempotency_record(found)
            if not held.reclaimable(claim.created_at, pending_timeout):
                return held
            replaced = await records.replace_one({"_id": key, "token": held.token}, document)
            if replaced.modified_count:
                return None

    async def complete_idempotency_key(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        result = await self._db.idempotency_keys.update_one(
            {"_id": idempotency_id(scope, key), "token": token, "status": None},
            {"$set": {"status": status, "body": body}},
        )
        return result.modified_count > 0

    async def release_idempotency_key(self, scope: str, key: str, token: str) -> bool:
        result = await self._db.idempotency_keys.delete_one(
            {"_id": idempotency_id(scope, key), "token": token, "status": None}
        )
        return result.deleted_count > 0

    async def purge_idempotency_keys(self, now: float) -> int:
        result = await self._db.idempotency_keys.delete_many({"expires_at": {"$lte": datetime.fromtimestamp(now, UTC)}})
        return result.deleted_count
