"""A live stream runs in its consumer's task: a wake-up costs one task step, and the events written while
the consumer sends count against its buffer as they are written, so a slow consumer still ends with
`Overflow` after what it was owed, naming the cursor to resume from."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aitp.bindings.openai_threads import render
from aitp.events.hub import Hub, ThreadFeed
from aitp.events.stream import EventStream, Frame, Item, Overflow
from aitp.store import Store
from tests.store.test_contract import make_thread, post


def stream_of(feed: ThreadFeed, cursor: int, buffer: int = 1024) -> AsyncIterator[Item]:
    stream = EventStream(
        feed.after, feed.signal.waiter, feed.frames(render.event_frame), cursor=cursor, replay=feed.page, buffer=buffer
    )
    return aiter(stream)


async def test_a_live_stream_has_no_task_of_its_own(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    with hub.follow(thread.id) as feed:
        items = stream_of(feed, cursor=2)
        before = len(asyncio.all_tasks())
        waiting = asyncio.ensure_future(anext(items))  # the consumer: the only task the stream runs in
        await asyncio.sleep(0.05)
        assert len(asyncio.all_tasks()) == before + 1
        await post(store, thread.id, "two")
        item = await asyncio.wait_for(waiting, 5)
        assert isinstance(item, Frame) and item.cursor == 3
        await items.aclose()  # type: ignore[attr-defined]


async def test_events_written_while_the_consumer_sends_count_against_its_buffer(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    with hub.follow(thread.id) as feed:
        items = stream_of(feed, cursor=2, buffer=3)
        waiting = asyncio.ensure_future(anext(items))
        await asyncio.sleep(0.05)
        await post(store, thread.id, "m3")
        first = await asyncio.wait_for(waiting, 5)
        for seq in range(4, 8):  # the consumer is busy sending seq 3 meanwhile: 4 events for 3 places
            await post(store, thread.id, f"m{seq}")
        rest = [await asyncio.wait_for(anext(items), 5) for _ in range(4)]
    assert [item.cursor for item in (first, *rest[:3]) if isinstance(item, Frame)] == [3, 4, 5, 6]
    assert isinstance(rest[3], Overflow) and rest[3].cursor == 6  # resume after the last event sent


async def test_a_consumer_that_keeps_up_gets_every_event_in_order(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    with hub.follow(thread.id) as feed:
        items = stream_of(feed, cursor=2, buffer=3)
        received: list[int] = []

        async def consume() -> None:
            async for item in items:
                assert isinstance(item, Frame)
                received.append(item.cursor)
                if item.cursor == 52:
                    return

        async def taken(seq: int) -> None:
            while received[-1:] != [seq]:
                await asyncio.sleep(0)

        consumer = asyncio.ensure_future(consume())
        for seq in range(3, 53):  # each written once the consumer took the one before
            await post(store, thread.id, f"m{seq}")
            await asyncio.wait_for(taken(seq), 5)
        await asyncio.wait_for(consumer, 5)
    assert received == list(range(3, 53))
