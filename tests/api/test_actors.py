"""Membership: members bring actors in, actors update themselves, leave, or are removed by the creator."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import API, Backend
from tests.support.sqlite_lock import write_lock_held

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"


async def test_a_member_adds_an_actor_who_can_then_read_and_write(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    thread_id = (await root.post("/threads", json={})).json()["id"]
    assert (await shop.get(f"/threads/{thread_id}")).status_code == 404
    added = await root.post(f"/threads/{thread_id}/actors", json={"id": "shop.near", "capabilities": [DECISIONS]})
    assert added.status_code == 200, added.text
    assert added.json()["role"] == "assistant"
    assert added.json()["capabilities"] == [{"schema": DECISIONS}]
    assert (await shop.get(f"/threads/{thread_id}")).status_code == 200
    assert (await shop.post(f"/threads/{thread_id}/messages", json={"content": "hi"})).status_code == 200
    listed = (await shop.get(f"/threads/{thread_id}/actors")).json()
    assert [a["id"] for a in listed["data"]] == ["root.near", "shop.near"]


async def test_an_actor_updates_its_own_capabilities_only(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    thread_id = (await root.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()["id"]
    joined_at = (await shop.get(f"/threads/{thread_id}/actors")).json()["data"][1]["joined_at"]
    updated = await shop.post(f"/threads/{thread_id}/actors", json={"id": "shop.near", "capabilities": [DECISIONS]})
    assert updated.status_code == 200
    assert updated.json()["capabilities"] == [{"schema": DECISIONS}]
    assert updated.json()["joined_at"] == joined_at
    refused = await root.post(f"/threads/{thread_id}/actors", json={"id": "shop.near", "capabilities": []})
    assert refused.status_code == 403
    events = (await root.get(f"/threads/{thread_id}/events")).json()["data"]
    # Declaring a capability changes the thread's negotiation table: an event in the same write.
    assert [e["type"] for e in events] == ["thread.created", "thread.actor.updated", "thread.capabilities.updated"]


async def test_leaving_and_removal_rules(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    pay = await api.actor("pay.near")
    thread_id = (await root.post("/threads", json={"actors": [{"id": "shop.near"}, {"id": "pay.near"}]})).json()["id"]
    # A non-creator may not remove someone else.
    assert (await shop.delete(f"/threads/{thread_id}/actors/pay.near")).status_code == 403
    # An actor may leave by itself; then the thread is invisible to it.
    left = await shop.delete(f"/threads/{thread_id}/actors/shop.near")
    assert left.json() == {"id": "shop.near", "object": "thread.actor.deleted", "deleted": True}
    assert (await shop.get(f"/threads/{thread_id}")).status_code == 404
    # The creator may remove anyone.
    assert (await root.delete(f"/threads/{thread_id}/actors/pay.near")).status_code == 200
    missing = await root.delete(f"/threads/{thread_id}/actors/pay.near")
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "actor_id"
    assert (await pay.post(f"/threads/{thread_id}/messages", json={"content": "x"})).status_code == 404


async def test_actor_ids_with_slashes_work_in_paths(api: API) -> None:
    root = await api.actor("root.near")
    agent = "hub.near.ai/travel-agent/0.1.0"
    await api.known(agent)
    thread_id = (await root.post("/threads", json={"actors": [{"id": agent}]})).json()["id"]
    assert (await root.delete(f"/threads/{thread_id}/actors/{agent}")).status_code == 200
    assert [a["id"] for a in (await root.get(f"/threads/{thread_id}/actors")).json()["data"]] == ["root.near"]


async def test_actor_input_is_validated(api: API) -> None:
    root = await api.actor("root.near")
    thread_id = (await root.post("/threads", json={})).json()["id"]
    cases = [
        ({}, "id"),
        ({"id": ""}, "id"),
        ({"id": "a", "capabilities": [1]}, "capabilities[0]"),
        ({"id": "a", "x": 1}, "x"),
    ]
    for body, param in cases:
        response = await root.post(f"/threads/{thread_id}/actors", json=body)
        assert response.status_code == 400, body
        assert response.json()["error"]["param"] == param, (body, response.json())


async def test_a_post_right_after_a_membership_change_sees_it(api: API) -> None:
    # posting reuses the thread's actors read by earlier posts: every change to them must be seen at once
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    pay = await api.actor("pay.near")
    thread_id = (await root.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()["id"]
    decision = {
        "$schema": DECISIONS,
        "request_decision": {"id": "r1", "type": "radio", "title": "Pick", "options": [{"id": "a", "title": "A"}]},
    }
    assert (await shop.post(f"/threads/{thread_id}/messages", json={"content": "hi"})).status_code == 200
    assert (await pay.post(f"/threads/{thread_id}/messages", json={"content": "x"})).status_code == 404
    assert (await root.post(f"/threads/{thread_id}/actors", json={"id": "pay.near"})).status_code == 200
    assert (await pay.post(f"/threads/{thread_id}/messages", json={"content": "joined"})).status_code == 200
    assert (await root.delete(f"/threads/{thread_id}/actors/pay.near")).status_code == 200
    assert (await pay.post(f"/threads/{thread_id}/messages", json={"content": "gone"})).status_code == 404
    # capabilities too: nobody declared decisions, then everybody did
    refused = await shop.post(f"/threads/{thread_id}/messages", json={"content": [json.dumps(decision)]})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "capability_not_supported"
    for actor, client in (("root.near", root), ("shop.near", shop)):
        declared = await client.post(f"/threads/{thread_id}/actors", json={"id": actor, "capabilities": [DECISIONS]})
        assert declared.status_code == 200, declared.text
    accepted = await shop.post(f"/threads/{thread_id}/messages", json={"content": [json.dumps(decision)]})
    assert accepted.status_code == 200, accepted.text
    assert (await root.delete(f"/threads/{thread_id}")).status_code == 200
    assert (await shop.post(f"/threads/{thread_id}/messages", json={"content": "after"})).status_code == 404


async def test_concurrent_joins_stop_at_max_actors(api: API, backend: Backend, request: pytest.FixtureRequest) -> None:
    """The limit holds under concurrency: the store counts the actors in the join's own transaction."""
    backend.require_isolated_transactions()
    api.settings_override(max_actors=4)
    root = await api.actor("root.near")
    thread_id = (await root.post("/threads", json={})).json()["id"]
    await api.known(*(f"agent-{i}.near" for i in range(20)), "late.near", "later.near")
    joins = [root.post(f"/threads/{thread_id}/actors", json={"id": f"agent-{i}.near"}) for i in range(20)]
    async with write_lock_held(backend):  # on SQLite: every join reads the thread before any can write
        pending = asyncio.gather(*joins)
    responses = await pending
    joined = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code != 200]
    assert len(joined) == 3, [r.text for r in responses]
    for response in refused:
        assert response.status_code == 400, response.text
        assert (response.json()["error"]["code"], response.json()["error"]["param"]) == ("too_many_actors", "id")
    actors = (await root.get(f"/threads/{thread_id}/actors")).json()["data"]
    assert len(actors) == 4
    # at the limit, a member still updates its own declaration; a leave frees a seat
    updated = await root.post(f"/threads/{thread_id}/actors", json={"id": "root.near", "capabilities": [DECISIONS]})
    assert updated.status_code == 200, updated.text
    assert (await root.delete(f"/threads/{thread_id}/actors/{actors[1]['id']}")).status_code == 200
    assert (await root.post(f"/threads/{thread_id}/actors", json={"id": "late.near"})).status_code == 200
    refused_late = await root.post(f"/threads/{thread_id}/actors", json={"id": "later.near"})
    assert refused_late.status_code == 400 and refused_late.json()["error"]["code"] == "too_many_actors"
