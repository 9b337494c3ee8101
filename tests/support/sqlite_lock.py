"""Holding a SQLite store's write lock from outside, as another instance's write or a WAL checkpoint does."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator

from aitp.store.sqlite import SQLiteStore
from tests.conftest import Backend


@contextlib.asynccontextmanager
async def write_lock_held(backend: Backend) -> AsyncIterator[None]:
    """On SQLite, another connection holds the write lock for a moment (as another instance's write or a WAL
    checkpoint does): the writes that arrive meanwhile have all read their state before any of them can commit."""
    if backend.name != "sqlite":
        yield
        return
    holder = sqlite3.connect(SQLiteStore.from_url(backend.url).path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
        await asyncio.sleep(0.5)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
