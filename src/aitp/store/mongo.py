"""The MongoDB store, through PyMongo's native async API.

Each mutation runs in a multi-document transaction (a replica set is required, as MongoDB requires
for transactions and change streams) with majority write concern. The thread document holds
`last_seq`; incrementing it inside the transaction both allocates the next seq and serialises
writers of one thread, and `with_transaction` retries the losers of a write conflict.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, ReturnDocument
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.errors import CollectionInvalid, DuplicateKeyError, OperationFailure
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from aitp.store.base import (
    ActorRecord,
    CapabilityRef,
    CapabilityVersionRecord,
    EventRecord,
    IdempotencyRecord,
    KeyRecord,
    MessageRecord,
    NewEvent,
    Page,
    RefRelease,
    Store,
    ThreadRecord,
    capability_version_document,
    capability_version_from_document,
)
from aitp.store.transaction import Body, Tx

T = TypeVar("T")
Session = AsyncClientSession


def _thread(doc: dict[str, Any]) -> ThreadRecord:
    return ThreadRecord(
        id=doc["_id"],
        created_at=doc["created_at"],
        creator=doc["creator"],
        metadata=dict(doc.get("metadata") or {}),
        parent_id=doc.get("parent_id"),
        tool_resources=doc.get("tool_resources"),
        last_seq=doc.get("last_seq", 0),
    )


def _actor(doc: dict[str, Any]) -> ActorRecord:
    return ActorRecord(
        thread_id=doc["thread_id"],
        id=doc["actor_id"],
        client_id=doc.get("client_id"),
        capabilities=list(doc.get("capabilities") or []),
        joined_at=doc["joined_at"],
    )


def _actor_doc(a: ActorRecord, position: int) -> dict[str, Any]:
    return {
        "_id": f"{a.thread_id}/{a.id}",
        "thread_id": a.thread_id,
        "actor_id": a.id,
        "client_id": a.client_id,
        "capabilities": a.capabilities,
        "joined_at": a.joined_at,
        "position": position,
    }


def _message(doc: dict[str, Any]) -> MessageRecord:
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


def _message_doc(m: MessageRecord) -> dict[str, Any]:
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


def _event(doc: dict[str, Any]) -> EventRecord:
    return EventRecord(
        thread_id=doc["thread_id"],
        seq=doc["seq"],
        type=doc["type"],
        created_at=doc["created_at"],
        data=doc["data"],
        gid=doc.get("gid", 0),
    )


def _key(doc: dict[str, Any]) -> KeyRecord:
    return KeyRecord(
        id=doc["_id"],
        hash=doc["hash"],
        actor=doc["actor"],
        admin=bool(doc["admin"]),
        scopes=list(doc.get("scopes") or []),
        created_at=doc["created_at"],
        prefix=doc["prefix"],
    )


def _capability_version(doc: dict[str, Any]) -> CapabilityVersionRecord:
    return capability_version_from_document(doc["document"], doc["created_at"], doc["created_by"])


def _idempotency_id(scope: str, key: str) -> str:
    return f"{scope} {key}"  # a scope (key id or "admin") has no space, so the pair is unambiguous


def _idempotency_doc(record: IdempotencyRecord) -> dict[str, Any]:
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


def _seconds(value: Any) -> float:
    if value.tzinfo is None:  # a client without tz_aware: BSON dates are UTC
        value = value.replace(tzinfo=UTC)
    return float(value.timestamp())


def _idempotency(doc: dict[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=doc["scope"],
        key=doc["key"],
        fingerprint=doc["fingerprint"],
        token=doc["token"],
        created_at=_seconds(doc["created_at"]),
        expires_at=_seconds(doc["expires_at"]),
        status=doc.get("status"),
        body=doc.get("body"),
    )


log = logging.getLogger(__name__)


async def _actors(db: Any, thread_id: str, session: Session | None = None) -> list[ActorRecord]:
    cursor = db.thread_actors.find({"thread_id": thread_id}, session=session).sort("position", ASCENDING)
    return [_actor(d) async for d in cursor]


def _ref_id(thread_id: str, kind: str, ref_id: str) -> str:
    return f"{thread_id}|{kind}|{ref_id}"


def _within(page: Page[Any]) -> dict[str, Any]:
    """The filter that keeps a key strictly between the page's cursors."""
    return {op: bound for op, bound in (("$gt", page.above), ("$lt", page.below)) if bound is not None}


class MongoTx(Tx):
    """The primitives in a session's transaction. Writers of one thread all update its document (`last_seq`),
    so MongoDB fails all but one of concurrent writers with a write conflict, and they run again."""

    __slots__ = ("db", "session")

    def __init__(self, db: Any, session: Session) -> None:
        self.db = db
        self.session = session

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
                [_actor_doc(a, i) for i, a in enumerate(actors)], session=self.session
            )

    async def thread_is_live(self, thread_id: str) -> bool:
        live = {"_id": thread_id, "deleted": False}
        return await self.db.threads.find_one(live, {"_id": 1}, session=self.session) is not None

    async def update_thread(self, thread_id: str, changes: dict[str, Any]) -> ThreadRecord | None:
        doc = await self.db.threads.find_one_and_update(
            {"_id": thread_id, "deleted": False},
            {"$set": {k: v for k, v in changes.items() if k in ("metadata", "tool_resources")}},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        return None if doc is None else _thread(doc)

    async def clear_thread(self, thread_id: str) -> None:
        tombstone = {"$set": {"deleted": True, "metadata": {}, "tool_resources": None}}
        await self.db.threads.update_one({"_id": thread_id}, tombstone, session=self.session)
        for name in ("messages", "thread_actors", "events", "capability_refs"):
            await self.db[name].delete_many({"thread_id": thread_id}, session=self.session)

    async def actors(self, thread_id: str) -> list[ActorRecord]:
        return await _actors(self.db, thread_id, self.session)

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
        await members.insert_one(_actor_doc(actor, position), session=self.session)

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
        await self.db.messages.insert_one(_message_doc(message), session=self.session)

    async def set_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str]
    ) -> MessageRecord | None:
        doc = await self.db.messages.find_one_and_update(
            {"_id": message_id, "thread_id": thread_id},
            {"$set": {"metadata": metadata}},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        return None if doc is None else _message(doc)

    async def delete_message(self, thread_id: str, message_id: str) -> bool:
        result = await self.db.messages.delete_one({"_id": message_id, "thread_id": thread_id}, session=self.session)
        return result.deleted_count > 0

    async def insert_ref(self, ref: CapabilityRef) -> bool:
        try:
            await self.db.capability_refs.insert_one(
                {
                    "_id": _ref_id(ref.thread_id, ref.kind, ref.ref_id),
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
        key = _ref_id(release.thread_id, release.kind, release.ref_id)
        gone = await self.db.capability_refs.delete_one(
            {"_id": key, "message_id": release.message_id}, session=self.session
        )
        return gone.deleted_count > 0

    async def delete_refs_of(self, message_id: str) -> None:
        await self.db.capability_refs.delete_many({"message_id": message_id}, session=self.session)

    async def append_event(self, thread_id: str, event: NewEvent, also: Sequence[str] = ()) -> EventRecord:
        doc = await self.db.threads.find_one_and_update(
            {"_id": thread_id},
            {"$inc": {"last_seq": 1}},
            projection={"last_seq": 1},
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        seq = doc["last_seq"]
        # The store-wide position comes from one counter updated inside the transaction: a concurrent
        # writer conflicts on it and retries after this one commits, so gid order is commit order.
        counter = await self.db.counters.find_one_and_update(
            {"_id": "events"},
            {"$inc": {"gid": 1}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
            session=self.session,
        )
        gid = counter["gid"]
        audience = [a.id for a in await self.actors(thread_id)]
        audience += [a for a in also if a not in audience]
        await self.db.events.insert_one(
            {
                "thread_id": thread_id,
                "seq": seq,
                "gid": gid,
                "audience": audience,
                "type": event.type,
                "created_at": event.created_at,
                "data": event.data,
            },
            session=self.session,
        )
        return EventRecord(
            thread_id=thread_id, seq=seq, type=event.type, created_at=event.created_at, data=event.data, gid=gid
        )


class MongoStore(Store):
    def __init__(self, url: str, database: str) -> None:
        super().__init__()
        self.url = url
        self.database_name = database
        self._client: AsyncMongoClient[dict[str, Any]] | None = None

    @classmethod
    def from_url(cls, url: str) -> MongoStore:
        """The database name comes from the URL path; `aitp` when there is none."""
        path = urlsplit(url).path.strip("/")
        return cls(url, path or "aitp")

    @property
    def _db(self) -> Any:
        if self._client is None:
            raise RuntimeError("store is not open")
        return self._client.get_database(
            self.database_name,
            write_concern=WriteConcern("majority"),
            read_concern=ReadConcern("majority"),
        )

    async def open(self) -> None:
        if self._client is not None:
            return
        self._client = AsyncMongoClient(self.url, tz_aware=True)
        db = self._db
        # Collections exist before any transaction touches them (MongoDB < 4.4 cannot create them
        # inside one, and a transaction that only reads a missing collection has nothing to commit).
        existing = set(await db.list_collection_names())
        for name in (
            "threads",
            "thread_actors",
            "messages",
            "events",
            "capability_refs",
            "api_keys",
            "capability_versions",
            "idempotency_keys",
        ):
            if name not in existing:
                try:
                    await db.create_collection(name)
                except CollectionInvalid:
                    pass  # another instance created it meanwhile
        await db.thread_actors.create_index([("thread_id", ASCENDING), ("position", ASCENDING)])
        await db.thread_actors.create_index([("actor_id", ASCENDING), ("thread_id", ASCENDING)])
        await db.messages.create_index([("thread_id", ASCENDING), ("seq", ASCENDING)], unique=True)
        await db.events.create_index([("thread_id", ASCENDING), ("seq", ASCENDING)], unique=True)
        await db.events.create_index([("gid", ASCENDING)])
        await db.events.create_index([("audience", ASCENDING), ("gid", ASCENDING)])
        await db.api_keys.create_index([("hash", ASCENDING)], unique=True)
        await db.capability_refs.create_index([("message_id", ASCENDING)])
        # MongoDB deletes each record once its own `expires_at` has passed (so changing the retention
        # needs no index rebuild); `purge_idempotency_keys` does the same for servers without a TTL monitor.
        await db.idempotency_keys.create_index([("expires_at", ASCENDING)], expireAfterSeconds=0)

    async def exists(self) -> bool:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(self.url, serverSelectionTimeoutMS=5000)
        try:
            return "threads" in await client.get_database(self.database_name).list_collection_names()
        finally:
            await client.close()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        # `with_transaction` runs the body again after a transient error (a write conflict with a concurrent
        # writer of the same thread document), within its time limit
        assert self._client is not None
        db = self._db
        async with self._client.start_session() as session:
            return await session.with_transaction(
                lambda session: body(MongoTx(db, session)),
                read_concern=ReadConcern("snapshot"),
                write_concern=WriteConcern("majority"),
            )

    # reads

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        doc = await self._db.threads.find_one({"_id": thread_id, "deleted": False})
        return None if doc is None else _thread(doc)

    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        # Both reads at once: one round trip's latency instead of two (the actors are dropped if no thread).
        doc, actors = await asyncio.gather(
            self._db.threads.find_one({"_id": thread_id, "deleted": False}), _actors(self._db, thread_id)
        )
        return None if doc is None else (_thread(doc), actors)

    async def _list_threads(self, actor_id: str | None, page: Page[str]) -> list[ThreadRecord]:
        bounds = _within(page)
        direction = ASCENDING if page.ascending else DESCENDING
        if actor_id is None:
            query: dict[str, Any] = {"deleted": False}
            if bounds:
                query["_id"] = bounds
            cursor = self._db.threads.find(query).sort("_id", direction).limit(page.limit)
            return [_thread(d) async for d in cursor]
        # Page over memberships (indexed by actor), then load those threads.
        query = {"actor_id": actor_id}
        if bounds:
            query["thread_id"] = bounds
        memberships = self._db.thread_actors.find(query).sort("thread_id", direction).limit(page.limit)
        ids = [d["thread_id"] async for d in memberships]
        docs = {d["_id"]: d async for d in self._db.threads.find({"_id": {"$in": ids}, "deleted": False})}
        return [_thread(docs[i]) for i in ids if i in docs]

    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        return await _actors(self._db, thread_id)

    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
        doc = await self._db.capability_refs.find_one({"_id": _ref_id(thread_id, kind, ref_id)})
        if doc is None:
            return None
        fields = ("thread_id", "kind", "ref_id", "message_id", "actor", "body")
        return CapabilityRef(**{name: doc[name] for name in fields})

    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None:
        doc = await self._db.messages.find_one({"_id": message_id, "thread_id": thread_id})
        return None if doc is None else _message(doc)

    async def _list_messages(self, thread_id: str, page: Page[int]) -> list[MessageRecord]:
        query: dict[str, Any] = {"thread_id": thread_id}
        bounds = _within(page)
        if bounds:
            query["seq"] = bounds
        cursor = self._db.messages.find(query).sort("seq", ASCENDING if page.ascending else DESCENDING)
        return [_message(d) async for d in cursor.limit(page.limit)]

    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        cursor = (
            self._db.events.find({"thread_id": thread_id, "seq": {"$gt": after}}).sort("seq", ASCENDING).limit(limit)
        )
        return [_event(d) async for d in cursor]

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
        return None if doc is None else _key(doc)

    async def list_keys(self) -> list[KeyRecord]:
        return [_key(d) async for d in self._db.api_keys.find({}).sort("_id", ASCENDING)]

    async def delete_key(self, key_id: str) -> bool:
        return (await self._db.api_keys.delete_one({"_id": key_id})).deleted_count > 0

    async def existing_key_ids(self, key_ids: Sequence[str]) -> set[str]:
        return {doc["_id"] async for doc in self._db.api_keys.find({"_id": {"$in": list(key_ids)}}, {"_id": 1})}

    async def has_admin_key(self) -> bool:
        return await self._db.api_keys.find_one({"admin": True}) is not None

    # the store-wide event log

    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        cursor = self._db.events.find({"gid": {"$gt": after_gid}}).sort("gid", ASCENDING).limit(limit)
        return [_event(d) async for d in cursor]

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, set[str]]:
        query = {"gid": {"$gt": after_gid}}
        cursor = self._db.events.find(query, {"gid": 1, "thread_id": 1}).sort("gid", ASCENDING).limit(limit)
        docs = [d async for d in cursor]
        return (int(docs[-1]["gid"]) if docs else after_gid), {d["thread_id"] for d in docs}

    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        query = {"audience": actor_id, "gid": {"$gt": after_gid}}
        return [_event(d) async for d in self._db.events.find(query).sort("gid", ASCENDING).limit(limit)]

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
        return _capability_version(doc)

    async def list_capability_versions(self) -> list[CapabilityVersionRecord]:
        cursor = self._db.capability_versions.find({}).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        return [_capability_version(d) async for d in cursor]

    # idempotency records

    async def claim_idempotency_key(
        self, claim: IdempotencyRecord, *, pending_timeout: float
    ) -> IdempotencyRecord | None:
        # Single-document atomic writes, no transaction: the unique _id decides who inserts first, and a
        # takeover replaces only the exact reservation it saw (by token), so two takeovers cannot both win.
        if self._idempotency_purge_is_due(claim.created_at):
            await self.purge_idempotency_keys(claim.created_at)  # the TTL monitor's job, where there is none
        records = self._db.idempotency_keys
        key = _idempotency_id(claim.scope, claim.key)
        document = _idempotency_doc(claim)
        while True:  # each pass that fails saw another claim win, whose fresh record the next pass returns
            try:
                await records.insert_one({"_id": key, **document})
                return None
            except DuplicateKeyError:
                pass
            found = await records.find_one({"_id": key})
            if found is None:
                continue  # released or purged meanwhile
            held = _idempotency(found)
            if not held.reclaimable(claim.created_at, pending_timeout):
                return held
            replaced = await records.replace_one({"_id": key, "token": held.token}, document)
            if replaced.modified_count:
                return None

    async def complete_idempotency_key(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        result = await self._db.idempotency_keys.update_one(
            {"_id": _idempotency_id(scope, key), "token": token, "status": None},
            {"$set": {"status": status, "body": body}},
        )
        return result.modified_count > 0

    async def release_idempotency_key(self, scope: str, key: str, token: str) -> bool:
        result = await self._db.idempotency_keys.delete_one(
            {"_id": _idempotency_id(scope, key), "token": token, "status": None}
        )
        return result.deleted_count > 0

    async def purge_idempotency_keys(self, now: float) -> int:
        result = await self._db.idempotency_keys.delete_many({"expires_at": {"$lte": datetime.fromtimestamp(now, UTC)}})
        return result.deleted_count
