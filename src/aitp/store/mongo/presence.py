"""Who follows its inbox live, per instance (`actor_presence`, `_id` "instance actor", `expires_at` a BSON date
with a TTL index), and the last call made to each actor (`actor_calls`, `_id` "via actor"). Documents are
replaced whole, `_id` included, never `$set`: nx-27017 wrote a date `$set` by an upsert as a string, and gave
an upserted replacement without `_id` an ObjectId."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pymongo import ASCENDING, ReplaceOne

from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.idempotency import bson_date, unix_seconds
from aitp.store.presence import CallRecord, PresenceStore


async def create_indexes(db: Any) -> None:
    await db.actor_presence.create_index([("actor", ASCENDING), ("expires_at", ASCENDING)])
    await db.actor_presence.create_index([("expires_at", ASCENDING)], expireAfterSeconds=0)


def _key(first: str, actor: str) -> str:
    return f"{first} {actor}"  # an instance id or a channel name has no space: the pair is unambiguous


class MongoPresence(PresenceStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _db(self) -> Any:
        return self._engine.db

    async def beat(self, instance: str, actors: Collection[str], expires_at: float) -> None:
        until = bson_date(expires_at)
        writes = [
            ReplaceOne(
                {"_id": key}, {"_id": key, "actor": actor, "instance": instance, "expires_at": until}, upsert=True
            )
            for actor, key in ((actor, _key(instance, actor)) for actor in actors)
        ]
        if writes:
            await self._db.actor_presence.bulk_write(writes, ordered=False)

    async def leave(self, instance: str, actor: str) -> None:
        await self._db.actor_presence.delete_one({"_id": _key(instance, actor)})

    async def followed(self, actor: str, now: float) -> bool:
        live = {"actor": actor, "expires_at": {"$gt": bson_date(now)}}
        return await self._db.actor_presence.find_one(live, {"_id": 1}) is not None

    async def note_call(self, call: CallRecord) -> None:
        key = _key(call.via, call.actor)
        document = {"_id": key, "actor": call.actor, "via": call.via, "ok": call.ok, "at": bson_date(call.at)}
        await self._db.actor_calls.replace_one({"_id": key}, document, upsert=True)

    async def last_call(self, actor: str, via: str) -> CallRecord | None:
        doc = await self._db.actor_calls.find_one({"_id": _key(via, actor)})
        return None if doc is None else CallRecord(actor, via, bool(doc["ok"]), unix_seconds(doc["at"]))
