"""Activity rides beside the log at no cost to it: a notice pushed into a live stream is sent without a read of
the log (a write after the stream's last read still wakes it), the hub hands an activity record to whoever
hears its thread or inbox, reads other instances' records only while someone here listens (skipping its own),
and posting a message reads or writes nothing of activity or presence."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aitp.bindings.openai_threads import render
from aitp.events.hub import Hub
from aitp.events.stream import EventStream, Frame, Notice
from aitp.store import Store
from aitp.store.activity import ActivityRecord
from tests.conftest import API
from tests.store.test_contract import make_thread, post


def record(
    thread_id: str = "thread_1", actor: str = "shop", origin: str = "elsewhere", **fields: Any
) -> ActivityRecord:
    values: dict[str, Any] = {
        "thread_id": thread_id,
        "actor": actor,
        "state": "working",
        "expires_at": time.time() + 15,
        "audience": ("ada", actor),
        "origin": origin,
        "posted_at": time.time(),
        **fields,
    }
    return ActivityRecord(**values)


async def test_a_pushed_notice_is_sent_without_a_read_of_the_log(store: Store) -> None:
    hub = Hub(store)
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    reads: list[int] = []
    with hub.follow(thread.id) as feed:

        async def reading(cursor: int, limit: int) -> list[Any]:
            reads.append(cursor)
            return await feed.after(cursor, limit)

        stream = EventStream(reading, feed.signal.waiter, feed.frames(render.event_frame), cursor=2)
        items = aiter(stream)
        waiting = asyncio.ensure_future(anext(items))
        await asyncio.sleep(0.05)  # caught up, waiting for a write
        read_before = len(reads)
        stream.push(Notice("thread.activity", '{"type": "thread.activity"}'))
        notice = await asyncio.wait_for(waiting, 5)
        assert (
            isinstance(notice, Notice)
            and notice.sse == b'event: thread.activity\ndata: {"type": "thread.activity"}\n\n'
        )
        waiting = asyncio.ensure_future(anext(items))
        await asyncio.sleep(0.05)
        assert len(reads) == read_before  # woken for the notice alone: the log was not read again
        assert stream.delivered == 2  # a notice moves no cursor

        await post(store, thread.id, "two")  # a write still wakes it, and is read
        frame = await asyncio.wait_for(waiting, 5)
        assert isinstance(frame, Frame) and frame.cursor == 3
        await items.aclose()  # type: ignore[attr-defined]


async def test_the_hub_hands_a_record_to_its_thread_its_members_inboxes_and_every_thread_listeners(
    store: Store,
) -> None:
    hub = Hub(store)
    heard: dict[str, list[ActivityRecord]] = {"thread": [], "ada": [], "bob": [], "all": []}
    with (
        hub.hear_activity(heard["thread"].append, thread_id="thread_1"),
        hub.hear_activity(heard["ada"].append, actor="ada"),
        hub.hear_activity(heard["bob"].append, actor="bob"),
        hub.hear_activity(heard["all"].append),
    ):
        said = record()
        hub.activity(said)
        hub.activity(record(thread_id="thread_2", audience=("bob",)))
    assert heard["thread"] == [said] and heard["ada"] == [said] and heard["all"][0] is said
    assert [r.thread_id for r in heard["bob"]] == ["thread_2"] and len(heard["all"]) == 2
    assert hub._hearing == {}  # nobody listens any more


async def test_the_tailer_reads_other_instances_records_only_while_someone_listens(store: Store) -> None:
    hub = Hub(store, poll_interval=0.02)
    calls: list[str] = []
    since, head = store.activity.since, store.activity.head

    async def counted_since(after: int, limit: int) -> list[ActivityRecord]:
        calls.append("since")
        return await since(after, limit)

    async def counted_head() -> int:
        calls.append("head")
        return await head()

    store.activity.since = counted_since  # type: ignore[method-assign]
    store.activity.head = counted_head  # type: ignore[method-assign]
    await hub.start()
    try:
        await asyncio.sleep(0.2)
        assert calls == []  # nobody hears activity here: no read at all
        heard: list[ActivityRecord] = []
        with hub.hear_activity(heard.append, thread_id="thread_1"):
            while "since" not in calls:
                await asyncio.sleep(0.01)
            await store.activity.post(record(origin=hub.instance, actor="mine"))  # told at once when posted
            await store.activity.post(record(actor="theirs"))
            async with asyncio.timeout(5):
                while not heard:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
        assert [r.actor for r in heard] == ["theirs"]
        calls.clear()
        await asyncio.sleep(0.2)
        assert calls == []  # the last listener gone: no more reads
    finally:
        await hub.stop()


async def test_posting_a_message_touches_nothing_of_activity_or_presence(api: API) -> None:
    store = api._app.state.runtime.store
    touched: list[str] = []
    for name in ("activity", "presence"):
        small = getattr(store, name)
        for method in [m for m in dir(small) if not m.startswith("_")]:
            original = getattr(small, method)
            if callable(original):

                def counting(*args: Any, _name: str = f"{name}.{method}", _original: Any = original) -> Any:
                    touched.append(_name)
                    return _original(*args)

                setattr(small, method, counting)
    alice = await api.actor("alice")
    thread = (await alice.post("/threads", json={"messages": [{"role": "user", "content": "hi"}]})).json()["id"]
    for text in ("one", "two"):
        assert (await alice.post(f"/threads/{thread}/messages", json={"content": text})).status_code == 200
    assert touched == []
