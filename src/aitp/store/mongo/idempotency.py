"""Idempotency records in the `idempotency_keys` collection, `_id` "scope key"; single-document atomic
writes, no transaction. Dates are BSON dates, so a TTL index expires them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pymongo.errors import DuplicateKeyError

from aitp.store.idempotency import IdempotencyRecord, IdempotencyStore
from aitp.store.mongo.engine import MongoEngine


def record_id(scope: str, key: str) -> str:
    return f"{scope} {key}"  # a scope (key id or "admin") has no space, so the pair is unambiguous


def bson_date(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def unix_seconds(value: datetime) -> float:
    if value.tzinfo is None:  # a client without tz_aware: BSON dates are UTC
        value = value.replace(tzinfo=UTC)
    return float(value.timestamp())


def document_of(record: IdempotencyRecord) -> dict[str, Any]:
    # Dates, not numbers: a TTL index only expires documents by a BSON date.
    times = {"created_at": bson_date(record.created_at), "expires_at": bson_date(record.expires_at)}
    return {**vars(record), **times}


def _record(doc: dict[str, Any]) -> IdempotencyRecord:
    kept: dict[str, Any] = {name: doc.get(name) for name in ("scope", "key", "fingerprint", "token", "status", "body")}
    return IdempotencyRecord(
        created_at=unix_seconds(doc["created_at"]), expires_at=unix_seconds(doc["expires_at"]), **kept
    )


class MongoIdempotency(IdempotencyStore):
    def __init__(self, engine: MongoEngine) -> None:
        super().__init__()
        self._engine = engine

    @property
    def _records(self) -> Any:
        return self._engine.db.idempotency_keys

    async def complete(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        pending = {"_id": record_id(scope, key), "token": token, "status": None}
        return (await self._records.update_one(pending, {"$set": {"status": status, "body": body}})).modified_count > 0

    async def release(self, scope: str, key: str, token: str) -> bool:
        pending = {"_id": record_id(scope, key), "token": token, "status": None}
        return (await self._records.delete_one(pending)).deleted_count > 0

    async def purge(self, now: float) -> int:
        # the TTL monitor's job, done here too for servers without one
        return (await self._records.delete_many({"expires_at": {"$lte": bson_date(now)}})).deleted_count

    async def _insert(self, record: IdempotencyRecord) -> bool:
        try:
            await self._records.insert_one({"_id": record_id(record.scope, record.key), **document_of(record)})
        except DuplicateKeyError:
            return False
        return True

    async def _get(self, scope: str, key: str) -> IdempotencyRecord | None:
        doc = await self._records.find_one({"_id": record_id(scope, key)})
        return None if doc is None else _record(doc)

    async def _replace(self, token: str, record: IdempotencyRecord) -> bool:
        held = {"_id": record_id(record.scope, record.key), "token": token}
        return (await self._records.replace_one(held, document_of(record))).modified_count > 0
