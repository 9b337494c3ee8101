"""Storage: one interface (`Store`), two backends chosen by URL."""

from __future__ import annotations

from aitp.store.base import Store


def open_store(url: str) -> Store:
    """Build (not yet open) the store for `sqlite:///path` or `mongodb://...` URLs."""
    if url.startswith("sqlite://"):
        from aitp.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if url.startswith(("mongodb://", "mongodb+srv://")):
        from aitp.store.mongo import MongoStore

        return MongoStore.from_url(url)
    raise ValueError(f"unsupported store URL {url!r}: use sqlite:///path/to/aitp.db or mongodb://host/db")


def in_memory(url: str) -> bool:
    """Whether the store at `url` lives inside the process that opens it and ends with it."""
    if not url.startswith("sqlite://"):
        return False
    from aitp.store.sqlite import SQLiteStore

    return SQLiteStore.from_url(url).path == ":memory:"


__all__ = ["Store", "in_memory", "open_store"]
