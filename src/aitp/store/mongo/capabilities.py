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

    async def all(self) -> list[CapabilityVersionRecord]:
        return [
            _version(d) async for d in self._versions.find({}).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
        ]

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
