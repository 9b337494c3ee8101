"""Addressing: a message names the actors it is for in `metadata.to` (an array, a JSON string of one, or one
actor id), every one a member; it is kept as a JSON array string. Two inbox agents that answer everything
stop at the thread's turn budget, and a person's message sets them going again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import httpx

from aitp.client import Agent, AitpClient, Incoming
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API
from tests.support.live import ws_connect


async def _thread(api: API) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    root, shop = await api.actor("root.near"), await api.actor("shop.near")
    await api.known("pay.near")
    thread = (await root.post("/threads", json={"actors": [{"id": "shop.near"}, {"id": "pay.near"}]})).json()
    return root, shop, thread["id"]


async def test_a_message_names_its_recipients_in_any_of_three_forms(api: API) -> None:
    root, shop, tid = await _thread(api)
    for to in (["shop.near", "pay.near", "shop.near"], '["shop.near", "pay.near"]'):
        message = await root.post(f"/threads/{tid}/messages", json={"content": "hi", "metadata": {"to": to}})
        assert message.status_code == 200, message.text
        assert message.json()["metadata"] == {"actor": "root.near", "to": '["shop.near","pay.near"]'}
    one = await shop.post(f"/threads/{tid}/messages", json={"content": "hi", "metadata": {"to": "root.near"}})
    assert one.json()["metadata"]["to"] == '["root.near"]'
    read = (await shop.get(f"/threads/{tid}/messages/{one.json()['id']}")).json()
    assert json.loads(read["metadata"]["to"]) == ["root.near"]


async def test_bad_recipients_are_refused_naming_the_field(api: API) -> None:
    root, _, tid = await _thread(api)
    cases = [
        ({"to": "stranger.near"}, "metadata.to[0]", "actor_not_member"),
        ({"to": ["shop.near", "stranger.near"]}, "metadata.to[1]", "actor_not_member"),
        ({"to": []}, "metadata.to", "invalid_type"),
        ({"to": 5}, "metadata.to", "invalid_type"),
        ({"to": "[not json"}, "metadata.to", None),
        ({"to": ["shop.near", 3]}, "metadata.to[1]", "invalid_type"),
        ({"to": [f"a{i}" for i in range(17)]}, "metadata.to", None),
    ]
    for metadata, param, code in cases:
        response = await root.post(f"/threads/{tid}/messages", json={"content": "x", "metadata": metadata})
        assert response.status_code == 400, (metadata, response.text)
        error = response.json()["error"]
        assert error["param"] == param, metadata
        if code is not None:
            assert error["code"] == code, metadata
    batch = await root.post(
        "/threads", json={"actors": [{"id": "shop.near"}], "messages": [{"content": "x", "metadata": {"to": "nobody"}}]}
    )
    assert batch.status_code == 400
    assert batch.json()["error"]["param"] == "messages[0].metadata.to[0]"


async def test_a_websocket_post_names_its_recipients_too(live_server: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1", headers=headers) as admin:
        for actor in ("shop.near",):
            await admin.put(f"/actors/{actor}/contact_policy", json={"policy": "anyone"})
        thread_id = (await admin.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()["id"]
        async with ws_connect(live_server.base_url, f"/threads/{thread_id}/events/ws", ADMIN_KEY) as socket:
            message = {"content": "for the shop", "metadata": {"to": ["shop.near"]}}
            await socket.send(json.dumps({"op": "post", "ref": 1, "message": message}))
            while (reply := json.loads(await socket.recv())).get("ref") != 1:
                pass
    assert reply["op"] == "posted", reply
    assert reply["message"]["metadata"]["to"] == '["shop.near"]'


async def _key(admin: httpx.AsyncClient, actor: str) -> str:
    response = await admin.post("/keys", json={"actor": actor})
    assert response.status_code == 200, response.text
    return str(response.json()["key"])


def _chatty(client: AitpClient, name: str, answered: list[str]) -> Agent:
    """An agent that answers every message it is shown, whoever wrote it."""
    agent = Agent(client)

    @agent.on_text
    async def answer(incoming: Incoming) -> None:
        answered.append(name)
        await incoming.reply(f"{name} heard: {incoming.text[:40]}")

    return agent


async def test_two_inbox_agents_that_answer_everything_stop_at_the_budget(
    serve_store: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = serve_store(
        f"sqlite:///{tmp_path / 'turns.db'}",
        AITP_ADMIN_KEY=ADMIN_KEY,
        AITP_CONTACT_POLICY="anyone",
        AITP_TURN_BUDGET="6",
    )
    base = server.base_url
    async with httpx.AsyncClient(base_url=base + "/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as admin:
        keys = {actor: await _key(admin, actor) for actor in ("root.near", "echo-a", "echo-b")}
    root = AitpClient(base, keys["root.near"])
    answered: list[str] = []
    agents = [_chatty(AitpClient(base, keys[n]), n, answered) for n in ("echo-a", "echo-b")]
    runs = [asyncio.create_task(agent.run()) for agent in agents]
    try:
        await asyncio.sleep(0.5)  # both inboxes open
        thread = await root.create_thread(actors=[{"id": "echo-a"}, {"id": "echo-b"}])
        await root.create_message(thread.id, "hello, both")
        async with asyncio.timeout(30):
            while not (await root.get_thread(thread.id)).turns.paused:
                await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # what the agents still try is refused
        messages = await root.list_messages(thread.id, limit=100)
        assert sum(m.metadata.get("actor") != "root.near" for m in messages.data) == 6
        before = len(answered)

        await root.create_message(thread.id, "once more")
        async with asyncio.timeout(30):
            while len((await root.list_messages(thread.id, limit=100)).data) < 14:
                await asyncio.sleep(0.1)
        assert len(answered) > before
        assert (await root.get_thread(thread.id)).turns.paused is True  # six more turns, then paused again
    finally:
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        for client in (root, *(agent.client for agent in agents)):
            await client.aclose()
