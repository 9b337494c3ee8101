"""An actor's inbox read as a log, by cursor, for those that follow it from the store (webhook deliveries).

The one place that knows what the cursor is (today the store-wide gid of an event): changing the cursor's
design changes this module alone.
"""

from __future__ import annotations

from aitp.store.base import EventRecord, Store


async def position(store: Store) -> int:
    """The inbox's position now: reading after it gives what is written from here on."""
    return await store.last_event_gid()


async def read(store: Store, actor: str, after: int, limit: int) -> list[EventRecord]:
    """The events of `actor`'s inbox after `after`, oldest first, at most `limit`."""
    return await store.list_inbox_events(actor, after, limit)


def cursor_of(record: EventRecord) -> int:
    """What to read after to get the events that follow `record`."""
    return record.gid
