"""What a message costs the inbox streams that do not carry it: nothing.

Specification: an actor's inbox stream reads the store when an event of one of its threads is written (or
when the thread's actors may have changed), not at every message anywhere: with many actors connected (each
customer of a shop with the web UI open), a message reads the store for its thread's members only. The
members' streams still get every event, in order, and an actor added to a thread gets what follows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

from aitp.bindings.openai_threads.render import inbox_frame
from aitp.events.stream import Frame
from aitp.principals import Principal
from aitp.services.streams import inbox_stream
from aitp.store import Store
from tests.conftest import API

IDLE = 20  # connected actors in none of the threads written to


async def test_a_message_reads_the_store_for_its_threads_members_inboxes_only(api: API, store: Store) -> None:
    rt = api._app.state.runtime
    reads: Counter[str] = Counter()
    list_inbox_events = store.list_inbox_events

    async def counted(actor: str, after: int, limit: int) -> Any:
        reads[actor] += 1
        return await list_inbox_events(actor, after, limit)

    store.list_inbox_events = counted  # type: ignore[method-assign]
    received: dict[str, list[str]] = {}

    async def follow(actor: str, ready: asyncio.Event) -> None:
        received[actor] = []
        async with inbox_stream(rt, Principal(actor), 0, inbox_frame) as stream:
            ready.set()
            async for item in stream:
                if isinstance(item, Frame):
                    received[actor].append(item.type)

    shop = await api.actor("shop")
    await api.known("alice", "bob")
    thread = (await shop.post("/threads", json={"actors": [{"id": "alice"}]})).json()["id"]
    actors = ["alice", "shop", "bob", *(f"idle-{i}" for i in range(IDLE))]
    readies = {actor: asyncio.Event() for actor in actors}
    followers = [asyncio.create_task(follow(actor, readies[actor])) for actor in actors]
    try:
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies.values())), 10)
        await asyncio.sleep(0.1)  # every stream has replayed and waits
        before = reads.copy()

        for i in range(5):
            posted = await shop.post(f"/threads/{thread}/messages", json={"content": f"m{i}"})
            assert posted.status_code == 200, posted.text
        alice = api.client(await api.key_for("alice"))
        assert (await alice.post(f"/threads/{thread}/messages", json={"content": "thanks"})).status_code == 200
        added = await shop.post(f"/threads/{thread}/actors", json={"id": "bob"})  # the actors change: all look
        assert added.status_code in (200, 201), added.text
        assert (await shop.post(f"/threads/{thread}/messages", json={"content": "hi bob"})).status_code == 200

        async def delivered() -> None:
            while received["bob"].count("thread.message.created") < 1 or len(received["alice"]) < 8:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(delivered(), 10)
        await asyncio.sleep(0.1)
    finally:
        for task in followers:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*followers)

    # the members got every event of their thread, in order
    message = "thread.message.created"
    assert received["alice"] == ["thread.created", *[message] * 6, "thread.actor.joined", message]
    assert received["bob"] == ["thread.actor.joined", message]  # from its joining on
    # the idle actors' streams read the store once, for the join, not once per message
    for actor in (f"idle-{i}" for i in range(IDLE)):
        assert reads[actor] - before[actor] <= 1, (actor, reads[actor] - before[actor])
    assert reads["alice"] - before["alice"] >= 2
