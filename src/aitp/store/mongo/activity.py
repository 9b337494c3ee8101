"""Actors' activity in threads in the `thread_activity` collection, `_id` its position: issued by this
instance as an event's is (`positions.Positions`), so a reader below the safe point never skips a record
whose insert lands late. `posted_at` is a BSON date: a TTL index drops old records."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING

from aitp.store.activity import KEEP_SECONDS, ActivityRecord, ActivityStore
from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.idempotency import bson_date, unix_seconds
from aitp.store.mongo.positions import Positions


async def create_indexes(db: Any) -> None:
    await db.thread_activity.create_index([("posted_at", ASCENDING)], expireAfterSeconds=int(KEEP_SECONDS))


def _record(doc: dict[str, Any]) -> ActivityRecord:
    return ActivityRecord(
        thread_id=doc["thread_id"],
        actor=doc["actor"],
        state=doc["state"],
        expires_at=float(doc["expires_at"]),
        audience=tuple(doc["audience"]),
        origin=doc["origin"],
        posted_at=unix_seconds(doc["posted_at"]),
        position=int(doc["_id"]),
    )


class MongoActivity(ActivityStore):
    def __init__(self, engine: MongoEngine, positions: Positions) -> None:
        self._engine = engine
        self._positions = positions

    @property
    def _activity(self) -> Any:
        return self._engine.db.thread_activity

    async def post(self, record: ActivityRecord) -> int:
        position = self._positions.issue()  # held open until the insert returns: the safe point waits for it
        try:
            await self._activity.insert_one(
                {
                    "_id": position,
                    "thread_id": record.thread_id,
                    "actor": record.actor,
                    "state": record.state,
                    "expires_at": record.expires_at,
                    "audience": list(record.audience),
                    "origin": record.origin,
                    "posted_at": bson_date(record.posted_at),
                }
            )
        finally:
            self._positions.release([position])
        return position

    async def since(self, after: int, limit: int) -> list[ActivityRecord]:
        settled = {"$gt": after, "$lt": await self._positions.safe_point()}
        cursor = self._activity.find({"_id": settled}).sort("_id", ASCENDING).limit(limit)
        return [_record(doc) async for doc in cursor]

    async def head(self) -> int:
        return await self._positions.safe_point() - 1
