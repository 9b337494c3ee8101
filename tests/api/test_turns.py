"""Turns: agents may post a budget of messages in a row with no message from a person; the message that uses
the last turn pauses the thread, a person's message resumes it; the creator sets the budget and marks persons;
each agent has a rate per thread."""

from __future__ import annotations

import httpx

from tests.conftest import API


async def _thread(api: API, budget: int = 4) -> tuple[httpx.AsyncClient, httpx.AsyncClient, httpx.AsyncClient, str]:
    """root.near's thread with two agents, shop.near and pay.near, under a deployment budget of `budget`."""
    api.settings_override(turn_budget=budget, agent_messages_per_minute=0)
    root, shop, pay = await api.actor("root.near"), await api.actor("shop.near"), await api.actor("pay.near")
    thread = (await root.post("/threads", json={"actors": [{"id": "shop.near"}, {"id": "pay.near"}]})).json()
    return root, shop, pay, thread["id"]


async def _post(client: httpx.AsyncClient, thread_id: str, text: str) -> httpx.Response:
    return await client.post(f"/threads/{thread_id}/messages", json={"content": text})


async def _types(client: httpx.AsyncClient, thread_id: str, after: int = 0) -> list[str]:
    events = (await client.get(f"/threads/{thread_id}/events", params={"after": after})).json()["data"]
    return [e["type"] for e in events]


async def test_agents_answering_each_other_stop_at_the_budget_and_a_person_resumes_them(api: API) -> None:
    root, shop, pay, tid = await _thread(api, budget=4)
    assert (await _post(root, tid, "hello")).status_code == 200
    for i in range(4):
        agent = shop if i % 2 == 0 else pay
        response = await _post(agent, tid, f"answer {i}")
        assert response.status_code == 200, response.text

    refused = await _post(shop, tid, "answer 4")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "turn_budget_exhausted"
    assert "person" in error["message"] and "turn_budget" in error["message"]

    types = await _types(root, tid)
    assert types[-2:] == ["thread.message.created", "thread.paused"]  # paused right after the last turn
    events = (await root.get(f"/threads/{tid}/events")).json()["data"]
    assert events[-1]["data"] == {"thread_id": tid, "turn_budget": 4, "actor": "pay.near"}
    thread = (await root.get(f"/threads/{tid}")).json()
    assert thread["turns"] == {"budget": None, "persons": [], "agent_turns": 4, "paused": True}
    messages = (await root.get(f"/threads/{tid}/messages", params={"limit": 100})).json()["data"]
    assert len(messages) == 5  # nothing of the refused post was stored

    last = events[-1]["seq"]
    assert (await _post(root, tid, "go on")).status_code == 200
    assert await _types(root, tid, last) == ["thread.resumed", "thread.message.created"]
    assert (await _post(pay, tid, "again")).status_code == 200
    assert (await root.get(f"/threads/{tid}")).json()["turns"]["agent_turns"] == 1


async def test_the_creator_sets_the_budget_and_a_raised_budget_resumes_a_paused_thread(api: API) -> None:
    root, shop, pay, tid = await _thread(api, budget=2)
    for agent in (shop, pay):
        assert (await _post(agent, tid, "x")).status_code == 200
    assert (await _post(shop, tid, "x")).status_code == 429

    for who in (shop, pay):
        denied = await who.post(f"/threads/{tid}", json={"turns": {"budget": 50}})
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "not_thread_creator"

    changed = await root.post(f"/threads/{tid}", json={"turns": {"budget": 3}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["turns"] == {"budget": 3, "persons": [], "agent_turns": 2, "paused": False}
    assert (await _types(root, tid))[-2:] == ["thread.resumed", "thread.updated"]
    assert (await _post(shop, tid, "x")).status_code == 200  # the third turn: paused again
    assert (await root.get(f"/threads/{tid}")).json()["turns"]["paused"] is True

    unlimited = await root.post(f"/threads/{tid}", json={"turns": {"budget": 0}})
    assert unlimited.json()["turns"]["paused"] is False
    for _ in range(5):
        assert (await _post(pay, tid, "x")).status_code == 200
    back = await root.post(f"/threads/{tid}", json={"turns": {"budget": None}})
    assert back.json()["turns"]["budget"] is None  # the deployment's budget (2) applies again: paused
    assert back.json()["turns"]["paused"] is True


async def test_bad_turns_are_refused_naming_the_field(api: API) -> None:
    root, _, _, tid = await _thread(api)
    cases = [
        ({"budget": -1}, "turns.budget"),
        ({"budget": "5"}, "turns.budget"),
        ({"budget": True}, "turns.budget"),
        ({"budget": 10_001}, "turns.budget"),
        ({"persons": "bob"}, "turns.persons"),
        ({"persons": [""]}, "turns.persons"),
        ({"agents": 3}, "turns.agents"),
    ]
    for turns, param in cases:
        response = await root.post(f"/threads/{tid}", json={"turns": turns})
        assert response.status_code == 400, (turns, response.text)
        assert response.json()["error"]["param"] == param, turns


async def test_an_actor_the_creator_marks_as_a_person_speaks_as_user_and_resumes_the_thread(api: API) -> None:
    root, shop, pay, tid = await _thread(api, budget=2)
    bob = await api.actor("bob.near")
    assert (await root.post(f"/threads/{tid}/actors", json={"id": "bob.near"})).status_code == 200
    marked = await root.post(f"/threads/{tid}", json={"turns": {"persons": ["bob.near"]}})
    assert marked.json()["turns"]["persons"] == ["bob.near"]
    roles = {a["id"]: a["role"] for a in marked.json()["actors"]}
    assert roles == {"root.near": "user", "shop.near": "assistant", "pay.near": "assistant", "bob.near": "user"}

    for agent in (shop, pay):
        assert (await _post(agent, tid, "x")).status_code == 200
    assert (await _post(shop, tid, "x")).status_code == 429
    said = await _post(bob, tid, "I am here")
    assert said.json()["role"] == "user"
    assert (await _post(shop, tid, "x")).status_code == 200


async def test_each_agent_has_a_rate_per_thread(api: API) -> None:
    root, shop, pay, tid = await _thread(api, budget=0)
    api.settings_override(agent_messages_per_minute=6, agent_burst=3)
    for _ in range(3):
        assert (await _post(shop, tid, "x")).status_code == 200
    limited = await _post(shop, tid, "x")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "agent_rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert (await _post(pay, tid, "x")).status_code == 200  # another agent's own rate
    for _ in range(5):
        assert (await _post(root, tid, "x")).status_code == 200  # persons are not limited per thread
    other = (await root.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()["id"]
    assert (await _post(shop, other, "x")).status_code == 200  # another thread's own rate


async def test_a_thread_written_before_turns_reads_with_no_turns_used(api: API) -> None:
    root, _, _, tid = await _thread(api)
    thread = (await root.get(f"/threads/{tid}")).json()
    assert thread["turns"] == {"budget": None, "persons": [], "agent_turns": 0, "paused": False}
