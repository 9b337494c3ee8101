"""The Conversations face on every backend: what it refuses (naming the item), that items are stored all or
none, that capability messages in items are validated and correlated as in threads, that the Threads
face's events carry conversation writes, and that a retried write with an Idempotency-Key is replayed."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import API

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
ACTORS = json.dumps(
    [{"id": "user.near", "capabilities": [DECISIONS]}, {"id": "shop.near", "capabilities": [DECISIONS]}]
)


def decision_item(kind: str, body: dict[str, Any], role: str = "assistant") -> dict[str, Any]:
    text = json.dumps({"$schema": DECISIONS, kind: body})
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


async def new_conversation(api: API) -> tuple[Any, Any, str]:
    user, shop = await api.actor("user.near"), await api.actor("shop.near")
    created = await user.post("/conversations", json={"metadata": {"actors": ACTORS}})
    assert created.status_code == 200, created.text
    return user, shop, created.json()["id"]


async def item_texts(client: Any, conversation_id: str) -> list[str]:
    listed = await client.get(f"/conversations/{conversation_id}/items", params={"order": "asc"})
    assert listed.status_code == 200, listed.text
    return [part["text"] for item in listed.json()["data"] for part in item["content"]]


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["error"]


async def test_an_item_a_thread_cannot_hold_is_refused_by_name_and_nothing_is_stored(api: API) -> None:
    user, _, conversation = await new_conversation(api)
    items = [
        {"role": "user", "content": "kept?"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    ]
    error = error_of(await user.post(f"/conversations/{conversation}/items", json={"items": items}), 400)
    assert (error["param"], error["code"]) == ("items[1].type", "unsupported_item_type")
    assert "function_call" in error["message"]

    part = {"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}
    error = error_of(await user.post(f"/conversations/{conversation}/items", json={"items": [part]}), 400)
    assert (error["param"], error["code"]) == ("items[0].content[0].type", "unsupported_content_type")
    error = error_of(await user.post(f"/conversations/{conversation}/items", json={"items": [{"content": "x"}]}), 400)
    assert error["param"] == "items[0].role"
    error = error_of(await user.post(f"/conversations/{conversation}/items", json={"items": [{}] * 21}), 400)
    assert error["param"] == "items"
    assert await item_texts(user, conversation) == []


async def test_items_are_stored_all_or_none_when_one_fails_validation(api: API) -> None:
    user, shop, conversation = await new_conversation(api)
    bad = decision_item("request_decision", {"id": "r1", "options": "not a list"})
    items = [{"role": "assistant", "content": "first"}, bad]
    error = error_of(await shop.post(f"/conversations/{conversation}/items", json={"items": items}), 422)
    assert error["code"] == "invalid_capability_message"
    assert error["param"].startswith("items[1].content[0]")
    assert await item_texts(user, conversation) == []


async def test_an_answer_in_an_item_is_correlated_with_its_request(api: API) -> None:
    user, shop, conversation = await new_conversation(api)
    request = decision_item("request_decision", {"id": "r1", "options": [{"id": "a", "name": "A"}]})
    asked = await shop.post(f"/conversations/{conversation}/items", json={"items": [request]})
    assert asked.status_code == 200, asked.text
    assert asked.json()["data"][0]["aitp"][0]["type"] == "request_decision"

    answer = decision_item("decision", {"request_decision_id": "r1", "options": [{"id": "a", "name": "A"}]}, "user")
    answered = await user.post(f"/conversations/{conversation}/items", json={"items": [answer]})
    assert answered.status_code == 200, answered.text
    again = await user.post(f"/conversations/{conversation}/items", json={"items": [answer]})
    assert error_of(again, 409)["param"] == "items[0].content[0].decision"


async def test_the_created_conversation_names_its_first_items_errors_as_items(api: API) -> None:
    user = await api.actor("user.near")
    await api.known("shop.near")
    items = [{"role": "user", "content": "ok"}, decision_item("request_decision", {"id": 7}, "user")]
    created = await user.post("/conversations", json={"items": items, "metadata": {"actors": ACTORS}})
    error = error_of(created, 422)
    assert error["param"].startswith("items[1].content[0]")
    assert "items[1].content[0]" in error["message"] and "messages" not in error["message"]
    assert (await user.get("/threads")).json()["data"] == []


async def test_conversation_writes_are_thread_events_and_a_retry_is_replayed(api: API) -> None:
    user, shop, conversation = await new_conversation(api)
    headers = {"Idempotency-Key": "add-once"}
    body = {"items": [{"role": "assistant", "content": "once"}]}
    first = await shop.post(f"/conversations/{conversation}/items", json=body, headers=headers)
    retried = await shop.post(f"/conversations/{conversation}/items", json=body, headers=headers)
    assert first.status_code == retried.status_code == 200
    assert retried.json() == first.json()
    assert await item_texts(user, conversation) == ["once"]

    events = (await user.get(f"/threads/{conversation}/events")).json()["data"]
    created = [e["data"] for e in events if e["type"] == "thread.message.created"]
    assert [(m["id"], m["metadata"]["actor"]) for m in created] == [(first.json()["data"][0]["id"], "shop.near")]


async def test_what_is_not_found_is_named_as_this_face_names_it(api: API) -> None:
    """A conversation and its items, not a thread and its messages: the codes, params and messages say so."""
    user, _, conversation_id = await new_conversation(api)
    missing = error_of(await user.get("/conversations/thread_missing"), 404)
    assert (missing["code"], missing["param"]) == ("conversation_not_found", "conversation_id")
    assert missing["message"] == "No conversation found with id 'thread_missing'."
    item = error_of(await user.get(f"/conversations/{conversation_id}/items/msg_missing"), 404)
    assert (item["code"], item["param"]) == ("item_not_found", "item_id")
    assert item["message"] == "No item found with id 'msg_missing'."
    gone = error_of(await user.delete(f"/conversations/{conversation_id}/items/msg_missing"), 404)
    assert gone["code"] == "item_not_found"


async def test_a_page_after_a_deleted_cursor_item_continues(api: API) -> None:
    user, _, conversation_id = await new_conversation(api)
    for text in ("one", "two", "three"):
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        assert (await user.post(f"/conversations/{conversation_id}/items", json={"items": [item]})).is_success
    first = (await user.get(f"/conversations/{conversation_id}/items", params={"order": "asc", "limit": 2})).json()
    last = first["last_id"]
    assert (await user.delete(f"/conversations/{conversation_id}/items/{last}")).is_success
    page = await user.get(f"/conversations/{conversation_id}/items", params={"order": "asc", "after": last})
    assert page.status_code == 200, page.text
    assert [part["text"] for item in page.json()["data"] for part in item["content"]] == ["three"]
    threads_page = await user.get(f"/threads/{conversation_id}/messages", params={"order": "desc", "before": last})
    assert [m["content"][0]["text"]["value"] for m in threads_page.json()["data"]] == ["three"]
    bogus = await user.get(f"/conversations/{conversation_id}/items", params={"after": "msg_never"})
    assert error_of(bogus, 400)["code"] == "invalid_cursor"


async def test_an_item_names_its_recipients_in_to_and_shows_them(api: API) -> None:
    user, shop, conversation_id = await new_conversation(api)
    items = [
        {"role": "user", "content": "for the shop", "to": ["shop.near", "user.near"]},
        {"role": "user", "content": "for anyone"},
    ]
    added = await user.post(f"/conversations/{conversation_id}/items", json={"items": items})
    assert added.status_code == 200, added.text
    named, unnamed = added.json()["data"]
    assert named["to"] == ["shop.near", "user.near"]  # in the order given
    assert "to" not in unnamed

    listed = (await shop.get(f"/conversations/{conversation_id}/items", params={"order": "asc"})).json()["data"]
    assert [i.get("to") for i in listed] == [["shop.near", "user.near"], None]
    one = (await shop.get(f"/conversations/{conversation_id}/items/{named['id']}")).json()
    assert one["to"] == ["shop.near", "user.near"]
    # the same message on the Threads face: `metadata.to`, a JSON string as OpenAI metadata values are
    message = (await shop.get(f"/threads/{conversation_id}/messages/{named['id']}")).json()
    assert json.loads(message["metadata"]["to"]) == ["shop.near", "user.near"]

    created = await user.post(
        "/conversations",
        json={"metadata": {"actors": ACTORS}, "items": [{"role": "user", "content": "hi", "to": ["shop.near"]}]},
    )
    assert created.status_code == 200, created.text
    first = (await user.get(f"/conversations/{created.json()['id']}/items")).json()["data"]
    assert [i["to"] for i in first] == [["shop.near"]]


async def test_a_bad_to_is_refused_naming_the_items_to(api: API) -> None:
    user, _, conversation_id = await new_conversation(api)
    await api.known("stranger.near")
    for to, param in ((["shop.near", "stranger.near"], "items[1].to[1]"), ([], "items[1].to"), (5, "items[1].to")):
        items = [{"role": "user", "content": "fine"}, {"role": "user", "content": "to whom?", "to": to}]
        error = error_of(await user.post(f"/conversations/{conversation_id}/items", json={"items": items}), 400)
        assert error["param"] == param, error
        assert "items[1].to" in error["message"] and "metadata" not in error["message"], error
    assert await item_texts(user, conversation_id) == []

    items = [{"role": "user", "content": "hi", "to": ["stranger.near"]}]
    created = await user.post("/conversations", json={"metadata": {"actors": ACTORS}, "items": items})
    error = error_of(created, 400)
    assert (error["param"], error["code"]) == ("items[0].to[0]", "actor_not_member")
    assert "items[0].to" in error["message"] and "messages" not in error["message"]
