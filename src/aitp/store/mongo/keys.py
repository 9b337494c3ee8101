"""API keys in the `api_keys` collection, `_id` the key id (`hash` has a unique index)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pymongo import ASCENDING

from aitp.store.keys import KeyRecord, KeyStore
from aitp.store.mongo.engine import MongoEngine


def _key(doc: dict[str, Any]) -> KeyRecord:
    fields = {name: doc[name] for name in ("hash", "actor", "created_at", "prefix")}
    return KeyRecord(
        id=doc["_id"],
        admin=bool(doc["admin"]),
        scopes=list(doc.get("scopes") or []),
        expires_at=doc.get("expires_at"),  # absent from keys written before keys could expire
        **fields,
    )


class MongoKeys(KeyStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _keys(self) -> Any:
        return self._engine.db.api_keys

    async def create(self, key: KeyRecord) -> None:
        await self._keys.insert_one(
            {
                "_id": key.id,
                "hash": key.hash,
                "actor": key.actor,
                "admin": key.admin,
                "scopes": key.scopes,
                "created_at": key.created_at,
                "prefix": key.prefix,
                "expires_at": key.expires_at,
            }
        )

    async def find(self, key_hash: str) -> KeyRecord | None:
        doc = await self._keys.find_one({"hash": key_hash})
        return None if doc is None else _key(doc)

    async def all(self) -> list[KeyRecord]:
        return [_key(d) async for d in self._keys.find({}).sort("_id", ASCENDING)]

    async def delete(self, key_id: str) -> bool:
        return (await self._keys.delete_one({"_id": key_id})).deleted_count > 0

    async def expiries(self, key_ids: Sequence[str]) -> dict[str, int | None]:
        found = self._keys.find({"_id": {"$in": list(key_ids)}}, {"_id": 1, "expires_at": 1})
        return {doc["_id"]: doc.get("expires_at") async for doc in found}

    async def purge_expired(self, before: int) -> int:
        # `$type: number` leaves keys that never expire (None, or no field: written before keys could expire)
        expired = {"expires_at": {"$type": "number", "$lt": before}}
        return int((await self._keys.delete_many(expired)).deleted_count)

    async def has_admin(self) -> bool:
        return await self._keys.find_one({"admin": True}) is not None
