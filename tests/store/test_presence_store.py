"""The Store contract for what actors are doing right now (`activity`) and what says they can be reached
(`presence`), on every backend (through the `store` fixture).

Activity is a short log read by position: every record posted after a reader's position is read once, in
order, and a position is never given twice, even after the records below it were dropped. A presence beat
says an instance follows an actor's inbox until it expires or the instance leaves; time is passed in, so
expiry is tested by asking "later", not by waiting.
"""

from __future__ import annotations

import time

from aitp.store import Store, open_store
from aitp.store.activity import ActivityRecord
from aitp.store.presence import CallRecord
from tests.conftest import Backend


def real_now() -> float:
    """Whole seconds of the real time, read when a test starts: a TTL monitor (MongoDB's, nx-27017's) drops a
    beat whose expiry is past by the real clock, so the times a test writes must be ahead of it."""
    return float(int(time.time()))


def activity(actor: str = "shop", state: str = "working", thread: str = "thread_1", **fields: object) -> ActivityRecord:
    now = real_now()
    values: dict = {
        "thread_id": thread,
        "actor": actor,
        "state": state,
        "expires_at": now + 15,
        "audience": ("ada", actor),
        "origin": "instance-a",
        "posted_at": now,
        **fields,
    }
    return ActivityRecord(**values)


async def test_activity_posted_after_a_position_is_read_once_in_order(store: Store) -> None:
    start = await store.activity.head()
    first = await store.activity.post(activity("shop"))
    second = await store.activity.post(activity("ada", "idle", expires_at=real_now()))
    assert start < first < second

    read = await store.activity.since(start, 10)
    assert [(r.actor, r.state, r.position) for r in read] == [("shop", "working", first), ("ada", "idle", second)]
    assert read[0] == activity("shop", position=first)  # every field back as written
    assert [r.position for r in await store.activity.since(first, 10)] == [second]
    assert await store.activity.since(second, 10) == []
    assert [r.position for r in await store.activity.since(start, 1)] == [first]  # at most `limit`
    assert await store.activity.head() >= second  # what comes next is above the head


async def test_a_position_is_never_given_twice_when_old_records_were_dropped(backend: Backend) -> None:
    # records are dropped a while after they were posted (SQLite: by the first post of a process, then every
    # half minute; MongoDB: by a TTL index); a restart reads the head from the store, not from memory
    first = open_store(backend.url)
    await first.open()
    try:
        old = await first.activity.post(activity(posted_at=real_now() - 3600))
    finally:
        await first.close()
    store = open_store(backend.url)
    await store.open()
    try:
        head = await store.activity.head()
        assert head >= old
        newer = await store.activity.post(activity("ada"))
        assert newer > head
        if backend.name == "sqlite":  # dropped as the newer one was posted
            assert [r.position for r in await store.activity.since(0, 10)] == [newer]
    finally:
        await store.close()


async def test_an_inbox_beat_counts_until_it_expires_or_its_instance_leaves(store: Store) -> None:
    now = real_now()
    assert not await store.presence.followed("shop", now)
    await store.presence.beat("instance-a", ["shop", "ada"], now + 600)
    await store.presence.beat("instance-b", ["shop"], now + 300)
    assert await store.presence.followed("shop", now) and await store.presence.followed("ada", now)
    assert not await store.presence.followed("bob", now)

    await store.presence.leave("instance-a", "shop")
    assert await store.presence.followed("shop", now)  # instance b still follows it
    assert not await store.presence.followed("shop", now + 301)  # b's beat has expired by then
    await store.presence.beat("instance-b", ["shop"], now + 900)  # beaten again: it counts on
    assert await store.presence.followed("shop", now + 301)
    await store.presence.leave("instance-b", "shop")
    assert not await store.presence.followed("shop", now)
    assert await store.presence.followed("ada", now)  # another actor's beat is not touched


async def test_the_last_call_to_an_actor_replaces_the_one_before(store: Store) -> None:
    now = real_now()
    assert await store.presence.last_call("agent", "a2a") is None
    await store.presence.note_call(CallRecord("agent", "a2a", False, now - 5))
    await store.presence.note_call(CallRecord("agent", "a2a", True, now))
    await store.presence.note_call(CallRecord("other", "a2a", False, now))
    assert await store.presence.last_call("agent", "a2a") == CallRecord("agent", "a2a", True, now)
    assert await store.presence.last_call("other", "a2a") == CallRecord("other", "a2a", False, now)
