"""Webhook endpoints and deliveries in the `webhook_endpoints` and `webhook_deliveries` collections, `_id`
the record's id; single-document atomic writes: a lease is taken by one conditional update, and an endpoint
created under the per-actor limit takes one of its actor's numbered slots, unique per actor (an index), so
concurrent creations never exceed the limit (endpoints written before slots are given theirs when the store is
opened: `migrations.endpoints_into_slots`).

The engine's reads (`claim`, `next_due`) go through the (endpoint, status, thread, gid) index on pending
deliveries (finished ones, kept for the delivery log until `prune`, are never read by them), and apply the claim
rule of `store.webhooks` to what they read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, fields
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError

from aitp.store.mongo.engine import MongoEngine
from aitp.store.webhooks import (
    Claim,
    DeliveryRecord,
    DeliveryStatus,
    EndpointRecord,
    Pending,
    WebhookSecret,
    WebhookStore,
    claimable,
    next_ready,
)

DUPLICATE_KEY = 11000
_MUTABLE = (
    "url",
    "event_types",
    "messages",
    "on_client_error",
    "ordering",
    "enabled",
    "description",
    "failing_since",
    "disabled_reason",
)
_FINISHED = ["succeeded", "failed", "canceled"]
_OUTCOME = ("status", "next_attempt_at", "last_attempt_at", "last_status", "last_error")
_CANDIDATE = {"thread_id": 1, "gid": 1, "next_attempt_at": 1, "lease_until": 1}  # what the claim rule reads
_PENDING_INDEX = [("endpoint_id", ASCENDING), ("status", ASCENDING), ("thread_id", ASCENDING), ("gid", ASCENDING)]
_DELIVERY_FIELDS = [f.name for f in fields(DeliveryRecord) if f.name != "id"]


def _endpoint(doc: dict[str, Any]) -> EndpointRecord:
    values: dict[str, Any] = {name: doc.get(name) for name in (f.name for f in fields(EndpointRecord)) if name != "id"}
    values["secrets"] = [WebhookSecret(**s) for s in doc["secrets"]]
    values["messages"] = doc.get("messages", "all")  # written before endpoints chose: all, as then
    values["on_client_error"] = doc.get("on_client_error", "skip")
    values["ordering"] = doc.get("ordering", "thread")
    return EndpointRecord(id=doc["_id"], **values)


def _pending(doc: dict[str, Any]) -> Pending:
    return Pending(doc["_id"], doc["thread_id"], doc["gid"], doc["next_attempt_at"], doc["lease_until"])


def _delivery(doc: dict[str, Any]) -> DeliveryRecord:
    values: dict[str, Any] = {name: doc.get(name) for name in _DELIVERY_FIELDS}
    return DeliveryRecord(id=doc["_id"], **values)


def _document(delivery: DeliveryRecord) -> dict[str, Any]:
    return {"_id": delivery.id, **{name: getattr(delivery, name) for name in _DELIVERY_FIELDS}}


class MongoWebhooks(WebhookStore):
    def __init__(self, engine: MongoEngine) -> None:
        self._engine = engine

    @property
    def _endpoints(self) -> Any:
        return self._engine.db.webhook_endpoints

    @property
    def _deliveries(self) -> Any:
        return self._engine.db.webhook_deliveries

    async def create(self, endpoint: EndpointRecord, *, limit: int | None = None) -> bool:
        document = asdict(endpoint)
        document = {"_id": document.pop("id"), **document}
        if limit is None:
            await self._endpoints.insert_one(document)
            return True
        held = [doc async for doc in self._endpoints.find({"actor": endpoint.actor}, {"slot": 1})]
        if len(held) >= limit:
            return False
        # a conditional insert: the endpoint takes one of its actor's `limit` slots, unique per actor (index),
        # so of two concurrent creations (any instance) taking the last free slot one fails
        taken = {doc.get("slot") for doc in held}
        for slot in (n for n in range(limit) if n not in taken):
            try:
                await self._endpoints.insert_one({**document, "slot": slot})
                return True
            except DuplicateKeyError:
                continue  # a concurrent creation took it: the next free one
        return False

    async def get(self, endpoint_id: str) -> EndpointRecord | None:
        doc = await self._endpoints.find_one({"_id": endpoint_id})
        return None if doc is None else _endpoint(doc)

    async def of_actor(self, actor: str | None) -> list[EndpointRecord]:
        query = {} if actor is None else {"actor": actor}
        return [_endpoint(d) async for d in self._endpoints.find(query).sort("_id", ASCENDING)]

    async def enabled(self) -> list[EndpointRecord]:
        return [_endpoint(d) async for d in self._endpoints.find({"enabled": True})]

    async def update(self, endpoint: EndpointRecord) -> bool:
        changes: dict[str, Any] = {name: getattr(endpoint, name) for name in _MUTABLE}
        changes["secrets"] = [asdict(s) for s in endpoint.secrets]
        return (await self._endpoints.update_one({"_id": endpoint.id}, {"$set": changes})).matched_count > 0

    async def set_health(self, endpoint_id: str, failing_since: float | None, disabled_reason: str | None) -> None:
        changes: dict[str, Any] = {"failing_since": failing_since}
        if disabled_reason is not None:
            changes |= {"enabled": False, "disabled_reason": disabled_reason}
        await self._endpoints.update_one({"_id": endpoint_id}, {"$set": changes})

    async def delete(self, endpoint_id: str) -> bool:
        deleted = (await self._endpoints.delete_one({"_id": endpoint_id})).deleted_count > 0
        await self._deliveries.delete_many({"endpoint_id": endpoint_id})
        return deleted

    async def advance(self, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord]) -> bool:
        if deliveries:
            try:
                await self._deliveries.insert_many([_document(d) for d in deliveries], ordered=False)
            except BulkWriteError as error:  # those derived before (by another instance) stay as they are
                if any(e.get("code") != DUPLICATE_KEY for e in error.details.get("writeErrors", [])):
                    raise
        moved = await self._endpoints.update_one({"_id": endpoint_id, "cursor": after}, {"$set": {"cursor": to}})
        return moved.modified_count > 0

    async def _candidates(self, endpoint_id: str, ordered: bool) -> AsyncIterator[Pending]:
        """The claim rule's candidates, oldest first. Ordered: the oldest pending delivery of each thread (only
        it may be attempted), one indexed look per thread that has one (each for the first pending delivery of
        the next thread), so the cost is that of the threads waiting, never of the deliveries behind their heads.
        Unordered: every pending delivery (the pending index: a cost of those pending, never of the finished)."""
        pending: dict[str, Any] = {"endpoint_id": endpoint_id, "status": "pending"}
        if not ordered:
            async for doc in self._deliveries.find(pending, _CANDIDATE).hint(_PENDING_INDEX).sort("gid", ASCENDING):
                yield _pending(doc)
            return
        heads: list[Pending] = []
        while True:
            after = {"thread_id": {"$gt": heads[-1].thread_id}} if heads else {}
            head = await self._deliveries.find_one(
                {**pending, **after}, _CANDIDATE, sort=[("thread_id", ASCENDING), ("gid", ASCENDING)]
            )
            if head is None:
                break
            heads.append(_pending(head))
        for found in sorted(heads, key=lambda candidate: candidate.gid):
            yield found

    async def claim(self, endpoint_id: str, terms: Claim) -> list[DeliveryRecord]:
        candidates = [candidate async for candidate in self._candidates(endpoint_id, terms.ordered)]
        claimed = []
        for found in claimable(candidates, terms):
            # compare-and-set: taken only if no one leased it since it was read (of two claimers, one matches)
            doc = await self._deliveries.find_one_and_update(
                {"_id": found.id, "status": "pending", "lease_until": found.lease_until},
                {"$set": {"lease_owner": terms.owner, "lease_until": terms.lease_until}, "$inc": {"attempts": 1}},
                return_document=ReturnDocument.AFTER,
            )
            if doc is not None:
                claimed.append(_delivery(doc))
        return claimed

    async def finish(self, delivery: DeliveryRecord, owner: str) -> bool:
        held = {"_id": delivery.id, "lease_owner": owner, "attempts": delivery.attempts}
        outcome: dict[str, Any] = {name: getattr(delivery, name) for name in _OUTCOME}
        done = await self._deliveries.update_one(held, {"$set": {**outcome, "lease_owner": None, "lease_until": 0.0}})
        return done.matched_count > 0

    async def next_due(self, endpoint_id: str, *, ordered: bool = True) -> float | None:
        candidates = [candidate async for candidate in self._candidates(endpoint_id, ordered)]
        return next_ready(candidates, ordered=ordered)

    async def hasten(self, endpoint_id: str, now: float) -> int:
        waiting = {"endpoint_id": endpoint_id, "status": "pending", "next_attempt_at": {"$gt": now}}
        return (await self._deliveries.update_many(waiting, {"$set": {"next_attempt_at": now}})).modified_count

    async def release(self, owner: str, endpoint_ids: list[str]) -> int:
        held = {"endpoint_id": {"$in": endpoint_ids}, "status": "pending", "lease_owner": owner}
        released = await self._deliveries.update_many(held, {"$set": {"lease_owner": None, "lease_until": 0.0}})
        return released.modified_count

    async def prune(self, before: float, limit: int) -> int:
        old = self._deliveries.find({"status": {"$in": _FINISHED}, "created_at": {"$lt": before}}, {"_id": 1})
        ids = [doc["_id"] async for doc in old.limit(limit)]
        if not ids:
            return 0
        return (await self._deliveries.delete_many({"_id": {"$in": ids}})).deleted_count

    async def deliveries(
        self,
        endpoint_id: str,
        *,
        limit: int,
        before: int | None = None,
        status: DeliveryStatus | None = None,
        since: float = 0.0,
    ) -> list[DeliveryRecord]:
        query: dict[str, Any] = {
            "endpoint_id": endpoint_id,
            "$or": [{"status": "pending"}, {"created_at": {"$gte": since}}],
        }
        if before is not None:
            query["gid"] = {"$lt": before}
        if status is not None:
            query["status"] = status
        return [_delivery(d) async for d in self._deliveries.find(query).sort("gid", DESCENDING).limit(limit)]

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None:
        doc = await self._deliveries.find_one({"_id": delivery_id})
        return None if doc is None else _delivery(doc)

    async def redeliver(self, delivery_id: str, now: float) -> DeliveryRecord | None:
        doc = await self._deliveries.find_one_and_update(
            {"_id": delivery_id},
            {"$set": {"status": "pending", "next_attempt_at": now}},
            return_document=ReturnDocument.AFTER,
        )
        return None if doc is None else _delivery(doc)

    async def cancel(self, delivery_id: str) -> DeliveryRecord | None:
        doc = await self._deliveries.find_one_and_update(
            {"_id": delivery_id, "status": "pending"},
            {"$set": {"status": "canceled", "lease_owner": None, "lease_until": 0.0}},
            return_document=ReturnDocument.AFTER,
        )
        return None if doc is None else _delivery(doc)
