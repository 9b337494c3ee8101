"""Bringing a MongoDB store written by an earlier version up to date, once, when an instance opens it."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import OperationFailure

from aitp.store.mongo.documents import membership_key

Span = list[Any]  # [from_seq, to_seq]


async def audience_to_memberships(db: AsyncDatabase[dict[str, Any]]) -> None:
    """Events used to list their audience (every member, written per event): an actor's memberships are the
    runs of consecutive seqs it was in the audience of, per thread (still open when it is a member now).
    Upserts by key, so instances opening the store together write the same documents."""
    # a store written with audiences has their index, dropped last: a start-up reads the index list, not events
    legacy = [index["name"] async for index in await db.events.list_indexes() if "audience" in index["key"]]
    if not legacy:
        return
    writes: list[UpdateOne] = []
    thread_id: str | None = None
    runs: dict[str, list[Span]] = {}
    listed = {"audience": {"$exists": True}}
    fields = {"thread_id": 1, "seq": 1, "audience": 1}
    async for event in db.events.find(listed, fields).sort([("thread_id", ASCENDING), ("seq", ASCENDING)]):
        if event["thread_id"] != thread_id:
            writes += await _spans(db, thread_id, runs)
            thread_id, runs = event["thread_id"], {}
        seq = event["seq"]
        for actor in event["audience"]:
            spans = runs.setdefault(actor, [])
            if spans and spans[-1][1] == seq - 1:
                spans[-1][1] = seq
            else:
                spans.append([seq, seq])
    writes += await _spans(db, thread_id, runs)
    for start in range(0, len(writes), 1000):
        await db.memberships.bulk_write(writes[start : start + 1000], ordered=False)
    await db.events.update_many(listed, {"$unset": {"audience": ""}})
    for name in legacy:  # by its name as the server gave it
        try:
            await db.events.drop_index(name)
        except OperationFailure:
            pass  # dropped by another instance meanwhile


async def _spans(
    db: AsyncDatabase[dict[str, Any]], thread_id: str | None, runs: dict[str, list[Span]]
) -> list[UpdateOne]:
    if thread_id is None:
        return []
    thread = await db.threads.find_one({"_id": thread_id}, {"last_seq": 1, "deleted": 1}) or {}
    members = {a["actor_id"] async for a in db.thread_actors.find({"thread_id": thread_id}, {"actor_id": 1})}
    writes = []
    for actor, spans in runs.items():
        for start, end in spans:
            still = actor in members and end == thread.get("last_seq") and not thread.get("deleted")
            doc = {"thread_id": thread_id, "actor_id": actor, "from_seq": start, "to_seq": None if still else end}
            writes.append(UpdateOne({"_id": membership_key(thread_id, actor, start)}, {"$set": doc}, upsert=True))
    return writes
