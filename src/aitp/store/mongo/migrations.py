"""Bringing a MongoDB store written by an earlier version up to date, once, when an instance opens it."""

from __future__ import annotations

import itertools
from typing import Any

from pymongo import ASCENDING, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, OperationFailure

from aitp.store.identities import ANYONE, LOCAL
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


async def identities_for_known_actors(db: AsyncDatabase[dict[str, Any]], created_at: int) -> None:
    """A store written before identities: every actor it knew of (in a thread or its creator, holding a key,
    with a profile) becomes a local actor that anyone may contact, as every actor was then. Upserts that only
    insert, so instances opening the store together agree, and an actor that signed in meanwhile keeps its proof."""
    known: set[str] = set()
    known.update(await db.thread_actors.distinct("actor_id"))
    known.update(await db.threads.distinct("creator"))
    known.update(await db.api_keys.distinct("actor", {"admin": False}))
    known.update(await db.actor_profiles.distinct("_id"))
    writes = [
        UpdateOne(
            {"_id": actor},
            {
                "$setOnInsert": {
                    "kind": LOCAL,
                    "created_at": created_at,
                    "verified_at": None,
                    "key_id": None,
                    "contact_policy": ANYONE,
                    "contact_allow": [],
                    "name_key": "",
                }
            },
            upsert=True,
        )
        for actor in sorted(known)
    ]
    for start in range(0, len(writes), 1000):
        await db.actor_identities.bulk_write(writes[start : start + 1000], ordered=False)


async def endpoints_into_slots(db: AsyncDatabase[dict[str, Any]]) -> None:
    """Endpoints written before the per-actor limit took slots have none, so a creation racing another could not
    see them held: each takes its actor's lowest free slot. A conditional update under the (actor, slot) unique
    index: instances opening the store together never give one slot twice, nor one endpoint two."""
    endpoints = db.webhook_endpoints
    async for endpoint in endpoints.find({"slot": {"$exists": False}}, {"actor": 1}):
        held = {"actor": endpoint["actor"], "slot": {"$exists": True}}
        while True:
            taken = {doc["slot"] async for doc in endpoints.find(held, {"slot": 1})}
            slot = next(n for n in itertools.count() if n not in taken)
            try:
                unslotted = {"_id": endpoint["_id"], "slot": {"$exists": False}}
                await endpoints.update_one(unslotted, {"$set": {"slot": slot}})
                break
            except DuplicateKeyError:
                continue  # another instance gave that slot to another endpoint meanwhile
