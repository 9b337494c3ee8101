"""A2A settings in the `a2a_agents` collection (`_id` the actor id), contexts in `a2a_contexts` (`_id` the
JSON array of caller, agent and context id)."""

from __future__ import annotations

from typing import Any

import orjson
from pymongo.errors import DuplicateKeyError

from aitp.store.a2a import A2AAgentRecord, A2AStore
from aitp.store.mongo.engine import MongoEngine

FIELDS = ("serve", "capabilities", "card_url", "updated_at")


def _record(doc: dict[str, Any]) -> A2AAgentRecord:
    return A2AAgentRecord(actor=doc["_id"], cursor=doc.get("cursor", 0), **{name: doc[name] for name in FIELDS})


def _context_key(caller: str, agent: str, context_id: str) -> str:
    return orjson.dumps([caller, agent, context_id]).decode()  # unambiguous whatever the strings hold


class MongoA2A(A2AStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _agents(self) -> Any:
        return self._engine.db.a2a_agents

    @property
    def _contexts(self) -> Any:
        return self._engine.db.a2a_contexts

    async def put(self, record: A2AAgentRecord) -> None:
        document = {name: getattr(record, name) for name in FIELDS}
        await self._agents.update_one(
            {"_id": record.actor}, {"$set": document, "$setOnInsert": {"cursor": record.cursor}}, upsert=True
        )

    async def get(self, actor: str) -> A2AAgentRecord | None:
        doc = await self._agents.find_one({"_id": actor})
        return None if doc is None else _record(doc)

    async def remotes(self) -> list[A2AAgentRecord]:
        return [_record(doc) async for doc in self._agents.find({"card_url": {"$ne": None}}).sort("_id", 1)]

    async def advance(self, actor: str, after: int, to: int) -> bool:
        moved = await self._agents.update_one({"_id": actor, "cursor": after}, {"$set": {"cursor": to}})
        return moved.modified_count > 0

    async def context(self, caller: str, agent: str, context_id: str) -> str | None:
        doc = await self._contexts.find_one({"_id": _context_key(caller, agent, context_id)})
        return None if doc is None else str(doc["thread_id"])

    async def bind_context(self, caller: str, agent: str, context_id: str, thread_id: str) -> str:
        key = _context_key(caller, agent, context_id)
        try:
            await self._contexts.insert_one({"_id": key, "thread_id": thread_id})
        except DuplicateKeyError:
            pass  # bound first by another request: that binding holds
        found = await self._contexts.find_one({"_id": key})
        return str(found["thread_id"])
