"""Webhooks that carry a message only when it asks their actor for work, end to end on every backend:
endpoints registered and changed through the API, messages posted through it, deliveries received by real
local HTTP receivers from the service's own delivery engine.

Specification: an endpoint's `messages` is `all` (the default: every `thread.message.created` event, its
actor's own included) or `addressed`: only messages that name its actor in `metadata.to`, or name no one and
were written by a person (role `user`); other agents' unaddressed messages, messages naming someone else and
its actor's own are passed over (no delivery, the cursor moves on). Other event types are unaffected. It is
shown on read, settable on create and update, and any other value is 400 naming `messages`.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from aitp.store import Store
from tests.deliveries.test_webhooks import MESSAGE, deliveries, new_thread, recorded, register, service
from tests.support.receiver import Receiver, receiving

UPDATED = "thread.updated"


def text_of(event: dict[str, Any]) -> str:
    value: str = event["data"]["content"][0]["text"]["value"]
    return value


def texts(receiver: Receiver) -> list[str]:
    return [text_of(r.event) for r in receiver.delivered if r.event["type"] == MESSAGE]


async def say(client: httpx.AsyncClient, thread_id: str, text: str, *to: str) -> dict[str, Any]:
    """Post `text`, addressed to `to` when given (`metadata.to`, a JSON array string as OpenAI SDKs send it)."""
    body: dict[str, Any] = {"content": text}
    if to:
        body["metadata"] = {"to": orjson.dumps(list(to)).decode()}
    response = await client.post(f"/threads/{thread_id}/messages", json=body)
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()
    return message


async def test_an_addressed_endpoint_gets_what_asks_its_actor_and_an_all_endpoint_everything(store: Store) -> None:
    async with (
        receiving() as asked,
        receiving() as everything,
        service(store, asked.url, everything.url) as api,
    ):
        alice = await api.actor("alice")
        await api.known("bot1", "bot2", "carol")
        bot1, bot2 = await api.actor("bot1"), await api.actor("bot2")
        thread_id = await new_thread(alice, "alice", "bot1", "bot2", "carol")
        addressed = await register(bot1, asked.url, event_types=[MESSAGE, UPDATED], messages="addressed")
        everyone = await register(bot1, everything.url, event_types=[MESSAGE, UPDATED])
        assert (addressed["messages"], everyone["messages"]) == ("addressed", "all")
        assert (await bot1.get(f"/webhooks/{addressed['id']}")).json()["messages"] == "addressed"
        listed = {h["id"]: h["messages"] for h in (await bot1.get("/webhooks")).json()["data"]}
        assert listed == {addressed["id"]: "addressed", everyone["id"]: "all"}

        assert (await say(bot2, thread_id, "agent chatter"))["role"] == "assistant"
        await say(bot2, thread_id, "for carol", "carol")
        await say(bot1, thread_id, "bot1's own")
        await say(bot2, thread_id, "for bot1", "bot1")
        await say(bot2, thread_id, "for carol and bot1", "carol", "bot1")
        renamed = await alice.post(f"/threads/{thread_id}", json={"metadata": {"topic": "plans"}})
        assert renamed.status_code == 200, renamed.text
        assert (await say(alice, thread_id, "from the person"))["role"] == "user"
        await say(alice, thread_id, "the person to carol", "carol")
        await say(bot2, thread_id, "last, for bot1", "bot1")

        # one thread: its events arrive in order, so once the last is in, every earlier one was derived
        await asked.wait_for(lambda r: "last, for bot1" in texts(r))
        await everything.wait_for(lambda r: "last, for bot1" in texts(r))
        assert texts(asked) == ["for bot1", "for carol and bot1", "from the person", "last, for bot1"]
        assert texts(everything) == [
            "agent chatter",
            "for carol",
            "bot1's own",
            "for bot1",
            "for carol and bot1",
            "from the person",
            "the person to carol",
            "last, for bot1",
        ]
        # other event types are unaffected
        assert [r.event["type"] for r in asked.delivered].count(UPDATED) == 1
        assert [r.event["type"] for r in everything.delivered].count(UPDATED) == 1
        # what was passed over never became a delivery
        assert len(await deliveries(bot1, addressed["id"])) == 5
        assert len(await deliveries(bot1, everyone["id"])) == 9


async def test_any_other_value_is_400_naming_messages(store: Store) -> None:
    async with service(store, "http://127.0.0.1:9/") as api:
        alice = await api.actor("alice")
        for value in ("none", "ADDRESSED", "all_from_others", None, 1, ["all"]):
            refused = await alice.post("/webhooks", json={"url": "http://127.0.0.1:9/a", "messages": value})
            assert (refused.status_code, refused.json()["error"]["param"]) == (400, "messages"), value
        hook = await register(alice, "http://127.0.0.1:9/a")
        assert hook["messages"] == "all"
        for value in ("some", None, True):
            refused = await alice.patch(f"/webhooks/{hook['id']}", json={"messages": value})
            assert (refused.status_code, refused.json()["error"]["param"]) == (400, "messages"), value
        assert (await alice.get(f"/webhooks/{hook['id']}")).json()["messages"] == "all"
        assert len((await alice.get("/webhooks")).json()["data"]) == 1  # nothing registered by a refusal


async def test_an_update_switches_what_an_endpoint_takes(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        await api.known("bot1", "bot2")
        bot1, bot2 = await api.actor("bot1"), await api.actor("bot2")
        thread_id = await new_thread(alice, "alice", "bot1", "bot2")
        hook = await register(bot1, receiver.url, event_types=[MESSAGE])

        await say(bot2, thread_id, "chatter while all")
        # an endpoint is read once per pass of the engine over the log: each change is made once the pass that
        # delivered the message before it is over (its outcome recorded)
        await recorded(bot1, hook["id"], "succeeded", 1)

        switched = await bot1.patch(f"/webhooks/{hook['id']}", json={"messages": "addressed"})
        assert (switched.status_code, switched.json()["messages"]) == (200, "addressed")
        assert switched.json()["event_types"] == [MESSAGE]  # what was not given stays
        await say(bot2, thread_id, "chatter while addressed")
        await say(bot2, thread_id, "for bot1 while addressed", "bot1")
        await recorded(bot1, hook["id"], "succeeded", 2)

        back = await bot1.patch(f"/webhooks/{hook['id']}", json={"messages": "all"})
        assert (back.status_code, back.json()["messages"]) == (200, "all")
        await say(bot2, thread_id, "chatter while all again")
        await recorded(bot1, hook["id"], "succeeded", 3)
        assert texts(receiver) == ["chatter while all", "for bot1 while addressed", "chatter while all again"]
