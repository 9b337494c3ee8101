"""`aitp.client.Agent` against a real server: the inbox loop with handlers by capability message type.

Specification: an agent declares its capabilities in each thread it joins (keeping what it declared
there); other actors' capability messages reach the handler of their type with the validated payload,
plain text the text handlers, raw events their event handlers; its own messages reach nobody; replies
handle the same event twice without posting twice; a refusal inside a handler is logged and the loop goes
on; `run` starts at the inbox's end, or after the cursor saved in `cursor_file`, and returns when a handler
calls `stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aitp.client import Agent, AitpClient, InboxEvent, Incoming, Message, SchemaDeclaration
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
WAIT = 20  # seconds any single wait may take
REQUEST = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"id": "red"}, {"id": "blue"}]}}


@pytest.fixture
async def clients(live_server: ServerProcess) -> AsyncIterator[dict[str, AitpClient]]:
    """A client per actor, each with a fresh key; the shop, a business, lets anyone bring it into a thread."""
    async with contextlib.AsyncExitStack() as stack:
        admin = await stack.enter_async_context(AitpClient(live_server.base_url, ADMIN_KEY))
        made = {}
        for actor in ("user.near", "shop.near"):
            key = (await admin.create_key(actor)).key
            made[actor] = await stack.enter_async_context(AitpClient(live_server.base_url, key))
        await made["shop.near"].set_contact_policy("anyone")
        yield made


@contextlib.asynccontextmanager
async def running(agent: Agent, after: int | None = None) -> AsyncIterator[asyncio.Task[None]]:
    """`agent.run(after)` as a task, following its inbox once this yields."""
    task = asyncio.create_task(agent.run(after))
    try:
        await until(lambda: agent.cursor is not None)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(ready: Callable[[], bool | Awaitable[bool]]) -> None:
    async def wait() -> None:
        while True:
            result = ready()
            if result if isinstance(result, bool) else await result:
                return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), WAIT)


async def messages_of(client: AitpClient, thread_id: str) -> list[Message]:
    return [m async for m in client.iter_messages(thread_id, order="asc")]


async def test_handlers_get_other_actors_messages_by_type_and_reply(clients: dict[str, AitpClient]) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    await user.create_thread(messages=["before the agent started: not answered"])
    agent = Agent(shop, capabilities=[DECISIONS])
    seen: list[tuple[str, Any]] = []

    @agent.on_text
    async def on_text(incoming: Incoming) -> None:
        seen.append(("text", incoming.text))
        if "socks" in incoming.text:
            await incoming.reply(["Which colour?", REQUEST])

    @agent.on("decision")
    async def on_decision(incoming: Incoming) -> None:
        assert incoming.part is not None and (incoming.part.capability, incoming.part.version) == (
            "aitp-02-decisions",
            "1.0.0",
        )
        asked = await incoming.find("request_decision", sender=agent.actor, id=incoming.payload["request_decision_id"])
        assert asked is not None and asked.payload == REQUEST["request_decision"]
        seen.append((incoming.sender, incoming.payload["options"]))
        await incoming.reply(f"{incoming.payload['options'][0]['id']} it is.")

    async with running(agent):
        thread = await user.create_thread(
            actors=[{"id": "user.near", "capabilities": [DECISIONS]}, "shop.near"], messages=["I want socks"]
        )
        await until(lambda: len(seen) == 1)
        await until(lambda: _count(user, thread.id, 2))
        decision = {"request_decision_id": "r1", "options": [{"id": "blue"}]}
        await user.create_message(thread.id, ["Blue, please", {"$schema": DECISIONS, "decision": decision}])
        await until(lambda: _count(user, thread.id, 4))

    # capability handlers first, then text handlers
    assert seen == [("text", "I want socks"), ("user.near", [{"id": "blue"}]), ("text", "Blue, please")]
    messages = await messages_of(user, thread.id)
    assert [(m.metadata["actor"], len(m.content)) for m in messages] == [
        ("user.near", 1),
        ("shop.near", 2),
        ("user.near", 2),
        ("shop.near", 1),
    ]
    shop_actor = next(a for a in await user.list_actors(thread.id) if a.id == "shop.near")
    assert shop_actor.capabilities == [SchemaDeclaration(schema=DECISIONS)]  # declared on joining


async def _count(client: AitpClient, thread_id: str, n: int) -> bool:
    return len(await messages_of(client, thread_id)) >= n


async def test_joining_adds_missing_declarations_to_the_agents_own(clients: dict[str, AitpClient]) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    agent = Agent(shop, capabilities=[DECISIONS, PAYMENTS])
    async with running(agent):
        thread = await user.create_thread(actors=[{"id": "shop.near", "capabilities": [PAYMENTS]}])
        declared = [SchemaDeclaration(schema=PAYMENTS), SchemaDeclaration(schema=DECISIONS)]

        async def shop_declares() -> bool:
            return [a.capabilities for a in await user.list_actors(thread.id) if a.id == "shop.near"] == [declared]

        await until(shop_declares)


async def test_handling_an_event_again_posts_no_second_reply(clients: dict[str, AitpClient]) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    agent = Agent(shop)

    @agent.on_text
    async def echo(incoming: Incoming) -> None:
        await incoming.reply(f"You said: {incoming.text}")
        await incoming.reply("And that is all.")

    thread = await user.create_thread(actors=["shop.near"], messages=["hi"])
    [event] = [e for e in (await shop.list_inbox()).data if e.type == "thread.message.created"]
    await agent.handle(event)
    await agent.handle(event)  # e.g. after a crash before its cursor was saved

    assert [m.content[0].text.value for m in await messages_of(user, thread.id)] == [  # type: ignore[union-attr]
        "hi",
        "You said: hi",
        "And that is all.",
    ]


async def test_run_resumes_after_the_saved_cursor(clients: dict[str, AitpClient], tmp_path: Path) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    cursor_file = tmp_path / "shop.cursor"
    heard: list[str] = []

    def agent() -> Agent:
        made = Agent(shop, cursor_file=cursor_file)

        @made.on_text
        async def hear(incoming: Incoming) -> None:
            heard.append(incoming.text)

        return made

    thread = await user.create_thread(actors=["shop.near"], messages=["before: skipped"])
    first = agent()
    async with running(first):
        await user.create_message(thread.id, "one")
        await until(lambda: heard == ["one"])
    saved = int(cursor_file.read_text())
    assert saved == first.cursor

    await user.create_message(thread.id, "two, while the agent was down")
    async with running(agent()):
        await user.create_message(thread.id, "three")
        await until(lambda: len(heard) == 3)
    assert heard == ["one", "two, while the agent was down", "three"]
    assert int(cursor_file.read_text()) > saved


async def test_a_refusal_in_a_handler_is_logged_and_the_loop_goes_on(
    clients: dict[str, AitpClient], caplog: pytest.LogCaptureFixture
) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    agent = Agent(shop)
    refusals: list[InboxEvent] = []

    @agent.on_text
    async def offer(incoming: Incoming) -> None:
        await incoming.reply(REQUEST)  # the user reads no decisions: 422, and the thread logs the refusal

    @agent.on_event("thread.message.refused")
    async def refused(event: InboxEvent) -> None:
        refusals.append(event)

    caplog.set_level(logging.WARNING, logger="aitp.agent")
    async with running(agent):
        thread = await user.create_thread(actors=[{"id": "shop.near", "capabilities": [DECISIONS]}])
        await user.create_message(thread.id, "first")
        await user.create_message(thread.id, "second")
        await until(lambda: len(refusals) == 2)
        await until(lambda: caplog.text.count("capability_not_supported") == 2)

    assert [e.data["unsupported_by"] for e in refusals] == [["user.near"], ["user.near"]]


async def test_a_handler_stops_the_agent_when_its_task_is_done(clients: dict[str, AitpClient]) -> None:
    user, shop = clients["user.near"], clients["shop.near"]
    agent = Agent(shop)
    stamps: list[str] = []

    @agent.on_text
    async def once(incoming: Incoming) -> None:
        stamps.append(incoming.timestamp(timedelta(hours=1)))
        agent.stop()

    start = (await shop.me()).inbox_cursor
    thread = await user.create_thread(actors=["shop.near"], messages=["one", "two"])
    await asyncio.wait_for(agent.run(after=start), WAIT)  # returns after the first message

    [first, _] = await messages_of(user, thread.id)
    created = datetime.fromtimestamp(first.created_at, UTC)
    assert stamps == [(created + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")]
    assert agent.cursor is not None and agent.cursor < (await shop.me()).inbox_cursor  # "two" is still ahead
