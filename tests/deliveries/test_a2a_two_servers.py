"""Two aitp servers talking over A2A, on every backend: server A's thread has an actor whose A2A settings
point at the Agent Card server B serves for that actor, with a key of server B as the bearer credential
B's card asks for; on B an AITP agent (the Python client's `Agent`, on its inbox) answers as that actor.

Specification (issue 27): a person's message in A's thread reaches B's agent and its answer comes back into
A's thread as the actor; when B's agent asks (request_decision: B's task is input-required), the person's
answer in A's thread continues the same task on B, and B's agent's last word comes back too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from aitp.client import Agent, AitpClient, Incoming
from aitp.services.a2a_fold import TASK, parse_task_id
from aitp.store import Store, open_store
from tests.bindings.test_a2a import Service, service
from tests.conftest import REAL_MONGODB_URI, Backend, _with_database

DECISIONS = "https://aitp.dev/v1/decisions/schema.json"
EXAMPLES = Path(__file__).parents[2] / "capabilities" / "aitp-02-decisions" / "1.0.0" / "examples"


@pytest.fixture
async def store_b(backend: Backend, tmp_path: Path) -> AsyncIterator[Store]:
    """Server B's own store, on the test's backend beside server A's (`store`)."""
    if backend.name == "sqlite":
        url = f"sqlite:///{tmp_path / 'b.db'}"
    else:
        url = _with_database(backend.url, f"aitp_test_b_{uuid.uuid4().hex[:12]}")
    store = open_store(url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
        if REAL_MONGODB_URI and backend.name != "sqlite":
            from pymongo import MongoClient

            with MongoClient(REAL_MONGODB_URI) as client:
                client.drop_database(url.rsplit("/", 1)[-1].split("?")[0])


@asynccontextmanager
async def shop_on_b(b: Service) -> AsyncIterator[Agent]:
    """B's actor `shop`, served over A2A and answered by an AITP agent: text is greeted, "headphones" asks
    which ones (request_decision), a decision is confirmed."""
    assert (await b.a2a_settings("shop", serve=True, capabilities=[DECISIONS])).status_code == 200
    request = json.loads((EXAMPLES / "request_decision_products.json").read_text())
    async with AitpClient(base_url=b.base, api_key=await b.key("shop")) as client:
        agent = Agent(client, capabilities=[DECISIONS])

        @agent.on_text
        async def talk(incoming: Incoming) -> None:
            if "headphones" in incoming.text:
                await incoming.reply([json.dumps(request)])
            else:
                await incoming.reply(f"shop on B: {incoming.text}")

        @agent.on("decision")
        async def chosen(incoming: Incoming) -> None:
            await incoming.reply(f"ordered {incoming.payload['options'][0]['id']}")

        running = asyncio.create_task(agent.run())
        await asyncio.sleep(0.2)  # its inbox stream is open
        try:
            yield agent
        finally:
            agent.stop()
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running


async def messages_when(client: AitpClient, thread_id: str, count: int) -> list[dict[str, object]]:
    """The thread's messages (actor, text) once it holds `count`."""
    async with asyncio.timeout(20):
        while len((listed := await client.list_messages(thread_id, order="asc", limit=100)).data) < count:
            await asyncio.sleep(0.05)
    return [{"actor": m.metadata["actor"], "text": m.content[0].text.value} for m in listed.data]


async def test_a_person_on_server_a_talks_with_an_agent_on_server_b(store: Store, store_b: Store) -> None:
    async with service(store_b) as b, shop_on_b(b):
        card_url = f"{b.base}/a2a/shop/.well-known/agent-card.json"
        key_on_b = await b.key("server-a")  # who server A is on B: B's tasks are between it and shop
        async with service(store, webhook_allow=(b.base + "/",)) as a:
            settings = await a.a2a_settings("shop", agent_card_url=card_url, credentials={"bearer": key_on_b})
            assert settings.status_code == 200, settings.text
            assert settings.json()["credentials"] == {"bearer": "set"} and key_on_b not in settings.text
            async with AitpClient(base_url=a.base, api_key=await a.key("alice")) as alice:
                thread = await alice.create_thread(
                    actors=[{"id": "alice", "capabilities": [DECISIONS]}, {"id": "shop", "capabilities": [DECISIONS]}]
                )
                await alice.create_message(thread.id, content="hello")
                assert (await messages_when(alice, thread.id, 2))[1] == {"actor": "shop", "text": "shop on B: hello"}

                # B's agent asks: its task on B waits for input, and A remembers it for this thread
                await alice.create_message(thread.id, content="headphones?")
                asked = (await messages_when(alice, thread.id, 4))[3]
                question = json.loads(str(asked["text"]))
                assert asked["actor"] == "shop" and "request_decision" in question
                waiting = await store.a2a.remote_task("shop", thread.id)
                assert waiting is not None and waiting.task_id and waiting.context_id == thread.id

                choice = {
                    "$schema": DECISIONS,
                    "decision": {
                        "request_decision_id": question["request_decision"]["id"],
                        "options": [{"id": question["request_decision"]["options"][0]["id"]}],
                    },
                }
                await alice.create_message(thread.id, content=[json.dumps(choice)])
                last = (await messages_when(alice, thread.id, 6))[5]
                assert last == {"actor": "shop", "text": f"ordered {choice['decision']['options'][0]['id']}"}
                ended = await store.a2a.remote_task("shop", thread.id)
                assert ended is not None and ended.task_id is None and ended.context_id == thread.id

        # on B: one thread between server-a and shop (the context A gave), where the decision continued the
        # very task the question was asked in
        b_thread, _ = parse_task_id(waiting.task_id)
        headers = {"Authorization": f"Bearer {key_on_b}"}
        async with httpx.AsyncClient(base_url=b.base, headers=headers) as as_a:
            on_b = (await as_a.get(f"/v1/threads/{b_thread}/messages", params={"order": "asc"})).json()["data"]
    assert [m["metadata"]["actor"] for m in on_b] == ["server-a", "shop"] * 3
    decision = on_b[4]
    assert decision["metadata"][TASK] == waiting.task_id
    assert parse_task_id(waiting.task_id)[1] == on_b[2]["id"]  # the task "headphones?" opened
