"""Webhook endpoints and deliveries in the `webhook_endpoints` and `webhook_deliveries` tables."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, fields
from typing import Any

from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import dumps, loads
from aitp.store.webhooks import Claim, DeliveryRecord, EndpointRecord, WebhookSecret, WebhookStore

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
    messages TEXT NOT NULL DEFAULT 'all'
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
"""

_DELIVERY_COLUMNS = [f.name for f in fields(DeliveryRecord)]
# the oldest pending delivery of each thread of the endpoint: only it may be attempted (order per thread)
_HEAD = """
d.endpoint_id = ? AND d.status = 'pending' AND NOT EXISTS (
    SELECT 1 FROM webhook_deliveries p
    WHERE p.endpoint_id = d.endpoint_id AND p.thread_id = d.thread_id AND p.status = 'pending' AND p.gid < d.gid
)"""
_DUE_HEADS = f"SELECT d.id FROM webhook_deliveries d WHERE {_HEAD} AND d.next_attempt_at <= ? AND d.lease_until <= ?"
_NEXT_DUE = f"SELECT MIN(MAX(d.next_attempt_at, d.lease_until)) FROM webhook_deliveries d WHERE {_HEAD}"


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


def _claim(conn: sqlite3.Connection, endpoint_id: str, terms: Claim) -> list[DeliveryRecord]:
    owner, now, lease_until, limit = terms.owner, terms.now, terms.lease_until, terms.limit
    ids = [row[0] for row in conn.execute(f"{_DUE_HEADS} ORDER BY d.gid LIMIT ?", (endpoint_id, now, now, limit))]
    claimed = []
    for found in ids:  # in the same write transaction as the read: no other claim sees them free
        row = conn.execute(
            "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1"
            " WHERE id = ? RETURNING *",
            (owner, lease_until, found),
        ).fetchone()
        claimed.append(_delivery(row))
    return claimed


class SQLiteWebhooks(WebhookStore):
    """The delivery engine's writes (derive, claim, finish) share commits with each other and with message
    appends (group commit): one fsync for the many endpoints' workers that write in the same loop turn."""

    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def create(self, endpoint: EndpointRecord) -> None:
        values = asdict(endpoint)
        values["event_types"] = dumps(endpoint.event_types)
        values["secrets"] = dumps(values["secrets"])
        columns = ", ".join(values)
        marks = ", ".join("?" * len(values))
        insert = f"INSERT INTO webhook_endpoints ({columns}) VALUES ({marks})"
        await self._engine.write(lambda conn: conn.execute(insert, list(values.values())))

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
            "UPDATE webhook_endpoints SET url = ?, event_types = ?, messages = ?, enabled = ?, secrets = ?,"
            " description = ?, failing_since = ?, disabled_reason = ? WHERE id = ?"
        )
        values = (
            endpoint.url,
            dumps(endpoint.event_types),
            endpoint.messages,
            int(endpoint.enabled),
            dumps([asdict(s) for s in endpoint.secrets]),
            endpoint.description,
            endpoint.failing_since,
            endpoint.disabled_reason,
            endpoint.id,
        )
        return await self._engine.write(lambda conn: conn.execute(update, values).rowcount > 0)

    async def set_health(self, endpoint_id: str, failing_since: float | None, disabled_reason: str | None) -> None:
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
        update = (
            "UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?,"
            " last_error = ?, lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ? AND attempts = ?"
        )
        values = (
            delivery.status,
            delivery.next_attempt_at,
            delivery.last_attempt_at,
            delivery.last_status,
            delivery.last_error,
            delivery.id,
            owner,
            delivery.attempts,
        )
        return await self._engine.write_shared(lambda conn: conn.execute(update, values).rowcount > 0)

    async def next_due(self, endpoint_id: str) -> float | None:
        def op(conn: sqlite3.Connection) -> float | None:
            due: float | None = conn.execute(_NEXT_DUE, (endpoint_id,)).fetchone()[0]
            return due

        return await self._engine.run(op)

    async def deliveries(self, endpoint_id: str, *, limit: int, before: int | None = None) -> list[DeliveryRecord]:
        def op(conn: sqlite3.Connection) -> list[DeliveryRecord]:
            bound = "" if before is None else " AND gid < ?"
            values: list[Any] = [endpoint_id, *([] if before is None else [before]), limit]
            sql = f"SELECT * FROM webhook_deliveries WHERE endpoint_id = ?{bound} ORDER BY gid DESC LIMIT ?"
            return [_delivery(r) for r in conn.execute(sql, values)]

        return await self._engine.run(op)

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
