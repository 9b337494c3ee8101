"""Actor identities in the `actor_identities` collection, `_id` the actor id (`name_key` indexed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pymongo import ReturnDocument

from aitp.store.identities import VERIFIED_KINDS, IdentityRecord, IdentityStore
from aitp.store.mongo.engine import MongoEngine


def _identity(doc: dict[str, Any]) -> IdentityRecord:
    return IdentityRecord(
        actor=doc["_id"],
        kind=doc["kind"],
        created_at=doc["created_at"],
        verified_at=doc.get("verified_at"),
        key_id=doc.get("key_id"),
        contact_policy=doc["contact_policy"],
        contact_allow=list(doc.get("contact_allow") or []),
        name_key=doc.get("name_key") or "",
        anonymous_visitors=bool(doc.get("anonymous_visitors")),  # absent in documents written before
        embed_origins=list(doc.get("embed_origins") or []),
    )


def document(identity: IdentityRecord) -> dict[str, Any]:
    fields = asdict(identity)
    return {"_id": fields.pop("actor"), **fields}


class MongoIdentities(IdentityStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _identities(self) -> Any:
        return self._engine.db.actor_identities

    async def get(self, actor: str) -> IdentityRecord | None:
        doc = await self._identities.find_one({"_id": actor})
        return None if doc is None else _identity(doc)

    async def many(self, actors: Sequence[str]) -> dict[str, IdentityRecord]:
        return {doc["_id"]: _identity(doc) async for doc in self._identities.find({"_id": {"$in": list(actors)}})}

    async def add(self, identity: IdentityRecord) -> bool:
        result = await self._identities.update_one(
            {"_id": identity.actor}, {"$setOnInsert": document(identity)}, upsert=True
        )
        return result.upserted_id is not None

    async def proven(
        self, actor: str, kind: str, verified_at: int, key_id: str, *, new: IdentityRecord
    ) -> IdentityRecord:
        # two writes, each atomic: the insert if new (as `add`), then the proof (nx-27017 drops $setOnInsert
        # beside $set in find_one_and_update)
        await self.add(new)
        doc = await self._identities.find_one_and_update(
            {"_id": actor},
            {"$set": {"kind": kind, "verified_at": verified_at, "key_id": key_id}},
            return_document=ReturnDocument.AFTER,
        )
        return _identity(doc)

    async def vouched(self, identity: IdentityRecord) -> IdentityRecord:
        # the insert if new, else the fields a voucher sets (each write atomic)
        if await self.add(identity):
            return identity
        doc = await self._identities.find_one_and_update(
            {"_id": identity.actor},
            {
                "$set": {
                    "kind": identity.kind,
                    "verified_at": identity.verified_at,
                    "key_id": identity.key_id,
                    "contact_policy": identity.contact_policy,
                    "contact_allow": list(identity.contact_allow),
                }
            },
            return_document=ReturnDocument.AFTER,
        )
        return _identity(doc)

    async def set_contact(self, actor: str, policy: str, allow: Sequence[str]) -> IdentityRecord | None:
        doc = await self._identities.find_one_and_update(
            {"_id": actor},
            {"$set": {"contact_policy": policy, "contact_allow": list(allow)}},
            return_document=ReturnDocument.AFTER,
        )
        return None if doc is None else _identity(doc)

    async def set_customer_settings(
        self, actor: str, anonymous_visitors: bool, embed_origins: Sequence[str]
    ) -> IdentityRecord | None:
        doc = await self._identities.find_one_and_update(
            {"_id": actor},
            {"$set": {"anonymous_visitors": anonymous_visitors, "embed_origins": list(embed_origins)}},
            return_document=ReturnDocument.AFTER,
        )
        return None if doc is None else _identity(doc)

    async def set_name_key(self, actor: str, name_key: str) -> None:
        await self._identities.update_one({"_id": actor}, {"$set": {"name_key": name_key}})

    async def verified_with_name(self, name_key: str, other_than: str) -> str | None:
        doc = await self._identities.find_one(
            {"name_key": name_key, "_id": {"$ne": other_than}, "kind": {"$in": sorted(VERIFIED_KINDS)}}, {"_id": 1}
        )
        return None if doc is None else doc["_id"]
