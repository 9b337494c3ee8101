"""Presence and activity through the Python client, against a real server.

Specification: `AitpClient.working`/`idle`/`set_activity` say what the caller does in a thread, and
`get_presence` reads whether an actor can be reached (its inbox followed live: an `Agent` running is) and how
soon it replies; an `Agent` shows itself working while its handlers of a message run, then idle (the customer
following the thread sees `working`, the reply, then `idle`), unless made with `show_working=False`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aitp.client import Agent, AitpClient, Incoming, NotFound
from aitp.testing import ServerProcess
from tests.client.test_agent import running, until
from tests.conftest import ADMIN_KEY
from tests.support.live import ws_connect


@pytest.fixture
async def clients(live_server: ServerProcess) -> AsyncIterator[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        admin = await stack.enter_async_context(AitpClient(live_server.base_url, ADMIN_KEY))
        made: dict[str, Any] = {"base_url": live_server.base_url}
        for actor in ("ada", "shop", "eve"):
            key = (await admin.create_key(actor)).key
            made[actor] = await stack.enter_async_context(AitpClient(live_server.base_url, key))
            made[f"{actor}_key"] = key
        yield made


async def frames(socket: Any, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        while len(found) < count:
            frame = json.loads(await socket.recv())
            if "op" not in frame:
                found.append(frame)
    return found


def shown(frame: dict[str, Any]) -> str:
    """An event's type, or an activity's actor and state."""
    if frame["type"] == "thread.activity":
        return f"{frame['data']['actor']} {frame['data']['state']}"
    return str(frame["type"])


async def test_the_client_sets_activity_and_reads_presence(clients: dict[str, Any]) -> None:
    ada, shop, eve = clients["ada"], clients["shop"], clients["eve"]
    thread = await ada.create_thread(actors=["ada", "shop"])

    working = await shop.working(thread.id, expires_in=30)
    assert (working.object, working.thread_id, working.actor, working.state) == (
        "thread.activity",
        thread.id,
        "shop",
        "working",
    )
    assert (await shop.idle(thread.id)).state == "idle"
    with pytest.raises(NotFound):
        await eve.set_activity(thread.id, "working")

    found = await ada.get_presence("shop")
    assert (found.actor, found.reachable, found.via, found.usually_replies_in) == ("shop", False, [], None)
    with pytest.raises(NotFound):
        await eve.get_presence("shop")


async def test_an_agent_shows_itself_working_while_its_handler_runs(clients: dict[str, Any]) -> None:
    ada, shop = clients["ada"], clients["shop"]
    go_on = asyncio.Event()

    def agent(**options: Any) -> Agent:
        made = Agent(shop, **options)

        @made.on_text
        async def answer(incoming: Incoming) -> None:
            await go_on.wait()
            await incoming.reply(f"Here you are, {incoming.text}")

        return made

    async def reachable() -> bool:
        return (await ada.get_presence("shop")).reachable

    async def unreachable() -> bool:
        return not await reachable()

    thread = await ada.create_thread(actors=["ada", "shop"])
    params = {"after": 1, "activity": "true"}
    path = f"/threads/{thread.id}/events/ws"
    async with ws_connect(clients["base_url"], path, clients["ada_key"], params=params) as ws:
        async with running(agent()):
            await until(reachable)  # the agent follows its inbox
            await ada.create_message(thread.id, "red")
            assert [shown(f) for f in await frames(ws, 2)] == ["thread.message.created", "shop working"]
            go_on.set()
            # the reply ends it (the idle the agent says next shows nothing more)
            assert [shown(f) for f in await frames(ws, 2)] == ["thread.message.created", "shop idle"]
        await until(unreachable)  # its last stream closed

        async with running(agent(show_working=False)):
            await ada.create_message(thread.id, "blue")
            found = await frames(ws, 2)
            assert [shown(f) for f in found] == ["thread.message.created", "thread.message.created"]
            assert found[1]["data"]["content"][0]["text"]["value"] == "Here you are, blue"
