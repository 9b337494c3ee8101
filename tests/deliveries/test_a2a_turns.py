"""Two remote A2A agents that answer everything (reply policy `all`) in one thread answer each other until the
thread's turn budget is used; the thread shows paused; a person's message sets them going again, for one
more budget."""

from __future__ import annotations

import asyncio

from aitp.client import AitpClient
from aitp.store import Store
from tests.conftest import Backend
from tests.deliveries.test_a2a_outbound import Parrot, allow, sdk_agent, service

BUDGET = 6


async def _agents_messages(client: AitpClient, thread_id: str) -> int:
    listed = await client.list_messages(thread_id, limit=100)
    return sum(m.metadata.get("actor") in ("one", "two") for m in listed.data)


async def _paused(client: AitpClient, thread_id: str) -> None:
    async with asyncio.timeout(30):
        while not (await client.get_thread(thread_id)).turns.paused:
            await asyncio.sleep(0.05)


async def test_two_agents_that_answer_everything_stop_at_the_turn_budget(store: Store, backend: Backend) -> None:
    backend.require_isolated_transactions()  # both answer at once: the count is only as atomic as the store
    one, two = Parrot("one"), Parrot("two")
    async with sdk_agent(one) as (url_one, _), sdk_agent(two) as (url_two, _):
        allowed = (*allow(url_one), *allow(url_two))
        async with service(store, webhook_allow=allowed, turn_budget=BUDGET) as svc:
            for actor, url in (("one", url_one), ("two", url_two)):
                settings = await svc.a2a_settings(actor, agent_card_url=url, reply_policy="all")
                assert settings.status_code == 200, settings.text
            async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "one"}, {"id": "two"}])
                await alice.create_message(thread.id, content="hello")
                await _paused(alice, thread.id)
                await asyncio.sleep(0.5)  # what they still send is refused: nothing more is stored
                assert await _agents_messages(alice, thread.id) == BUDGET
                heard = len(one.heard) + len(two.heard)
                events = (await alice.list_events(thread.id)).data
                assert [e.type for e in events].count("thread.paused") == 1

                await alice.create_message(thread.id, content="once more")
                async with asyncio.timeout(30):
                    while await _agents_messages(alice, thread.id) < 2 * BUDGET:
                        await asyncio.sleep(0.05)
                await _paused(alice, thread.id)
                assert len(one.heard) + len(two.heard) > heard
                assert await _agents_messages(alice, thread.id) == 2 * BUDGET
