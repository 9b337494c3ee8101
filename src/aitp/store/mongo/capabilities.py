"""Registered capability versions in the `capability_versions` collection, `_id` "id@version"."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from aitp.store.capabilities import CapabilityStore, CapabilityVersionRecord
from aitp.store.mongo.engine import MongoEngine


def _version(doc: dict[str, Any]) -> CapabilityVersionRecord:
    return CapabilityVersionRecord.from_document(doc["document"], doc["created_at"], doc["created_by"])


class MongoCapabilities(CapabilityStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _versions(self) -> Any:
        return self._engine.db.capability_versions

    async def _keys(self) -> list[tuple[str, str]]:
        oldest_first = [("created_at", ASCENDING), ("_id", ASCENDING)]
        ids = [d["_id"] async for d in self._versions.find({}, {"_id": 1}).sort(oldest_first)]
        return [(key.rpartition("@")[0], key.rpartition("@")[2]) for key in ids]

    async def _documents(self, keys: list[tuple[str, str]]) -> list[CapabilityVersionRecord]:
        ids = [f"{capability_id}@{version}" for capability_id, version in keys]
        found = {d["_id"]: _version(d) async for d in self._versions.find({"_id": {"$in": ids}})}
        return [found[i] for i in ids if i in found]

    async def _add(self, record: CapabilityVersionRecord) -> None:
        # the document as a JSON string: schemas are full of "$ref"/"$schema" keys, which MongoDB < 5 refuses
        document = {"document": record.document(), "created_at": record.created_at, "created_by": record.created_by}
        try:
            await self._versions.insert_one({"_id": f"{record.id}@{record.version}", **document})
        except DuplicateKeyError:
            pass  # registered first by another

    async def _get(self, capability_id: str, version: str) -> CapabilityVersionRecord | None:
        doc = await self._versions.find_one({"_id": f"{capability_id}@{version}"})
        return None if doc is None else _version(doc)
