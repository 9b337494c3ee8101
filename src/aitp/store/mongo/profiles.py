"""Actor profiles in the `actor_profiles` collection, `_id` the actor id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aitp.store.mongo.engine import MongoEngine
from aitp.store.profiles import ProfileRecord, ProfileStore

# a document written before a field existed reads it as None (no migration: accent_color)
FIELDS = ("display_name", "avatar_url", "description", "updated_at", "accent_color")


def _profile(doc: dict[str, Any]) -> ProfileRecord:
    values: dict[str, Any] = {name: doc.get(name) for name in FIELDS}
    return ProfileRecord(actor=doc["_id"], **values)


class MongoProfiles(ProfileStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _profiles(self) -> Any:
        return self._engine.db.actor_profiles

    async def put(self, profile: ProfileRecord) -> None:
        # every field set (None included), so the record is replaced whole
        document = {name: getattr(profile, name) for name in FIELDS}
        await self._profiles.update_one({"_id": profile.actor}, {"$set": document}, upsert=True)

    async def get(self, actor: str) -> ProfileRecord | None:
        doc = await self._profiles.find_one({"_id": actor})
        return None if doc is None else _profile(doc)

    async def many(self, actors: Sequence[str]) -> dict[str, ProfileRecord]:
        return {doc["_id"]: _profile(doc) async for doc in self._profiles.find({"_id": {"$in": list(actors)}})}
