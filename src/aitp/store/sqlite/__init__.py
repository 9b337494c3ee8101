"""The embedded store: one SQLite file in WAL mode, the zero-setup default."""

from aitp.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
