"""The MongoDB store, through PyMongo's native async API: transaction bodies in multi-document transactions,
reads, and a change stream to hear of other instances' writes. Its connection and collections are its
engine's (engine.py)."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.uri_parser import parse_uri

from aitp.redaction import redact
from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    EventRecord,
    MessageRecord,
    Page,
    Store,
    ThreadRecord,
    changes_thread,
    threads_of,
)
from aitp.store.mongo.a2a import MongoA2A
from aitp.store.mongo.activity import MongoActivity
from aitp.store.mongo.activity import create_indexes as activity_indexes
from aitp.store.mongo.capabilities import MongoCapabilities
from aitp.store.mongo.codes import MongoCodes
from aitp.store.mongo.documents import (
    deleted_key,
    event_record,
    message_record,
    ref_key,
    ref_record,
    thread_actors,
    thread_record,
)
from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.idempotency import MongoIdempotency
from aitp.store.mongo.identities import MongoIdentities
from aitp.store.mongo.keys import MongoKeys
from aitp.store.mongo.positions import HEARTBEAT, LEASE, Positions
from aitp.store.mongo.presence import MongoPresence
from aitp.store.mongo.presence import create_indexes as presence_indexes
from aitp.store.mongo.profiles import MongoProfiles
from aitp.store.mongo.search import MongoSearch
from aitp.store.mongo.search import open_index as open_search_index
from aitp.store.mongo.tx import MongoTx
from aitp.store.mongo.webhooks import MongoWebhooks
from aitp.store.transaction import Body

T = TypeVar("T")
log = logging.getLogger(__name__)


def _within(page: Page[Any]) -> dict[str, Any]:
    """The filter that keeps a key strictly between the page's cursors."""
    return {op: bound for op, bound in (("$gt", page.above), ("$lt", page.below)) if bound is not None}


INBOX_WINDOW = 2_000  # events an inbox read scans before it reads through the actor's memberships instead


def _within_spans(spans: dict[str, list[tuple[int, int | None]]], event: dict[str, Any]) -> bool:
    seq = event["seq"]
    return any(start <= seq and (end is None or seq <= end) for start, end in spans.get(event["thread_id"], ()))


class MongoStore(Store):
    """The store on a MongoDB database: transaction bodies and reads through its engine's client."""

    def __init__(self, url: str, database: str) -> None:
        super().__init__()
        self.engine = MongoEngine(url, database)
        self.positions = Positions()
        self.keys = MongoKeys(self.engine)
        self.idempotency = MongoIdempotency(self.engine)
        self.capabilities = MongoCapabilities(self.engine)
        self.profiles = MongoProfiles(self.engine)
        self.codes = MongoCodes(self.engine)
        self.webhooks = MongoWebhooks(self.engine)
        self.a2a = MongoA2A(self.engine)
        self.identities = MongoIdentities(self.engine)
        self.activity = MongoActivity(self.engine, self.positions)
        self.presence = MongoPresence(self.engine)
        self.search = MongoSearch(self.engine)

    @classmethod
    def from_url(cls, url: str) -> MongoStore:
        """The database name comes from the URL path; `aitp` when there is none. A `mongodb://` URL the driver
        cannot read is a ValueError saying why (a `mongodb+srv://` one is read when the store opens: reading
        it takes a DNS lookup)."""
        if url.startswith("mongodb://"):
            try:
                with warnings.catch_warnings():  # an unknown option only warns, as the client warns when it opens
                    warnings.simplefilter("ignore")
                    parse_uri(url, warn=True)
            except (ValueError, PyMongoError) as error:
                raise ValueError(
                    f"MongoDB URL {redact(url)!r}: {error} (a valid one: mongodb://host:27017/aitp?replicaSet=rs0)"
                ) from error
        path = urlsplit(url).path.strip("/")
        return cls(url, path or "aitp")

    @property
    def _db(self) -> Any:
        return self.engine.db

    async def open(self) -> None:
        await self.engine.open()
        # collections outside any transaction: made by their first write; their indexes here
        await activity_indexes(self.engine.db)
        await presence_indexes(self.engine.db)
        await open_search_index(self.engine.db)  # and the messages of a store written before it, once
        await self.positions.start(self.engine.db)

    async def close(self) -> None:
        await self.positions.stop()
        await self.engine.close()

    async def exists(self) -> bool:
        return await self.engine.exists()

    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        # each write its own transaction, awaited on the network: nothing to share, nothing holds the loop
        db, positions = self.engine.db, self.positions
        issued: list[int] = []

        def issue() -> int:
            issued.append(positions.issue())
            return issued[-1]

        async def run(session: AsyncClientSession) -> T:
            result = await body(MongoTx(db, session, issue))
            if issued:
                positions.check_lease()  # its positions hold the safe point back only while the lease runs
            return result

        try:
            result = await self.engine.transaction(run)
        except PyMongoError as error:
            if error.has_error_label("UnknownTransactionCommitResult"):
                # it may still commit: its positions keep holding the safe point back while the lease would
                asyncio.get_running_loop().call_later(LEASE, positions.release, issued)
                raise
            positions.release(issued)
            raise
        except BaseException:
            positions.release(issued)
            raise
        positions.release(issued)
        return result

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

    async def message_seq(self, thread_id: str, message_id: str) -> int | None:
        doc = await self._db.messages.find_one({"_id": message_id, "thread_id": thread_id}, {"seq": 1})
        if doc is None:
            doc = await self._db.deleted_messages.find_one({"_id": deleted_key(thread_id, message_id)}, {"seq": 1})
        return None if doc is None else int(doc["seq"])

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

    async def _settled(self, after_gid: int) -> dict[str, int]:
        """Positions after a cursor that a reader may read: below the safe point (see positions.py)."""
        return {"$gt": after_gid, "$lt": await self.positions.safe_point()}

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        cursor = self._db.events.find({"gid": await self._settled(after_gid)}).sort("gid", ASCENDING).limit(limit)
        return [event_record(d) async for d in cursor]

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, dict[str, bool]]:
        query = {"gid": await self._settled(after_gid)}
        fields = {"gid": 1, "thread_id": 1, "type": 1}
        docs = [d async for d in self._db.events.find(query, fields).sort("gid", ASCENDING).limit(limit)]
        return (int(docs[-1]["gid"]) if docs else after_gid), threads_of((d["thread_id"], d["type"]) for d in docs)

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        # A follower near the head: the next INBOX_WINDOW events of the log, kept where the actor was a
        # member when they were written (one read of its memberships in the threads they are of).
        settled = await self._settled(after_gid)
        window = [d async for d in self._db.events.find({"gid": settled}).sort("gid", 1).limit(INBOX_WINDOW)]
        spans = await self._memberships(actor_id, {"$in": list({d["thread_id"] for d in window})})
        found = [event_record(d) for d in window if _within_spans(spans, d)][:limit]
        if len(found) == limit or len(window) < INBOX_WINDOW:
            return found
        # Further back: through the actor's memberships, each a range of its thread's log.
        spans = await self._memberships(actor_id, None)
        query = {"thread_id": {"$in": list(spans)}, "gid": {**settled, "$gt": window[-1]["gid"]}}
        async for doc in self._db.events.find(query).sort("gid", 1):
            if _within_spans(spans, doc):
                found.append(event_record(doc))
                if len(found) == limit:
                    break
        return found

    async def _memberships(self, actor_id: str, threads: Any) -> dict[str, list[tuple[int, int | None]]]:
        query: dict[str, Any] = (
            {"actor_id": actor_id} if threads is None else {"actor_id": actor_id, "thread_id": threads}
        )
        spans: dict[str, list[tuple[int, int | None]]] = {}
        async for m in self._db.memberships.find(query, {"thread_id": 1, "from_seq": 1, "to_seq": 1}):
            spans.setdefault(m["thread_id"], []).append((m["from_seq"], m["to_seq"]))
        return spans

    async def watch_threads(self, poll_interval: float) -> AsyncIterator[dict[str, bool]]:
        """A change stream on `events` (needs a replica set, as in docker-compose); polling without one.

        A thread is named twice: when its event commits (its followers read by seq: they see it at once), and
        again once the safe point has passed the event (inbox readers, reading by position, see it then)."""
        pipeline = [
            {"$match": {"operationType": "insert"}},
            {"$project": {"fullDocument.thread_id": 1, "fullDocument.gid": 1, "fullDocument.type": 1}},
        ]
        try:
            async with await self._db.events.watch(pipeline, max_await_time_ms=int(HEARTBEAT * 1000)) as changes:
                log.info("following events through a MongoDB change stream")
                # thread -> its highest position seen above the safe point, and whether its events may
                # have changed it (named again when settled: a joined actor's inbox reads its join only then)
                unsettled: dict[str, tuple[int, bool]] = {}
                while True:
                    change = await changes.try_next()
                    if change is not None:
                        event = change["fullDocument"]
                        thread, changed = event["thread_id"], changes_thread(event.get("type", ""))
                        gid, changed_before = unsettled.get(thread, (0, False))
                        unsettled[thread] = (max(event["gid"], gid), changed or changed_before)
                        yield {thread: changed}
                        continue
                    if unsettled:
                        safe = await self.positions.safe_point()
                        settled = {thread: changed for thread, (gid, changed) in unsettled.items() if gid < safe}
                        for thread in settled:
                            del unsettled[thread]
                        if settled:
                            yield settled
        except OperationFailure as exc:  # e.g. a standalone server: change streams need a replica set
            log.warning("no change stream (%s); polling the event log every %.2fs instead", exc, poll_interval)
        async for threads in super().watch_threads(poll_interval):
            yield threads

    async def last_event_gid(self) -> int:
        """Below the safe point: every event that commits from now on is after it."""
        return await self.positions.safe_point() - 1
