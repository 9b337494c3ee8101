"""The MongoDB store's connection: the client, the database with its collections and indexes, and
transactions.

Each mutation runs in a multi-document transaction (a replica set is required, as MongoDB requires
for transactions and change streams) with majority write concern. The thread document holds
`last_seq`; incrementing it inside the transaction both allocates the next seq and serialises
writers of one thread, and `with_transaction` retries the losers of a write conflict.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pymongo import ASCENDING, AsyncMongoClient
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.errors import CollectionInvalid
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from aitp.store.mongo.migrations import audience_to_memberships, endpoints_into_slots, identities_for_known_actors
from aitp.store.mongo.positions import MAX_COMMIT_MS

T = TypeVar("T")


class MongoEngine:
    """One client of the database named in the store URL."""

    def __init__(self, url: str, database: str) -> None:
        self.url = url
        self.database_name = database
        self._client: AsyncMongoClient[dict[str, Any]] | None = None
        self._db: Any = None

    @property
    def db(self) -> Any:
        if self._db is None:
            raise RuntimeError("store is not open")
        return self._db

    async def open(self) -> None:
        if self._client is not None:
            return
        self._client = AsyncMongoClient(self.url, tz_aware=True)
        db = self._db = self._client.get_database(
            self.database_name, write_concern=WriteConcern("majority"), read_concern=ReadConcern("majority")
        )
        # Collections exist before any transaction touches them (MongoDB < 4.4 cannot create them
        # inside one, and a transaction that only reads a missing collection has nothing to commit).
        existing = set(await db.list_collection_names())
        for name in (
            "threads",
            "thread_actors",
            "messages",
            "events",
            "memberships",
            "instances",
            "capability_refs",
            "api_keys",
            "capability_versions",
            "idempotency_keys",
            "actor_profiles",
            "one_time_codes",
            "webhook_endpoints",
            "webhook_deliveries",
            "a2a_agents",
            "a2a_contexts",
            "a2a_remote_tasks",
            "actor_identities",
            "deleted_messages",
        ):
            if name not in existing:
                try:
                    await db.create_collection(name)
                except CollectionInvalid:
                    pass  # another instance created it meanwhile
        await db.thread_actors.create_index([("thread_id", ASCENDING), ("position", ASCENDING)])
        await db.thread_actors.create_index([("actor_id", ASCENDING), ("thread_id", ASCENDING)])
        await db.messages.create_index([("thread_id", ASCENDING), ("seq", ASCENDING)], unique=True)
        await db.events.create_index([("thread_id", ASCENDING), ("seq", ASCENDING)], unique=True)
        await db.events.create_index([("gid", ASCENDING)])
        await db.events.create_index([("thread_id", ASCENDING), ("gid", ASCENDING)])  # an inbox read, further back
        await db.memberships.create_index([("actor_id", ASCENDING), ("thread_id", ASCENDING)])
        await db.memberships.create_index([("thread_id", ASCENDING), ("actor_id", ASCENDING), ("to_seq", ASCENDING)])
        await audience_to_memberships(db)
        if "actor_identities" not in existing:
            await identities_for_known_actors(db, int(time.time()))
        await db.actor_identities.create_index(
            [("name_key", ASCENDING)], partialFilterExpression={"name_key": {"$gt": ""}}
        )
        await db.api_keys.create_index([("hash", ASCENDING)], unique=True)
        await db.api_keys.create_index([("expires_at", ASCENDING)])  # purging expired keys
        await db.capability_refs.create_index([("message_id", ASCENDING)])
        await db.deleted_messages.create_index([("thread_id", ASCENDING)])  # cleared with their thread
        await db.a2a_remote_tasks.create_index([("actor", ASCENDING)])  # forgotten when the card URL changes
        # MongoDB deletes each record once its own `expires_at` has passed (so changing the retention
        # needs no index rebuild); `MongoIdempotency.purge` does the same for servers without a TTL monitor.
        await db.idempotency_keys.create_index([("expires_at", ASCENDING)], expireAfterSeconds=0)
        await db.one_time_codes.create_index([("expires_at", ASCENDING)], expireAfterSeconds=0)
        await db.webhook_endpoints.create_index([("actor", ASCENDING)])
        # the per-actor limit: each endpoint created under it holds one of its actor's slots (mongo/webhooks.py)
        await db.webhook_endpoints.create_index(
            [("actor", ASCENDING), ("slot", ASCENDING)],
            unique=True,
            partialFilterExpression={"slot": {"$exists": True}},
        )
        await endpoints_into_slots(db)
        await db.webhook_deliveries.create_index([("endpoint_id", ASCENDING), ("gid", ASCENDING)], unique=True)
        # a delivery is attempted only when no earlier one of its thread is pending (mongo/webhooks.py, claim)
        await db.webhook_deliveries.create_index(
            [("endpoint_id", ASCENDING), ("status", ASCENDING), ("thread_id", ASCENDING), ("gid", ASCENDING)]
        )
        # a retry made due at once (mongo/webhooks.py, hasten) reads only the waiting ones, never the finished
        await db.webhook_deliveries.create_index(
            [("endpoint_id", ASCENDING), ("status", ASCENDING), ("next_attempt_at", ASCENDING)]
        )
        await db.webhook_deliveries.create_index([("status", ASCENDING), ("created_at", ASCENDING)])  # prune

    async def exists(self) -> bool:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(self.url, serverSelectionTimeoutMS=5000)
        try:
            return "threads" in await client.get_database(self.database_name).list_collection_names()
        finally:
            await client.close()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = self._db = None

    async def transaction(self, run: Callable[[AsyncClientSession], Awaitable[T]]) -> T:
        """`run(session)` in one transaction; `with_transaction` runs it again after a transient error (a
        write conflict with a concurrent writer of the same document), within its time limit."""
        if self._client is None:
            raise RuntimeError("store is not open")
        async with self._client.start_session() as session:
            return await session.with_transaction(
                run,
                read_concern=ReadConcern("snapshot"),
                write_concern=WriteConcern("majority"),
                max_commit_time_ms=MAX_COMMIT_MS,  # a commit lands soon or not at all (positions.py)
            )
