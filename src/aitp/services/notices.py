"""Notices from the service to one actor (a webhook endpoint it disabled, ...): events of the actor's own
notices thread, so they reach it as everything else does, through its inbox, its streams and its other
webhooks, and stay in a log it can read back."""

from __future__ import annotations

import hashlib
from typing import Any

from aitp.events import payloads
from aitp.runtime import now
from aitp.store.base import ActorRecord, NewEvent, Store, ThreadRecord

TITLE = "Notices from the service"


def notices_thread_id(actor: str) -> str:
    """The actor's notices thread: one per actor, the same id on every instance."""
    return "thread_notices_" + hashlib.sha256(actor.encode()).hexdigest()[:26]


async def notify(store: Store, actor: str, kind: str, data: dict[str, Any]) -> None:
    """Append a `kind` event with `data` to the actor's notices thread, creating the thread the first time."""
    thread_id = notices_thread_id(actor)
    if await store.get_thread(thread_id) is None:
        created_at = now()
        thread = ThreadRecord(id=thread_id, created_at=created_at, creator=actor, metadata={"title": TITLE})
        members = [ActorRecord(thread_id=thread_id, id=actor, joined_at=created_at)]
        created = NewEvent("thread.created", payloads.thread_payload(thread, members), created_at)
        try:
            await store.create_thread(thread, members, created, [])
        except Exception:
            if await store.get_thread(thread_id) is None:  # not another instance's creation meanwhile
                raise
    await store.append_event(thread_id, NewEvent(kind, data, now()))
