"""Full-text search on MongoDB: a text index over the `search_text` of message documents.

A message document carries its searchable text (`search_text`, absent when it has none), written with the
message in its transaction and deleted with it, so the index never differs from the messages. The index is a
text index with the `none` language: words as written, no stemming and no stop words, compared case- and
accent-insensitively, as SQLite's FTS5 index compares them. A search asks for every word as a phrase of its
own (MongoDB ANDs phrases, where it ORs bare words) among the caller's threads (`thread_id` `$in` its
memberships: part of the query).

nx-27017, the stand-in the tests run on without a MongoDB, answers `$text` from an FTS5 index of its own with
the same semantics (every quoted word required), so the same store test runs on both.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pymongo import DESCENDING, TEXT, UpdateOne

from aitp.store.mongo.engine import MongoEngine
from aitp.store.records import MessageRecord
from aitp.store.search import MAX_HITS_READ, MessageSearch, SearchHit, searchable_text

FIELD = "search_text"
INDEX = "messages_search_text"
# the migrations done on this database, one document each (written once a migration has run to its end)
MIGRATIONS = "store_migrations"
BACKFILLED = "messages.search_text"


def search_fields(message: MessageRecord) -> dict[str, str]:
    """What a message document adds for the index: its searchable text, when it has some."""
    text = searchable_text(message.content, message.aitp)
    return {FIELD: text} if text else {}


async def open_index(db: Any) -> None:
    """Once per database: create the text index, and give the messages a store written before search holds
    their searchable text (instances opening the store together write the same values), then mark it done."""
    if await db[MIGRATIONS].find_one({"_id": BACKFILLED}) is not None:
        return  # made, and the messages indexed (nx-27017 refuses to make its text index twice)
    await db.messages.create_index([(FIELD, TEXT)], name=INDEX, default_language="none")
    writes: list[UpdateOne] = []
    missing = {FIELD: {"$exists": False}}
    async for doc in db.messages.find(missing, {"content": 1, "aitp": 1}):
        text = searchable_text(doc.get("content") or [], doc.get("aitp"))
        if text:
            writes.append(UpdateOne({"_id": doc["_id"], **missing}, {"$set": {FIELD: text}}))
        if len(writes) == 1000:
            await db.messages.bulk_write(writes, ordered=False)
            writes = []
    if writes:
        await db.messages.bulk_write(writes, ordered=False)
    done = {"$setOnInsert": {"done_at": int(time.time())}}
    await db[MIGRATIONS].update_one({"_id": BACKFILLED}, done, upsert=True)


def text_query(terms: Sequence[str]) -> dict[str, Any]:
    """`$text` requiring every term: each a phrase of its own."""
    return {"$search": " ".join(f'"{term}"' for term in terms), "$language": "none"}


class MongoSearch(MessageSearch):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    async def threads(self, actor_id: str | None, terms: Sequence[str], limit: int) -> list[SearchHit]:
        db = self._engine.db
        query: dict[str, Any] = {"$text": text_query(terms)}
        if actor_id is not None:
            memberships = db.thread_actors.find({"actor_id": actor_id}, {"thread_id": 1})
            query["thread_id"] = {"$in": [doc["thread_id"] async for doc in memberships]}
        fields = {"thread_id": 1, "created_at": 1, "actor": 1, FIELD: 1}
        # newest first (message ids sort by creation): the first of each thread is its newest match
        found = db.messages.find(query, fields).sort("_id", DESCENDING).limit(MAX_HITS_READ)
        hits: dict[str, SearchHit] = {}
        async for doc in found:
            if doc["thread_id"] not in hits:
                hits[doc["thread_id"]] = SearchHit(
                    doc["thread_id"], doc["_id"], doc["created_at"], doc["actor"], doc.get(FIELD, "")
                )
                if len(hits) == limit:
                    break
        return list(hits.values())
