"""The hub wakes followers of a thread; its feed serves them the thread's newest events from one store read."""

from __future__ import annotations

import asyncio

import pytest

from aitp.bindings.openai_threads import render
from aitp.events.hub import Hub
from aitp.events.stream import PAGE, EventStream, Frame
from aitp.store import Store, open_store
from aitp.store.base import EventRecord
from tests.conftest import Backend
from tests.store.test_contract import Renderer, actor_rec, make_thread, post


def count_reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (after, limit) of every `store.list_events` call from now on."""
    reads: list[tuple[int, int]] = []
    list_events = store.list_events

    async def reading(thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        reads.append((after, limit))
        return await list_events(thread_id, after=after, limit=limit)

    monkeypatch.setattr(store, "list_events", reading)
    return reads


async def test_followers_reading_at_once_all_get_the_new_events(store: Store) -> None:
    """Readers arriving while another reader's refresh is in flight wait for it instead of finding nothing."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    with hub.follow(thread.id) as feed:
        assert [e.seq for e in await feed.after(0, 10)] == [1, 2]
        await post(store, thread.id, "two")  # the commit listener pokes the feed
        await post(store, thread.id, "three")
        results = await asyncio.gather(*(feed.after(2, 10) for _ in range(5)))
    assert [[e.seq for e in r] for r in results] == [[3, 4]] * 5


async def test_a_commit_wakes_the_threads_followers_and_the_inbox_signal(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",))
    with hub.follow(thread.id) as feed:
        thread_waiter, any_waiter = feed.signal.waiter(), hub.any_event.waiter()
        await post(store, thread.id)
        await asyncio.wait_for(asyncio.gather(thread_waiter.wait(), any_waiter.wait()), 5)


async def test_a_reader_behind_the_window_reads_the_store(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("a", "b", "c"))
    with hub.follow(thread.id) as feed:
        assert [e.seq for e in await feed.after(3, 10)] == [4]  # the window starts after seq 3
        assert [e.seq for e in await feed.after(0, 2)] == [1, 2]  # older: straight from the store
    assert hub._feeds == {}  # the last follower gone, the feed is dropped


async def test_a_replay_reads_the_store_a_page_at_a_time_and_keeps_none_of_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscriber replaying a long thread holds one page of it: the feed's window (the newest events,
    shared by live subscribers) is not filled from an old cursor, and no replayed event's frame is kept. The
    last page, the end of the log, starts the window: the live stream goes on from it without reading it again."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), tuple(f"m{i}" for i in range(3 * PAGE + 20)))
    reads = count_reads(store, monkeypatch)
    last = 3 * PAGE + 21  # thread.created, then the messages
    with hub.follow(thread.id) as feed:
        stream = EventStream(
            feed.after, feed.signal.waiter, feed.frames(render.event_frame), cursor=0, replay=feed.page
        )
        seen = []
        async for item in stream:
            assert isinstance(item, Frame)
            seen.append(item.cursor)
            # (events in the window, frames kept): none before the last page, which the window then holds
            tail = item.cursor - 3 * PAGE
            assert feed.kept() == ((last - 3 * PAGE, tail) if tail > 0 else (0, 0))
            if item.cursor == last:
                break
    assert seen == list(range(1, last + 1))
    assert [limit for _, limit in reads] == [PAGE] * 4


async def test_a_stream_opened_at_the_end_of_the_log_reads_the_store_once_then_once_per_change(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscriber following a thread from its last event (an A2A SendMessage waiting for the agent's
    answer) reads the store for its replay and then once per change: its replay found the end of the log,
    so the feed does not read it again, nor read the store for every wake-up while its window is empty."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    reads = count_reads(store, monkeypatch)
    with hub.follow(thread.id) as feed:
        stream = EventStream(
            feed.after, feed.signal.waiter, feed.frames(render.event_frame), cursor=2, replay=feed.page
        )
        items = aiter(stream)
        for seq in (3, 4, 5):
            next_item = asyncio.ensure_future(anext(items))
            await asyncio.sleep(0.01)  # the stream waits for the next change
            await post(store, thread.id, f"m{seq}")
            item = await asyncio.wait_for(next_item, 5)
            assert isinstance(item, Frame) and item.cursor == seq
        await items.aclose()  # type: ignore[attr-defined]
    assert [after for after, _ in reads] == [
        2,
        2,
        3,
        4,
    ]  # the replay, then one read after each change from the last event read


async def test_a_write_during_the_replays_last_read_is_not_missed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay's last page starts the feed's window only if nothing was written while it was read."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    list_events = store.list_events

    async def read_then_written(thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        found = await list_events(thread_id, after=after, limit=limit)
        monkeypatch.setattr(store, "list_events", list_events)
        await post(store, thread.id, "written meanwhile")  # committed after the read, before it returned
        return found

    monkeypatch.setattr(store, "list_events", read_then_written)
    with hub.follow(thread.id) as feed:
        stream = EventStream(
            feed.after, feed.signal.waiter, feed.frames(render.event_frame), cursor=1, replay=feed.page
        )
        items = aiter(stream)
        received = [await asyncio.wait_for(anext(items), 5) for _ in range(2)]
        await items.aclose()  # type: ignore[attr-defined]
    assert [item.cursor for item in received if isinstance(item, Frame)] == [2, 3]


async def test_a_message_wakes_the_inboxes_of_the_threads_members_only(store: Store) -> None:
    """Each woken inbox stream reads the store: a message must not cost a read per connected actor."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice", "shop"))
    with hub.follow_inbox("alice") as alice, hub.follow_inbox("carol") as carol:
        hub.members_of = lambda thread_id: ["alice", "shop"] if thread_id == thread.id else None
        alice_woken, carol_woken = alice.waiter(), carol.waiter()
        await post(store, thread.id)
        await asyncio.wait_for(alice_woken.wait(), 5)
        assert not carol_woken.is_set()

        hub.members_of = lambda thread_id: None  # members not known here: every inbox looks
        await post(store, thread.id)
        await asyncio.wait_for(carol_woken.wait(), 5)

        hub.members_of = lambda thread_id: ["alice", "shop"]
        carol_woken = carol.waiter()
        hub.notify(thread.id, thread_changed=True)  # actors may have changed (a join, another process's write)
        await asyncio.wait_for(carol_woken.wait(), 5)


async def test_an_inbox_signal_lives_while_a_stream_follows_it(store: Store) -> None:
    hub = Hub(store)
    with hub.follow_inbox("alice") as first, hub.follow_inbox("alice") as second:
        assert first is second
    with hub.follow_inbox("alice") as third:
        assert third is not first  # the last follower left: it was dropped


async def test_another_processs_message_wakes_the_members_inboxes_and_its_join_every_inbox(
    store: Store, backend: Backend
) -> None:
    """Through the tailer: a message event leaves the actors as they were, a join may not."""
    hub = Hub(store, poll_interval=0.02)
    thread, _, _ = await make_thread(store, ("alice", "shop"))
    hub.members_of = lambda thread_id: ["alice", "shop"] if thread_id == thread.id else None
    elsewhere = open_store(backend.url)  # another process sharing the store
    await elsewhere.open()
    await hub.start()
    try:
        with hub.follow_inbox("alice") as alice, hub.follow_inbox("carol") as carol:
            alice_woken, carol_woken = alice.waiter(), carol.waiter()
            await post(elsewhere, thread.id)
            await asyncio.wait_for(alice_woken.wait(), 10)
            await asyncio.sleep(0.2)  # the tailer has polled again since
            assert not carol_woken.is_set()

            await elsewhere.put_actor(actor_rec(thread.id, "carol"), Renderer("thread.actor.joined"))
            await asyncio.wait_for(carol_woken.wait(), 10)
    finally:
        await hub.stop()
        await elsewhere.close()
