"""A2A settings in the `a2a_agents` collection (`_id` the actor id), contexts in `a2a_contexts` (`_id` the
JSON array of caller, agent and context id), remote agents' tasks in `a2a_remote_tasks` (`_id` the JSON
array of actor and thread id). Fields added since the first version read their defaults when missing."""

from __future__ import annotations

from typing import Any

import orjson
from pymongo.errors import DuplicateKeyError

from aitp.store.a2a import ADDRESSED, A2AAgentRecord, A2AStore, RemoteTaskRecord
from aitp.store.mongo.engine import MongoEngine

SHARED_BATCH = 200  # the caller's memberships read at once while looking for threads shared with an agent
FIELDS = ("serve", "capabilities", "card_url", "updated_at", "reply_policy", "credentials")


def _record(doc: dict[str, Any]) -> A2AAgentRecord:
    return A2AAgentRecord(
        actor=doc["_id"],
        serve=doc["serve"],
        capabilities=doc["capabilities"],
        card_url=doc["card_url"],
        updated_at=doc["updated_at"],
        cursor=doc.get("cursor", 0),
        reply_policy=doc.get("reply_policy", ADDRESSED),
        credentials=doc.get("credentials") or {},
    )


def _key(*parts: str) -> str:
    return orjson.dumps(parts).decode()  # unambiguous whatever the strings hold


class MongoA2A(A2AStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _agents(self) -> Any:
        return self._engine.db.a2a_agents

    @property
    def _contexts(self) -> Any:
        return self._engine.db.a2a_contexts

    @property
    def _members(self) -> Any:
        return self._engine.db.thread_actors

    @property
    def _tasks(self) -> Any:
        return self._engine.db.a2a_remote_tasks

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
        doc = await self._contexts.find_one({"_id": _key(caller, agent, context_id)})
        return None if doc is None else str(doc["thread_id"])

    async def bind_context(self, caller: str, agent: str, context_id: str, thread_id: str) -> str:
        key = _key(caller, agent, context_id)
        try:
            await self._contexts.insert_one({"_id": key, "thread_id": thread_id})
        except DuplicateKeyError:
            pass  # bound first by another request: that binding holds
        found = await self._contexts.find_one({"_id": key})
        return str(found["thread_id"])

    async def shared_threads(self, caller: str, agent: str, *, limit: int, before: str | None = None) -> list[str]:
        """The caller's memberships newest first (the actor index), a batch at a time, each kept if the agent
        is in that live thread too (two indexed reads per batch)."""
        found: list[str] = []
        while len(found) < limit:
            query: dict[str, Any] = {"actor_id": caller}
            if before is not None:
                query["thread_id"] = {"$lt": before}
            batch = [
                d["thread_id"]
                async for d in self._members.find(query, {"thread_id": 1}).sort("thread_id", -1).limit(SHARED_BATCH)
            ]
            if not batch:
                break
            with_agent = {
                d["thread_id"]
                async for d in self._members.find({"actor_id": agent, "thread_id": {"$in": batch}}, {"thread_id": 1})
            }
            live = {
                d["_id"]
                async for d in self._engine.db.threads.find(
                    {"_id": {"$in": sorted(with_agent)}, "deleted": False}, {"_id": 1}
                )
            }
            found.extend(thread_id for thread_id in batch if thread_id in live)
            before = batch[-1]
        return found[:limit]

    async def remote_task(self, actor: str, thread_id: str) -> RemoteTaskRecord | None:
        doc = await self._tasks.find_one({"_id": _key(actor, thread_id)})
        if doc is None:
            return None
        return RemoteTaskRecord(actor, thread_id, doc["context_id"], doc.get("task_id"), doc.get("updated_at", 0))

    async def put_remote_task(self, record: RemoteTaskRecord) -> None:
        document = {
            "actor": record.actor,
            "thread_id": record.thread_id,
            "context_id": record.context_id,
            "task_id": record.task_id,
            "updated_at": record.updated_at,
        }
        await self._tasks.update_one({"_id": _key(record.actor, record.thread_id)}, {"$set": document}, upsert=True)

    async def forget_remote_tasks(self, actor: str) -> None:
        await self._tasks.delete_many({"actor": actor})
