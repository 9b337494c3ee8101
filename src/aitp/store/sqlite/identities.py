"""Actor identities in the `actor_identities` table, and their creation in stores written before them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from aitp.store.identities import ANYONE, DOMAIN, LOCAL, NEAR, IdentityRecord, IdentityStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.keys import MAX_PARAMS
from aitp.store.sqlite.profiles import upgrade as upgrade_profiles
from aitp.store.sqlite.schema import dumps, loads

TABLE = """
CREATE TABLE IF NOT EXISTS actor_identities (
    actor TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    verified_at INTEGER,
    key_id TEXT,
    contact_policy TEXT NOT NULL,
    contact_allow TEXT NOT NULL,
    name_key TEXT NOT NULL DEFAULT '',
    anonymous_visitors INTEGER NOT NULL DEFAULT 0,
    embed_origins TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS actor_identities_by_name ON actor_identities (name_key) WHERE name_key != '';
"""

# the actor_identities columns added since its first version, each with its definition (`create_table`)
COLUMNS_ADDED = {"anonymous_visitors": "INTEGER NOT NULL DEFAULT 0", "embed_origins": "TEXT NOT NULL DEFAULT '[]'"}

# Every actor a store written before identities knew of: in a thread (or its creator), holding a key, or with a
# profile. Each becomes a local actor that anyone may contact, as every actor was then.
_KNOWN_BEFORE = """
INSERT OR IGNORE INTO actor_identities (actor, kind, created_at, contact_policy, contact_allow)
SELECT actor, ?, ?, ?, '[]' FROM (
    SELECT actor_id AS actor FROM thread_actors
    UNION SELECT creator FROM threads WHERE deleted = 0
    UNION SELECT actor FROM api_keys WHERE admin = 0
    UNION SELECT actor FROM actor_profiles
)
"""


def create_table(conn: sqlite3.Connection) -> None:
    """Create the table; when it is new in a store that holds actors already, give each a local identity. Also
    gives a store written before accent colours the profile column (what actors say of themselves goes with who
    they are; `SQLiteStore.open` runs this once per open, after the schema)."""
    upgrade_profiles(conn)
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'actor_identities'")
    new = exists.fetchone() is None
    for statement in TABLE.split(";"):
        if statement.strip():
            conn.execute(statement)
    if new:
        conn.execute(_KNOWN_BEFORE, (LOCAL, int(time.time()), ANYONE))
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(actor_identities)")}
    for name, definition in COLUMNS_ADDED.items():
        if name not in columns:  # a store written before: no anonymous visitors, no site frames a chat
            conn.execute(f"ALTER TABLE actor_identities ADD COLUMN {name} {definition}")


def _identity(row: sqlite3.Row) -> IdentityRecord:
    return IdentityRecord(
        actor=row["actor"],
        kind=row["kind"],
        created_at=row["created_at"],
        verified_at=row["verified_at"],
        key_id=row["key_id"],
        contact_policy=row["contact_policy"],
        contact_allow=loads(row["contact_allow"]),
        name_key=row["name_key"],
        anonymous_visitors=bool(row["anonymous_visitors"]),
        embed_origins=loads(row["embed_origins"]),
    )


def _insert(conn: sqlite3.Connection, identity: IdentityRecord) -> bool:
    inserted = conn.execute(
        "INSERT OR IGNORE INTO actor_identities"
        " (actor, kind, created_at, verified_at, key_id, contact_policy, contact_allow, name_key, anonymous_visitors,"
        " embed_origins) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            identity.actor,
            identity.kind,
            identity.created_at,
            identity.verified_at,
            identity.key_id,
            identity.contact_policy,
            dumps(identity.contact_allow),
            identity.name_key,
            int(identity.anonymous_visitors),
            dumps(identity.embed_origins),
        ),
    )
    return inserted.rowcount > 0


def _select(conn: sqlite3.Connection, actor: str) -> IdentityRecord | None:
    row = conn.execute("SELECT * FROM actor_identities WHERE actor = ?", (actor,)).fetchone()
    return None if row is None else _identity(row)


class SQLiteIdentities(IdentityStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def get(self, actor: str) -> IdentityRecord | None:
        return await self._engine.run(lambda conn: _select(conn, actor))

    async def many(self, actors: Sequence[str]) -> dict[str, IdentityRecord]:
        def op(conn: sqlite3.Connection) -> dict[str, IdentityRecord]:
            found: dict[str, IdentityRecord] = {}
            for start in range(0, len(actors), MAX_PARAMS):
                chunk = list(actors[start : start + MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT * FROM actor_identities WHERE actor IN ({marks})", chunk):
                    found[row["actor"]] = _identity(row)
            return found

        return await self._engine.run(op)

    async def add(self, identity: IdentityRecord) -> bool:
        return await self._engine.write(lambda conn: _insert(conn, identity))

    async def proven(
        self, actor: str, kind: str, verified_at: int, key_id: str, *, new: IdentityRecord
    ) -> IdentityRecord:
        def op(conn: sqlite3.Connection) -> IdentityRecord:
            _insert(conn, new)
            conn.execute(
                "UPDATE actor_identities SET kind = ?, verified_at = ?, key_id = ? WHERE actor = ?",
                (kind, verified_at, key_id, actor),
            )
            stored = _select(conn, actor)
            assert stored is not None
            return stored

        return await self._engine.write(op)

    async def vouched(self, identity: IdentityRecord) -> IdentityRecord:
        def op(conn: sqlite3.Connection) -> IdentityRecord:
            if not _insert(conn, identity):
                conn.execute(
                    "UPDATE actor_identities SET kind = ?, verified_at = ?, key_id = ?, contact_policy = ?,"
                    " contact_allow = ? WHERE actor = ?",
                    (
                        identity.kind,
                        identity.verified_at,
                        identity.key_id,
                        identity.contact_policy,
                        dumps(identity.contact_allow),
                        identity.actor,
                    ),
                )
            stored = _select(conn, identity.actor)
            assert stored is not None
            return stored

        return await self._engine.write(op)

    async def set_contact(self, actor: str, policy: str, allow: Sequence[str]) -> IdentityRecord | None:
        def op(conn: sqlite3.Connection) -> IdentityRecord | None:
            conn.execute(
                "UPDATE actor_identities SET contact_policy = ?, contact_allow = ? WHERE actor = ?",
                (policy, dumps(list(allow)), actor),
            )
            return _select(conn, actor)

        return await self._engine.write(op)

    async def set_customer_settings(
        self, actor: str, anonymous_visitors: bool, embed_origins: Sequence[str]
    ) -> IdentityRecord | None:
        def op(conn: sqlite3.Connection) -> IdentityRecord | None:
            update = "UPDATE actor_identities SET anonymous_visitors = ?, embed_origins = ? WHERE actor = ?"
            conn.execute(update, (int(anonymous_visitors), dumps(list(embed_origins)), actor))
            return _select(conn, actor)

        return await self._engine.write(op)

    async def set_name_key(self, actor: str, name_key: str) -> None:
        update = "UPDATE actor_identities SET name_key = ? WHERE actor = ?"
        await self._engine.write(lambda conn: conn.execute(update, (name_key, actor)))

    async def verified_with_name(self, name_key: str, other_than: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT actor FROM actor_identities WHERE name_key = ? AND actor != ? AND kind IN (?, ?) LIMIT 1",
                (name_key, other_than, DOMAIN, NEAR),
            ).fetchone()
            return None if row is None else row[0]

        return await self._engine.run(op)
