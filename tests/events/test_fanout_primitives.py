"""What makes one event cheap to send to many subscribers: a wake-up that costs O(1) per waiter, one
rendering of each event per thread, and a refresh that a reader leaving half-way does not spoil."""

from __future__ import annotations

import asyncio

import orjson

from aitp.bindings.http.errors import envelope
from aitp.bindings.openai_threads import render
from aitp.config import Settings
from aitp.events.hub import Hub, Signal, first_of
from aitp.events.stream import Frame, Render
from aitp.server.serving import uvicorn_options
from aitp.store import Store
from aitp.store.base import EventRecord
from tests.store.test_contract import make_thread, post


async def test_a_waiter_taken_before_a_fire_is_woken_even_if_it_waits_after() -> None:
    signal = Signal()
    early = signal.waiter()
    signal.fire()
    await asyncio.wait_for(early.wait(), 1)  # the fire happened between taking and waiting: no sleep
    late = signal.waiter()
    assert not late.is_set()  # a waiter taken after the fire waits for the next one


async def test_a_cancelled_waiter_does_not_stop_the_others_from_waking() -> None:
    signal = Signal()
    waiters = [asyncio.create_task(signal.waiter().wait()) for _ in range(100)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    signal.fire()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    assert results[1:] == [None] * 99


async def test_waiters_that_went_away_are_not_held_until_the_next_fire() -> None:
    """A signal that rarely fires, waited on at every turn beside a busy one (the webhook engine waits for
    endpoint changes or any event), held every cancelled waiter until it fired."""
    rare = Signal()
    for _ in range(10_000):
        waiting = asyncio.ensure_future(rare.waiter().wait())
        await asyncio.sleep(0)
        waiting.cancel()  # the busy signal fired first
        await asyncio.sleep(0)
    waiters = [asyncio.ensure_future(rare.waiter().wait()) for _ in range(10)]
    assert len(rare._waiters) < 100
    rare.fire()
    await asyncio.wait_for(asyncio.gather(*waiters), 1)  # those still waiting are woken


async def test_a_waiter_on_two_signals_is_woken_by_either() -> None:
    busy, rare = Signal(), Signal()
    for fired in (busy, rare):
        woken = first_of(busy, rare)
        assert not woken.is_set()
        fired.fire()
        await asyncio.wait_for(woken.wait(), 1)
    woken = first_of(busy, rare)
    busy.fire()
    rare.fire()  # the second fire finds it set already
    assert woken.is_set()


async def test_every_subscriber_of_a_thread_gets_the_same_frame_of_an_event(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("hello",))
    with hub.follow(thread.id) as feed:
        first, second = await feed.after(0, 10), await feed.after(0, 10)
        frames = [feed.frames(render.event_frame)(record) for record in first]
        again = [feed.frames(render.event_frame)(record) for record in second]
        assert all(a is b for a, b in zip(again, frames, strict=True))  # the same objects: rendered once
        for record, frame in zip(first, frames, strict=True):
            assert (frame.cursor, frame.type) == (record.seq, record.type)
            assert orjson.loads(frame.json) == render.event(record)
            assert frame.sse == b"id: %d\nevent: %s\ndata: %s\n\n" % (
                record.seq,
                record.type.encode(),
                frame.json.encode(),
            )


async def test_each_binding_renders_an_event_once_for_all_its_subscribers(store: Store) -> None:
    """The feed keeps records; the frames it shares are per rendering (per binding), each made once."""
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("hello",))
    calls: list[str] = []

    def counted(name: str, render_event: Render) -> Render:
        def rendered(record: EventRecord) -> Frame:
            calls.append(name)
            return render_event(record)

        return rendered

    threads, other = counted("threads", render.event_frame), counted("other", render.inbox_frame)
    with hub.follow(thread.id) as feed:
        records = await feed.after(0, 10)
        for _ in range(3):  # three subscribers of each binding
            mine, theirs = feed.frames(threads), feed.frames(other)
            for record in records:
                assert "cursor" not in mine(record).object() and "cursor" in theirs(record).object()
        assert sorted(calls) == ["other"] * len(records) + ["threads"] * len(records)
        assert feed.kept() == (len(records), 2 * len(records))


async def test_a_reader_cancelled_while_refreshing_leaves_the_events_to_the_next_reader(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",))
    with hub.follow(thread.id) as feed:
        seen = [e.seq for e in await feed.after(0, 10)]
        await post(store, thread.id, "one")
        reader = asyncio.create_task(feed.after(seen[-1], 10))
        await asyncio.sleep(0)  # it has started the store read
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        assert [e.seq for e in await feed.after(seen[-1], 10)] == [seen[-1] + 1]


def test_websocket_compression_is_off_unless_configured() -> None:
    assert uvicorn_options(Settings(), envelope)["ws_per_message_deflate"] is False
    assert uvicorn_options(Settings(ws_compression=True), envelope)["ws_per_message_deflate"] is True
    assert Settings.from_env({"AITP_WS_COMPRESSION": "1"}).ws_compression is True
