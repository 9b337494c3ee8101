"""Webhook endpoints and deliveries in the `webhook_endpoints` and `webhook_deliveries` tables."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import Any

from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads
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

TABLES = """
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id TEXT PRIMARY KEY,
    actor TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    secrets TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cursor INTEGER NOT NULL,
    description TEXT,
    failing_since REAL,
    disabled_reason TEXT,
    messages TEXT NOT NULL DEFAULT 'all',
    on_client_error TEXT NOT NULL DEFAULT 'skip',
    ordering TEXT NOT NULL DEFAULT 'thread'
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_by_actor ON webhook_endpoints (actor, id);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    gid INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at REAL NOT NULL,
    last_attempt_at REAL,
    last_status INTEGER,
    last_error TEXT,
    lease_owner TEXT,
    lease_until REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, gid);
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (endpoint_id, thread_id, gid)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (created_at)
    WHERE status <> 'pending';
"""

_DELIVERY_COLUMNS = [f.name for f in fields(DeliveryRecord)]
_CANDIDATE = "d.id, d.thread_id, d.gid, d.next_attempt_at, d.lease_until"  # what the claim rule reads (`Pending`)
# The oldest pending delivery of each thread of the endpoint (its head), oldest first: the candidates of an
# ordered claim (`store.webhooks.claimable`: only a head may be attempted). Found by a skip-scan of the pending
# index, one seek per thread with pending deliveries: a cost of the threads waiting, not of the deliveries
# pending (a backlog) nor of those finished (the history). The index is named: the planner otherwise prefers
# the endpoint index, which walks every delivery the endpoint ever had, a cost growing with history (issue 28);
# CROSS JOIN keeps the heads the outer loop (the planner would otherwise walk the endpoint's pending
# deliveries and look each up among the heads).
_PENDING = "webhook_deliveries INDEXED BY webhook_deliveries_pending"
HEADS = f"""
WITH RECURSIVE threads(thread_id) AS (
    SELECT thread_id FROM (
        SELECT thread_id FROM {_PENDING} WHERE endpoint_id = :endpoint AND status = 'pending'
        ORDER BY thread_id LIMIT 1
    )
    UNION ALL
    SELECT (
        SELECT thread_id FROM {_PENDING}
        WHERE endpoint_id = :endpoint AND status = 'pending' AND thread_id > threads.thread_id
        ORDER BY thread_id LIMIT 1
    ) FROM threads WHERE threads.thread_id IS NOT NULL
), heads(thread_id, gid) AS MATERIALIZED (
    SELECT thread_id, (
        SELECT gid FROM {_PENDING}
        WHERE endpoint_id = :endpoint AND status = 'pending' AND thread_id = threads.thread_id
        ORDER BY gid LIMIT 1
    ) FROM threads WHERE threads.thread_id IS NOT NULL
)
SELECT {_CANDIDATE} FROM heads CROSS JOIN {_PENDING.replace("INDEXED", "d INDEXED")}
    ON d.endpoint_id = :endpoint AND d.status = 'pending' AND d.thread_id = heads.thread_id AND d.gid = heads.gid
ORDER BY d.gid"""
# an endpoint whose ordering is "none": every pending delivery is a candidate, oldest first (a cost of the
# pending ones only)
PENDING = (
    f"SELECT {_CANDIDATE} FROM {_PENDING.replace('INDEXED', 'd INDEXED')}"
    " WHERE d.endpoint_id = :endpoint AND d.status = 'pending' ORDER BY d.gid"
)
HASTEN = (
    "UPDATE webhook_deliveries INDEXED BY webhook_deliveries_pending SET next_attempt_at = ?"
    " WHERE endpoint_id = ? AND status = 'pending' AND next_attempt_at > ?"
)
PRUNE = (
    "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries INDEXED BY"
    " webhook_deliveries_finished WHERE status <> 'pending' AND created_at < ? LIMIT ?)"
)


def _endpoint(row: sqlite3.Row) -> EndpointRecord:
    values: dict[str, Any] = dict(row)
    values["event_types"] = loads(values["event_types"])
    values["secrets"] = [WebhookSecret(**s) for s in loads(values["secrets"])]
    values["enabled"] = bool(values["enabled"])
    return EndpointRecord(**values)


def _delivery(row: sqlite3.Row) -> DeliveryRecord:
    return DeliveryRecord(**dict(row))


_INSERT = (
    f"INSERT OR IGNORE INTO webhook_deliveries ({', '.join(_DELIVERY_COLUMNS)})"
    f" VALUES ({', '.join('?' * len(_DELIVERY_COLUMNS))})"
)


def _advance(conn: sqlite3.Connection, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord]) -> bool:
    conn.executemany(_INSERT, [tuple(getattr(d, name) for name in _DELIVERY_COLUMNS) for d in deliveries])
    moved = conn.execute(
        "UPDATE webhook_endpoints SET cursor = ? WHERE id = ? AND cursor = ?", (to, endpoint_id, after)
    )
    return moved.rowcount > 0


def _candidates(conn: sqlite3.Connection, endpoint_id: str, ordered: bool) -> Iterator[Pending]:
    """The claim rule's candidates, read lazily (a claim stops reading once it has its `limit`)."""
    for row in conn.execute(HEADS if ordered else PENDING, {"endpoint": endpoint_id}):
        yield Pending(*row)


def _claim(conn: sqlite3.Connection, endpoint_id: str, terms: Claim) -> list[DeliveryRecord]:
    claimed = []
    # in the same write transaction as the read: no other claim sees them free
    for found in claimable(_candidates(conn, endpoint_id, terms.ordered), terms):
        row = conn.execute(
            "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1"
            " WHERE id = ? RETURNING *",
            (terms.owner, terms.lease_until, found.id),
        ).fetchone()
        claimed.append(_delivery(row))
    return claimed


_FINISH = (
    "UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?,"
    " last_error = ?, lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ? AND attempts = ?"
)


def _finish(conn: sqlite3.Connection, delivery: DeliveryRecord, owner: str) -> bool:
    outcome = (delivery.status, delivery.next_attempt_at, delivery.last_attempt_at, delivery.last_status)
    held = (delivery.id, owner, delivery.attempts)
    return conn.execute(_FINISH, (*outcome, delivery.last_error, *held)).rowcount > 0


class SQLiteWebhooks(WebhookStore):
    """The delivery engine's writes (derive, claim, finish) share commits with each other and with message
    appends (group commit): one fsync for the many endpoints' workers that write in the same loop turn."""

    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def create(self, endpoint: EndpointRecord, *, limit: int | None = None) -> bool:
        values = asdict(endpoint)
        values["event_types"] = dumps(endpoint.event_types)
        values["secrets"] = dumps(values["secrets"])
        columns = ", ".join(values)
        marks = ", ".join("?" * len(values))
        insert = f"INSERT INTO webhook_endpoints ({columns}) VALUES ({marks})"

        def op(conn: sqlite3.Connection) -> bool:
            # in the write's BEGIN IMMEDIATE: no other connection (worker process) writes between count and insert
            if limit is not None:
                count = "SELECT COUNT(*) FROM webhook_endpoints WHERE actor = ?"
                if conn.execute(count, (endpoint.actor,)).fetchone()[0] >= limit:
                    return False
            conn.execute(insert, list(values.values()))
            return True

        return await self._engine.write(op)

    async def get(self, endpoint_id: str) -> EndpointRecord | None:
        def op(conn: sqlite3.Connection) -> EndpointRecord | None:
            row = conn.execute("SELECT * FROM webhook_endpoints WHERE id = ?", (endpoint_id,)).fetchone()
            return None if row is None else _endpoint(row)

        return await self._engine.run(op)

    async def of_actor(self, actor: str | None) -> list[EndpointRecord]:
        def op(conn: sqlite3.Connection) -> list[EndpointRecord]:
            if actor is None:
                rows = conn.execute("SELECT * FROM webhook_endpoints ORDER BY id")
            else:
                rows = conn.execute("SELECT * FROM webhook_endpoints WHERE actor = ? ORDER BY id", (actor,))
            return [_endpoint(r) for r in rows]

        return await self._engine.run(op)

    async def enabled(self) -> list[EndpointRecord]:
        def op(conn: sqlite3.Connection) -> list[EndpointRecord]:
            return [_endpoint(r) for r in conn.execute("SELECT * FROM webhook_endpoints WHERE enabled = 1")]

        return await self._engine.run(op)

    async def update(self, endpoint: EndpointRecord) -> bool:
        update = (
            "UPDATE webhook_endpoints SET url = ?, event_types = ?, messages = ?, on_client_error = ?, ordering = ?,"
            " enabled = ?, secrets = ?, description = ?, failing_since = ?, disabled_reason = ? WHERE id = ?"
        )
        values = (
            endpoint.url,
            dumps(endpoint.event_types),
            endpoint.messages,
            endpoint.on_client_error,
            endpoint.ordering,
            int(endpoint.enabled),
            dumps([asdict(s) for s in endpoint.secrets]),
            endpoint.description,
            endpoint.failing_since,
            endpoint.disabled_reason,
            endpoint.id,
        )
        return await self._engine.write(lambda conn: conn.execute(update, values).rowcount > 0)

    async def set_health(self, endpoint_id: str, failing_since: float | None, disabled_reason: str | None) -> None:
        values: tuple[float | str | None, ...]
        if disabled_reason is None:
            update, values = "UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?", (failing_since, endpoint_id)
        else:
            update = "UPDATE webhook_endpoints SET failing_since = ?, enabled = 0, disabled_reason = ? WHERE id = ?"
            values = (failing_since, disabled_reason, endpoint_id)
        await self._engine.write_shared(lambda conn: conn.execute(update, values))

    async def delete(self, endpoint_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", (endpoint_id,))
            return conn.execute("DELETE FROM webhook_endpoints WHERE id = ?", (endpoint_id,)).rowcount > 0

        # an endpoint's deliveries are unbounded: on the store thread
        return await self._engine.write(op, may_wait=True)

    async def advance(self, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord]) -> bool:
        return await self._engine.write_shared(lambda conn: _advance(conn, endpoint_id, after, to, deliveries))

    async def claim(self, endpoint_id: str, terms: Claim) -> list[DeliveryRecord]:
        return await self._engine.write_shared(lambda conn: _claim(conn, endpoint_id, terms))

    async def advance_and_claim(
        self, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord], claim: Claim
    ) -> tuple[bool, list[DeliveryRecord]]:
        def op(conn: sqlite3.Connection) -> tuple[bool, list[DeliveryRecord]]:
            moved = _advance(conn, endpoint_id, after, to, deliveries)
            if not claim.limit:
                return moved, []
            return moved, _claim(conn, endpoint_id, claim)

        return await self._engine.write_shared(op)

    async def finish(self, delivery: DeliveryRecord, owner: str) -> bool:
        return await self._engine.write_shared(lambda conn: _finish(conn, delivery, owner))

    async def finish_and_claim(
        self, delivery: DeliveryRecord, owner: str, claim: Claim
    ) -> tuple[bool, list[DeliveryRecord]]:
        def op(conn: sqlite3.Connection) -> tuple[bool, list[DeliveryRecord]]:
            if not _finish(conn, delivery, owner):
                return False, []
            return True, _claim(conn, delivery.endpoint_id, claim) if claim.limit else []

        return await self._engine.write_shared(op)

    async def next_due(self, endpoint_id: str, *, ordered: bool = True) -> float | None:
        def op(conn: sqlite3.Connection) -> float | None:
            return next_ready(_candidates(conn, endpoint_id, ordered), ordered=ordered)

        return await self._engine.run(op)

    async def hasten(self, endpoint_id: str, now: float) -> int:
        return await self._engine.write_shared(lambda conn: conn.execute(HASTEN, (now, endpoint_id, now)).rowcount)

    async def release(self, owner: str, endpoint_ids: list[str]) -> int:
        def op(conn: sqlite3.Connection) -> int:
            release = (
                "UPDATE webhook_deliveries INDEXED BY webhook_deliveries_pending SET lease_owner = NULL,"
                " lease_until = 0 WHERE endpoint_id = ? AND status = 'pending' AND lease_owner = ?"
            )
            return sum(conn.execute(release, (endpoint_id, owner)).rowcount for endpoint_id in endpoint_ids)

        return await self._engine.write(op)

    async def prune(self, before: float, limit: int) -> int:
        return await self._engine.write(lambda conn: conn.execute(PRUNE, (before, limit)).rowcount, may_wait=True)

    async def deliveries(
        self,
        endpoint_id: str,
        *,
        limit: int,
        before: int | None = None,
        status: DeliveryStatus | None = None,
        since: float = 0.0,
    ) -> list[DeliveryRecord]:
        def op(conn: sqlite3.Connection) -> list[DeliveryRecord]:
            where, values = ["endpoint_id = ?", "(status = 'pending' OR created_at >= ?)"], [endpoint_id, since]
            if before is not None:
                where.append("gid < ?")
                values.append(before)
            if status is not None:
                where.append("status = ?")
                values.append(status)
            sql = f"SELECT * FROM webhook_deliveries WHERE {' AND '.join(where)} ORDER BY gid DESC LIMIT ?"
            return [_delivery(r) for r in conn.execute(sql, [*values, limit])]

        # a status seldom seen walks the endpoint's deliveries (within the retention) until `limit` are found
        return await self._engine.run(op, may_wait=status is not None)

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None:
        def op(conn: sqlite3.Connection) -> DeliveryRecord | None:
            row = conn.execute("SELECT * FROM webhook_deliveries WHERE id = ?", (delivery_id,)).fetchone()
            return None if row is None else _delivery(row)

        return await self._engine.run(op)

    async def redeliver(self, delivery_id: str, now: float) -> DeliveryRecord | None:
        def op(conn: sqlite3.Connection) -> DeliveryRecord | None:
            row = conn.execute(
                "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? RETURNING *",
                (now, delivery_id),
            ).fetchone()
            return None if row is None else _delivery(row)

        return await self._engine.write(op)

    async def cancel(self, delivery_id: str) -> DeliveryRecord | None:
        def op(conn: sqlite3.Connection) -> DeliveryRecord | None:
            row = conn.execute(
                "UPDATE webhook_deliveries SET status = 'canceled', lease_owner = NULL, lease_until = 0"
                " WHERE id = ? AND status = 'pending' RETURNING *",
                (delivery_id,),
            ).fetchone()
            return None if row is None else _delivery(row)

        return await self._engine.write_shared(op)
