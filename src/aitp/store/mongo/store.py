"""The MongoDB store, through PyMongo's native async API: transaction bodies in multi-document transactions,
reads, and a change stream to hear of other instances' writes. Its connection and collections are its
engine's (engine.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

from aitp.store.base import ActorRecord, CapabilityRef, EventRecord, MessageRecord, Page, Store, ThreadRecord
from aitp.store.mongo.a2a import MongoA2A
from aitp.store.mongo.capabilities import MongoCapabilities
from aitp.store.mongo.codes import MongoCodes
from aitp.store.mongo.documents import (
    event_record,
    message_record,
    ref_key,
    ref_record,
    thread_actors,
    thread_record,
)
from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.idempotency import MongoIdempotency
from aitp.store.mongo.keys import MongoKeys
from aitp.store.mongo.profiles import MongoProfiles
from aitp.store.mongo.tx import MongoTx
from aitp.store.mongo.webhooks import MongoWebhooks
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
        self.keys = MongoKeys(self.engine)
        self.idempotency = MongoIdempotency(self.engine)
        self.capabilities = MongoCapabilities(self.engine)
        self.profiles = MongoProfiles(self.engine)
        self.codes = MongoCodes(self.engine)
        self.webhooks = MongoWebhooks(self.engine)
        self.a2a = MongoA2A(self.engine)

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
        # each write its own transaction, awaited on the network: nothing to share, nothing holds the loop
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
        return None if doc is None else ref_record(doc)

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
