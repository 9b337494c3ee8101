"""A capability message some recipients cannot read is refused, and the thread's members are told.

Specification: the sender gets 422 `capability_not_supported` naming, in `unsupported_by`, the actors that
cannot read it; when the sender itself reads it (only recipients are at fault), a `thread.message.refused`
event (sender, capability, version, type, part, `unsupported_by`; never the content) joins the thread's log,
so every member's log, inbox and live stream shows it. Once those actors declare the capability, the same
message goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest

from aitp.client import AitpClient, Event, Unprocessable
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API
from tests.test_wire_schemas import assert_valid

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
REQUEST = {"$schema": DECISIONS, "request_decision": {"id": "socks-1", "options": [{"id": "red", "name": "Red"}]}}
SECRET = "top-secret-option-name"
E = TypeVar("E", bound=Event)


async def events_of(client: Any, thread_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/threads/{thread_id}/events?after=0")
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def test_the_refusal_names_who_cannot_read_and_every_member_sees_it(api: API) -> None:
    user, shop = await api.actor("user.near"), await api.actor("shop.near")
    await api.known("bank.near")
    actors = [{"id": "user.near"}, {"id": "shop.near", "capabilities": [DECISIONS]}, {"id": "bank.near"}]
    thread = (await user.post("/threads", json={"actors": actors})).json()["id"]
    secret = {**REQUEST, "request_decision": {**REQUEST["request_decision"], "title": SECRET}}

    body = {"content": ["Red?", json.dumps(secret)], "metadata": {"reply_to": "msg_asked"}}
    refused = await shop.post(f"/threads/{thread}/messages", json=body)

    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["param"], error["unsupported_by"]) == (
        "capability_not_supported",
        "content[1].$schema",
        ["user.near", "bank.near"],
    )
    assert_valid("error", refused.json())
    [event] = [e for e in await events_of(user, thread) if e["type"] == "thread.message.refused"]
    assert event["data"] == {
        "thread_id": thread,
        "actor": "shop.near",
        "code": "capability_not_supported",
        "capability": "aitp-02-decisions",
        "version": "1.0.0",
        "type": "request_decision",
        "param": "content[1].$schema",
        "unsupported_by": ["user.near", "bank.near"],
        "reply_to": "msg_asked",  # the message it answered (an A2A task it was for fails)
    }
    assert_valid("message-refusal", event["data"])
    assert_valid("event", event)
    assert SECRET not in json.dumps(event) and "Red?" not in json.dumps(event)
    assert (await user.get(f"/threads/{thread}/messages")).json()["data"] == []  # nothing stored
    inbox = (await (await api.actor("bank.near")).get("/actors/me/events?after=0")).json()["data"]
    assert "thread.message.refused" in [e["type"] for e in inbox]

    # once every actor reads it, the same message goes through
    for actor in ("user.near", "bank.near"):
        joined = await api.admin.post(f"/threads/{thread}/actors", json={"id": actor, "capabilities": [DECISIONS]})
        assert joined.status_code == 200, joined.text
    accepted = await shop.post(f"/threads/{thread}/messages", json={"content": ["Red?", json.dumps(secret)]})
    assert accepted.status_code == 200, accepted.text


async def test_a_sender_that_has_not_declared_it_is_told_alone(api: API) -> None:
    user, shop = await api.actor("user.near"), await api.actor("shop.near")
    actors = [{"id": "user.near", "capabilities": [DECISIONS]}, {"id": "shop.near"}]
    thread = (await user.post("/threads", json={"actors": actors})).json()["id"]

    refused = await shop.post(f"/threads/{thread}/messages", json={"content": json.dumps(REQUEST)})

    assert refused.status_code == 422
    assert (refused.json()["error"]["code"], refused.json()["error"]["unsupported_by"]) == (
        "capability_not_supported",
        ["shop.near"],
    )
    assert "thread.message.refused" not in [e["type"] for e in await events_of(user, thread)]


async def test_other_refusals_carry_no_unsupported_by_and_log_nothing(api: API) -> None:
    user = await api.actor("user.near")
    thread = (await user.post("/threads", json={"actors": [{"id": "user.near", "capabilities": [DECISIONS]}]})).json()
    invalid = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"name": "no id"}]}}
    refused = await user.post(f"/threads/{thread['id']}/messages", json={"content": json.dumps(invalid)})
    assert refused.status_code == 422 and "unsupported_by" not in refused.json()["error"]
    assert [e["type"] for e in await events_of(user, thread["id"])] == ["thread.created"]


async def test_a_retried_refusal_is_logged_once(api: API) -> None:
    user, shop = await api.actor("user.near"), await api.actor("shop.near")
    actors = [{"id": "user.near"}, {"id": "shop.near", "capabilities": [DECISIONS]}]
    thread = (await user.post("/threads", json={"actors": actors})).json()["id"]
    for _ in range(2):
        refused = await shop.post(
            f"/threads/{thread}/messages",
            json={"content": json.dumps(REQUEST)},
            headers={"Idempotency-Key": "offer-1"},
        )
        assert refused.status_code == 422 and refused.json()["error"]["unsupported_by"] == ["user.near"]
    assert [e["type"] for e in await events_of(user, thread)].count("thread.message.refused") == 1


async def test_a_thread_created_with_a_refused_message_is_not_created(api: API) -> None:
    user = await api.actor("user.near")
    await api.known("shop.near")
    body = {
        "actors": [{"id": "user.near", "capabilities": [DECISIONS]}, {"id": "shop.near"}],
        "messages": [json.dumps(REQUEST)],
    }
    refused = await user.post("/threads", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["unsupported_by"] == ["shop.near"]
    assert (await user.get("/threads")).json()["data"] == []  # no thread, so no log to tell anyone


@pytest.fixture
def server(serve_backend: Callable[..., ServerProcess]) -> ServerProcess:
    return serve_backend()


async def test_members_see_the_refusal_live(server: ServerProcess) -> None:
    """Over a real server: the user follows the thread's stream and its inbox; the shop posts over its socket."""
    async with AitpClient(server.base_url, ADMIN_KEY) as admin:
        keys = {actor: (await admin.create_key(actor)).key for actor in ("user.near", "shop.near")}
    user, shop = AitpClient(server.base_url, keys["user.near"]), AitpClient(server.base_url, keys["shop.near"])
    async with user, shop:
        thread = await user.create_thread(actors=["user.near", {"id": "shop.near", "capabilities": [DECISIONS]}])
        async with user.stream(thread.id) as feed, shop.stream(thread.id) as posting:
            with pytest.raises(Unprocessable) as refused:
                await posting.post(REQUEST)
            assert (refused.value.code, refused.value.unsupported_by) == ("capability_not_supported", ["user.near"])
            with pytest.raises(Unprocessable) as over_http:
                await shop.create_message(thread.id, ["Red?", REQUEST])
            assert over_http.value.unsupported_by == ["user.near"] and over_http.value.param == "content[1].$schema"
            seen = await refusals(feed)
        async with contextlib.aclosing(user.inbox(after=0)) as following:  # the refusals made above
            inbox = await refusals(following)

    assert [(e.type, e.data["actor"], e.data["param"]) for e in seen] == [
        ("thread.message.refused", "shop.near", "content[0].$schema"),
        ("thread.message.refused", "shop.near", "content[1].$schema"),
    ]
    assert [(e.thread_id, e.seq) for e in inbox] == [(thread.id, e.seq) for e in seen]


async def refusals(events: AsyncIterator[E], count: int = 2) -> list[E]:
    """The first `count` `thread.message.refused` events of a live feed (within 20 s)."""

    async def collect() -> list[E]:
        found: list[E] = []
        async for event in events:
            if event.type == "thread.message.refused":
                found.append(event)
                if len(found) == count:
                    break
        return found

    return await asyncio.wait_for(collect(), 20)
