"""One-time codes in the `one_time_codes` collection, `_id` the code's hash; single-document atomic writes.
`expires_at` is a BSON date, so a TTL index removes expired codes."""

from __future__ import annotations

from typing import Any

from aitp.store.codes import CodeRecord, CodeStore
from aitp.store.mongo.engine import MongoEngine
from aitp.store.mongo.idempotency import bson_date, unix_seconds


class MongoCodes(CodeStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _codes(self) -> Any:
        return self._engine.db.one_time_codes

    async def create(self, code: CodeRecord) -> None:
        await self._codes.insert_one(
            {
                "_id": code.hash,
                "purpose": code.purpose,
                "key_hash": code.key_hash,
                "actor": code.actor,
                "admin": code.admin,
                "scopes": code.scopes,
                "created_at": bson_date(code.created_at),
                "expires_at": bson_date(code.expires_at),
            }
        )

    async def redeem(self, code_hash: str, purpose: str, now: float) -> CodeRecord | None:
        live = {"_id": code_hash, "purpose": purpose, "expires_at": {"$gt": bson_date(now)}}
        doc = await self._codes.find_one_and_delete(live)
        if doc is None:
            return None
        return CodeRecord(
            hash=doc["_id"],
            purpose=doc["purpose"],
            key_hash=doc["key_hash"],
            actor=doc["actor"],
            admin=bool(doc["admin"]),
            scopes=list(doc.get("scopes") or []),
            created_at=unix_seconds(doc["created_at"]),
            expires_at=unix_seconds(doc["expires_at"]),
        )

    async def find(self, code_hash: str, purpose: str, now: float) -> bool:
        live = {"_id": code_hash, "purpose": purpose, "expires_at": {"$gt": bson_date(now)}}
        return await self._codes.find_one(live, {"_id": 1}) is not None

    async def purge(self, now: float) -> int:
        return (await self._codes.delete_many({"expires_at": {"$lte": bson_date(now)}})).deleted_count
