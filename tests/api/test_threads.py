"""Threads: OpenAI shape, AITP actors in every accepted form, metadata rules, forks, deletion."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aitp.store import Store
from tests.conftest import API

PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"


async def test_created_thread_is_an_openai_thread_with_aitp_actors(api: API) -> None:
    user = await api.actor("user-agent.near")
    await api.known("travel-agent.near")
    response = await user.post("/threads", json={"actors": [{"id": "travel-agent.near", "capabilities": [PAYMENTS]}]})
    assert response.status_code == 200, response.text
    thread = response.json()
    assert thread["id"].startswith("thread_")
    assert thread["object"] == "thread"
    assert isinstance(thread["created_at"], int)
    assert thread["tool_resources"] is None
    assert thread["parent_id"] is None
    # The creating actor is added (first) and is the thread's `user`.
    assert [(a["id"], a["role"]) for a in thread["actors"]] == [
        ("user-agent.near", "user"),
        ("travel-agent.near", "assistant"),
    ]
    # Metadata values are all strings so typed OpenAI clients parse them; actors are JSON-encoded.
    assert all(isinstance(v, str) for v in thread["metadata"].values())
    assert json.loads(thread["metadata"]["actors"]) == [
        {"id": "user-agent.near", "capabilities": []},
        {"id": "travel-agent.near", "capabilities": [{"schema": PAYMENTS}]},
    ]
    assert "parent_id" not in thread["metadata"]


async def test_t01_path_accepts_actors_as_json_string_in_metadata(api: API) -> None:
    """The AITP examples send metadata.actors as a JSON-encoded string to POST /v1/thread."""
    root = await api.actor("root.near")
    await api.known("hub.near.ai/travel-agent/0.1.0")
    actors = [
        {"id": "root.near", "client_id": "hub-ui", "capabilities": [{"$schema": PAYMENTS}]},
        {"id": "hub.near.ai/travel-agent/0.1.0", "capabilities": [{"$schema": PAYMENTS}]},
    ]
    response = await root.post("/thread", json={"metadata": {"actors": json.dumps(actors), "topic": "trip"}})
    assert response.status_code == 200, response.text
    thread = response.json()
    assert [a["id"] for a in thread["actors"]] == ["root.near", "hub.near.ai/travel-agent/0.1.0"]
    assert thread["actors"][0]["client_id"] == "hub-ui"
    assert thread["metadata"]["topic"] == "trip"


async def test_metadata_actors_may_also_be_an_array(api: API) -> None:
    root = await api.actor("root.near")
    await api.known("shop.near")
    response = await root.post("/threads", json={"metadata": {"actors": [{"id": "shop.near", "capabilities": []}]}})
    assert response.status_code == 200, response.text
    assert [a["id"] for a in response.json()["actors"]] == ["root.near", "shop.near"]


async def test_three_capability_declaration_shapes_are_stored_normalised(api: API) -> None:
    root = await api.actor("root.near")
    declared = [PAYMENTS, {"schema": DECISIONS}, {"$schema": "https://aitp.dev/v1/data/schema.json"}]
    response = await root.post("/threads", json={"actors": [{"id": "root.near", "capabilities": declared}]})
    assert response.status_code == 200, response.text
    assert response.json()["actors"][0]["capabilities"] == [
        {"schema": PAYMENTS},
        {"schema": DECISIONS},
        {"schema": "https://aitp.dev/v1/data/schema.json"},
    ]
    fetched = await root.get(f"/threads/{response.json()['id']}")
    assert fetched.json()["actors"][0]["capabilities"] == response.json()["actors"][0]["capabilities"]


async def test_capability_version_range_declaration_is_kept(api: API) -> None:
    root = await api.actor("root.near")
    declared = {"capability": "aitp-02-decisions", "versions": ">=1.0.0,<3"}
    response = await root.post("/threads", json={"actors": [{"id": "root.near", "capabilities": [declared]}]})
    assert response.status_code == 200, response.text
    assert response.json()["actors"][0]["capabilities"] == [declared]


async def test_bad_capability_declarations_name_the_field(api: API) -> None:
    root = await api.actor("root.near")
    cases = [
        ({"actors": [{"id": "a", "capabilities": [42]}]}, "actors[0].capabilities[0]"),
        ({"actors": [{"id": "a", "capabilities": [{"url": "x"}]}]}, "actors[0].capabilities[0]"),
        ({"actors": [{"id": "a", "capabilities": [{"schema": ""}]}]}, "actors[0].capabilities[0].schema"),
        (
            {"actors": [{"id": "a", "capabilities": [{"capability": "x", "versions": "~~1"}]}]},
            "actors[0].capabilities[0].versions",
        ),
        (
            {"metadata": {"actors": json.dumps([{"id": "a", "capabilities": [7]}])}},
            "metadata.actors[0].capabilities[0]",
        ),
    ]
    for body, param in cases:
        response = await root.post("/threads", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param, body


async def test_actor_input_errors(api: API) -> None:
    root = await api.actor("root.near")
    cases = [
        ({"metadata": {"actors": "[not json"}}, "metadata.actors"),
        ({"metadata": {"actors": json.dumps([{"capabilities": []}])}}, "metadata.actors[0].id"),
        ({"actors": [{"id": "a"}, {"id": "a"}]}, "actors[1].id"),
        ({"actors": [{"id": "a"}], "metadata": {"actors": "[]"}}, "actors"),
        ({"actors": [{"id": "a", "color": "red"}]}, "actors[0].color"),
    ]
    for body, param in cases:
        response = await root.post("/threads", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param, (body, response.json())


async def test_metadata_follows_openai_limits(api: API) -> None:
    root = await api.actor("root.near")
    too_many = {f"k{i}": "v" for i in range(17)}
    cases = [
        ({"metadata": too_many}, "metadata"),
        ({"metadata": {"k" * 65: "v"}}, "metadata." + "k" * 64),
        ({"metadata": {"k": "v" * 513}}, "metadata.k"),
        ({"metadata": {"k": 5}}, "metadata.k"),
    ]
    for body, param in cases:
        response = await root.post("/threads", json=body)
        assert response.status_code == 400, body
        assert response.json()["error"]["param"] == param
    ok = await root.post("/threads", json={"metadata": {f"k{i}": "v" * 512 for i in range(16)}})
    assert ok.status_code == 200, ok.text


async def test_initial_messages_as_strings_and_objects(api: API) -> None:
    root = await api.actor("root.near")
    response = await root.post(
        "/threads",
        json={"messages": ["plan me a trip", {"role": "user", "content": "to NY", "metadata": {"k": "v"}}]},
    )
    assert response.status_code == 200, response.text
    listed = (await root.get(f"/threads/{response.json()['id']}/messages", params={"order": "asc"})).json()
    assert [m["content"][0]["text"]["value"] for m in listed["data"]] == ["plan me a trip", "to NY"]
    assert [m["role"] for m in listed["data"]] == ["user", "user"]
    assert listed["data"][1]["metadata"] == {"k": "v", "actor": "root.near"}


async def test_initial_messages_are_the_creators_whatever_role_they_were_sent_with(api: API) -> None:
    root = await api.actor("root.near")
    response = await root.post("/threads", json={"messages": [{"role": "assistant", "content": "x"}]})
    assert response.status_code == 200, response.text
    listed = (await root.get(f"/threads/{response.json()['id']}/messages")).json()["data"]
    assert [(m["role"], m["metadata"]["actor"]) for m in listed] == [("user", "root.near")]
    refused = await root.post("/threads", json={"messages": [{"role": "system", "content": "x"}]})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "messages[0].role"


async def test_retrieve_by_post_with_empty_body_changes_nothing(api: API) -> None:
    """AITP-T01 retrieves a thread with POST /v1/threads/{id}; no event is written."""
    root = await api.actor("root.near")
    thread = (await root.post("/threads", json={"metadata": {"a": "1"}})).json()
    for body in (None, {}):
        response = (
            await root.post(f"/threads/{thread['id']}", json=body)
            if body is not None
            else await root.post(f"/threads/{thread['id']}")
        )
        assert response.status_code == 200, response.text
        assert response.json() == thread
    events = (await root.get(f"/threads/{thread['id']}/events")).json()["data"]
    assert [e["type"] for e in events] == ["thread.created"]


async def test_modify_replaces_metadata_and_round_trips_reserved_keys(api: API) -> None:
    root = await api.actor("root.near")
    thread = (await root.post("/threads", json={"metadata": {"a": "1", "b": "2"}})).json()
    updated = await root.post(f"/threads/{thread['id']}", json={"metadata": {"c": "3"}})
    assert updated.status_code == 200, updated.text
    assert {k: v for k, v in updated.json()["metadata"].items() if k != "actors"} == {"c": "3"}
    # Sending back what was retrieved (including the server's `actors`) is accepted.
    again = await root.post(f"/threads/{thread['id']}", json={"metadata": {**updated.json()["metadata"], "d": "4"}})
    assert again.status_code == 200, again.text
    assert again.json()["metadata"]["d"] == "4"
    # Changing the server-managed keys through metadata is not.
    refused = await root.post(f"/threads/{thread['id']}", json={"metadata": {"actors": "[]"}})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "metadata.actors"
    events = (await root.get(f"/threads/{thread['id']}/events")).json()["data"]
    assert [e["type"] for e in events] == ["thread.created", "thread.updated", "thread.updated"]
    assert events[-1]["data"] == again.json()


async def test_parent_id_must_name_a_readable_thread(api: API) -> None:
    root = await api.actor("root.near")
    other = await api.actor("other.near")
    parent = (await root.post("/threads", json={})).json()
    child = await root.post("/threads", json={"parent_id": parent["id"]})
    assert child.status_code == 200, child.text
    assert child.json()["parent_id"] == parent["id"]
    assert child.json()["metadata"]["parent_id"] == parent["id"]
    via_metadata = await root.post("/threads", json={"metadata": {"parent_id": parent["id"]}})
    assert via_metadata.json()["parent_id"] == parent["id"]
    for caller, parent_id in ((root, "thread_missing"), (other, parent["id"])):
        response = await caller.post("/threads", json={"parent_id": parent_id})
        assert response.status_code == 404
        assert response.json()["error"]["param"] == "parent_id"
        # given in metadata (AITP-T01), the error names the field the caller sent
        response = await caller.post("/threads", json={"metadata": {"parent_id": parent_id}})
        assert response.status_code == 404
        assert response.json()["error"]["param"] == "metadata.parent_id"


async def test_only_creator_or_admin_deletes_a_thread(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    thread = (await root.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()
    refused = await shop.delete(f"/threads/{thread['id']}")
    assert refused.status_code == 403
    deleted = await root.delete(f"/threads/{thread['id']}")
    assert deleted.json() == {"id": thread["id"], "object": "thread.deleted", "deleted": True}
    assert (await root.get(f"/threads/{thread['id']}")).status_code == 404
    assert (await root.delete(f"/threads/{thread['id']}")).status_code == 404
    other = (await root.post("/threads", json={})).json()
    assert (await api.admin.delete(f"/threads/{other['id']}")).status_code == 200


async def test_list_threads_shows_only_the_callers_threads_paged(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    mine = [(await root.post("/threads", json={})).json()["id"] for _ in range(5)]
    shared = (await shop.post("/threads", json={"actors": [{"id": "root.near"}]})).json()["id"]
    (await shop.post("/threads", json={}))
    expected = list(reversed(mine + [shared]))  # newest first by default

    page1 = (await root.get("/threads", params={"limit": 4})).json()
    assert [t["id"] for t in page1["data"]] == expected[:4]
    assert page1["has_more"] is True
    page2 = (await root.get("/threads", params={"limit": 4, "after": page1["last_id"]})).json()
    assert [t["id"] for t in page2["data"]] == expected[4:]
    assert page2["has_more"] is False
    back = (await root.get("/threads", params={"limit": 2, "before": page2["first_id"]})).json()
    assert [t["id"] for t in back["data"]] == expected[2:4]
    ascending = (await root.get("/threads", params={"order": "asc", "limit": 100})).json()
    assert [t["id"] for t in ascending["data"]] == mine + [shared]
    everything = (await api.admin.get("/threads", params={"limit": 100})).json()
    assert len(everything["data"]) == 7


async def test_posts_into_a_thread_this_process_just_created_do_not_read_it_again(
    api: API, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The creator's process remembers the thread as it wrote it (its members' first answers are the hot
    path of an A2A SendMessage); a change to its actors is read again."""
    reads: list[str] = []
    get_thread_with_actors = store.get_thread_with_actors

    async def counted(thread_id: str) -> Any:
        reads.append(thread_id)
        return await get_thread_with_actors(thread_id)

    monkeypatch.setattr(store, "get_thread_with_actors", counted)
    shop = await api.actor("shop")
    alice = api.client(await api.key_for("alice"))
    await api.known("bob")
    thread = (await shop.post("/threads", json={"actors": [{"id": "alice"}], "messages": ["hello"]})).json()["id"]
    assert (await alice.post(f"/threads/{thread}/messages", json={"content": "hi"})).status_code == 200
    assert (await shop.post(f"/threads/{thread}/messages", json={"content": "how can I help?"})).status_code == 200
    assert reads == []
    added = await shop.post(f"/threads/{thread}/actors", json={"id": "bob"})
    assert added.status_code == 200, added.text
    reads.clear()
    bob = api.client(await api.key_for("bob"))
    assert (await bob.post(f"/threads/{thread}/messages", json={"content": "me too"})).status_code == 200
    assert reads == [thread]  # the join made this process forget it: read once, with bob in it
