"""Actor profiles in the `actor_profiles` table."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from aitp.store.profiles import ProfileRecord, ProfileStore
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.keys import MAX_PARAMS
from aitp.store.sqlite.schema import PROFILE_COLUMNS_ADDED


def upgrade(conn: sqlite3.Connection) -> None:
    """Once, on a store written before profiles had an accent colour: theirs have none (NULL)."""
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(actor_profiles)")}
    for name, definition in PROFILE_COLUMNS_ADDED.items():
        if name not in columns:
            conn.execute(f"ALTER TABLE actor_profiles ADD COLUMN {name} {definition}")


def _profile(row: sqlite3.Row) -> ProfileRecord:
    return ProfileRecord(**dict(row))


class SQLiteProfiles(ProfileStore):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def put(self, profile: ProfileRecord) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO actor_profiles"
                " (actor, display_name, avatar_url, description, updated_at, accent_color) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    profile.actor,
                    profile.display_name,
                    profile.avatar_url,
                    profile.description,
                    profile.updated_at,
                    profile.accent_color,
                ),
            )

        await self._engine.write(op)

    async def get(self, actor: str) -> ProfileRecord | None:
        def op(conn: sqlite3.Connection) -> ProfileRecord | None:
            row = conn.execute("SELECT * FROM actor_profiles WHERE actor = ?", (actor,)).fetchone()
            return None if row is None else _profile(row)

        return await self._engine.run(op)

    async def many(self, actors: Sequence[str]) -> dict[str, ProfileRecord]:
        def op(conn: sqlite3.Connection) -> dict[str, ProfileRecord]:
            found: dict[str, ProfileRecord] = {}
            for start in range(0, len(actors), MAX_PARAMS):
                chunk = list(actors[start : start + MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT * FROM actor_profiles WHERE actor IN ({marks})", chunk):
                    found[row["actor"]] = _profile(row)
            return found

        return await self._engine.run(op)
