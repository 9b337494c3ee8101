"""Presence: whether an actor can be reached now (its inbox followed live, a webhook that delivers) and how soon
it usually replies; and activity: an agent saying it is working on an answer, which the other members' live
streams show outside the log.

Specification: `GET /v1/actors/{id}/presence` says `reachable` and `via` as they are now (an inbox stream
connected on any instance sharing the store, and not after it closed; a webhook whose deliveries succeed;
an A2A agent whose last call answered), `usually_replies_in` is the median of the actor's recent reply times,
and an actor the caller may not see (no profile it may see, no thread shared) is answered 404 as an unknown
one. `POST /v1/threads/{id}/activity` is for members only (404 otherwise); its `thread.activity` frame reaches
the other members' thread and inbox streams that ask for it (`activity=true`; WebSocket and SSE, without a
cursor or an SSE id), never the poster's own nor a stream that did not ask, is followed by `idle` when it
expires or when that actor posts a message, is never replayed by a reconnect, and crosses instances sharing
one store.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from aitp.client import AitpClient
from aitp.store import Store
from aitp.testing import ServerProcess
from tests.bindings.test_a2a import service as a2a_service
from tests.conftest import ADMIN_KEY, API
from tests.deliveries.test_a2a_outbound import Parrot, allow, answered, sdk_agent
from tests.deliveries.test_webhooks import register, service
from tests.support.live import sse_frames, ws_connect
from tests.support.receiver import receiving

ACTIVITY = {"activity": "true"}  # a live stream carries activity frames to a client that asks

# ------------------------------------------------------------------------------------------ helpers


class Server:
    """HTTP clients of a real server process, one per actor (keys made by the admin)."""

    def __init__(self, process: ServerProcess, keys: dict[str, str] | None = None) -> None:
        self.base_url = process.base_url
        self.keys = {} if keys is None else keys  # shared by two servers on one store
        self._clients: list[httpx.AsyncClient] = []
        self.admin = self._client(ADMIN_KEY)

    def _client(self, key: str) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            base_url=self.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        self._clients.append(client)
        return client

    async def actor(self, actor: str) -> httpx.AsyncClient:
        if actor not in self.keys:
            response = await self.admin.post("/keys", json={"actor": actor})
            assert response.status_code == 200, response.text
            self.keys[actor] = response.json()["key"]
        return self._client(self.keys[actor])

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()


@pytest.fixture
async def server(serve_backend: Callable[..., ServerProcess]) -> AsyncIterator[Server]:
    helper = Server(serve_backend(AITP_RATE_LIMIT="0"))
    try:
        yield helper
    finally:
        await helper.close()


async def thread_with(creator: httpx.AsyncClient, *actors: str) -> str:
    response = await creator.post("/threads", json={"actors": [{"id": actor} for actor in actors]})
    assert response.status_code == 200, response.text
    thread_id: str = response.json()["id"]
    return thread_id


async def post(client: httpx.AsyncClient, thread_id: str, text: str) -> dict[str, Any]:
    response = await client.post(f"/threads/{thread_id}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()
    return message


async def set_activity(client: httpx.AsyncClient, thread_id: str, state: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(f"/threads/{thread_id}/activity", json={"state": state, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def presence(client: httpx.AsyncClient, actor: str) -> dict[str, Any]:
    response = await client.get(f"/actors/{actor}/presence")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def presence_once(
    client: httpx.AsyncClient, actor: str, check: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The actor's presence once `check` holds of it (within 10 s)."""
    for _ in range(200):
        found = await presence(client, actor)
        if check(found):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"presence never became as expected: {found}")


async def next_frame(socket: Any, timeout: float = 10.0) -> dict[str, Any]:
    """The next frame a socket receives (post replies skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            frame: dict[str, Any] = json.loads(await socket.recv())
            if "op" not in frame:
                return frame


async def nothing_within(socket: Any, seconds: float) -> None:
    with pytest.raises(TimeoutError):
        frame = await next_frame(socket, seconds)
        raise AssertionError(f"unexpected frame: {frame}")


def activity_data(frame: dict[str, Any]) -> tuple[str, str]:
    assert frame["type"] == "thread.activity", frame
    assert "seq" not in frame and "cursor" not in frame, frame  # outside the log
    return frame["data"]["actor"], frame["data"]["state"]


# ------------------------------------------------------------------------------------------ reachability


async def test_an_agent_is_reachable_while_its_inbox_is_followed_live_and_not_after(server: Server) -> None:
    shop, ada = await server.actor("shop"), await server.actor("ada")
    await thread_with(ada, "ada", "shop")
    assert (await presence(ada, "shop"))["reachable"] is False

    async with ws_connect(server.base_url, "/actors/me/events/ws", server.keys["shop"]):
        found = await presence_once(ada, "shop", lambda p: p["reachable"])
        assert found["via"] == ["inbox_stream"] and found["object"] == "actor.presence" and found["actor"] == "shop"
        assert abs(found["checked_at"] - time.time()) < 5
        async with ws_connect(server.base_url, "/actors/me/events/ws", server.keys["shop"]):
            pass  # a second stream of the same actor closing leaves the first one counting
        await asyncio.sleep(0.3)
        assert (await presence(ada, "shop"))["via"] == ["inbox_stream"]

    found = await presence_once(ada, "shop", lambda p: not p["reachable"])
    assert found["via"] == []

    # an SSE inbox counts as well
    stream = sse_frames(shop, "/actors/me/events")
    first = await anext(stream)  # the server answered: the stream is open
    assert "status" not in first, first
    assert (await presence_once(ada, "shop", lambda p: p["reachable"]))["via"] == ["inbox_stream"]
    await stream.aclose()
    await presence_once(ada, "shop", lambda p: not p["reachable"])


async def test_an_agent_whose_webhook_delivers_is_reachable_and_not_once_it_fails(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        await api.known("ada", "shop")
        shop, ada = await api.actor("shop"), await api.actor("ada")
        thread_id = await thread_with(ada, "ada", "shop")
        hook = await register(shop, receiver.url)
        assert (await presence(ada, "shop"))["reachable"] is False  # registered, never delivered to yet

        await post(ada, thread_id, "hello")
        found = await presence_once(ada, "shop", lambda p: p["reachable"])
        assert found["via"] == ["webhook"]

        failing = True
        receiver.decide = lambda request: 500 if failing else 200  # the receiver fails from now on
        await post(ada, thread_id, "still there?")
        await receiver.wait_for(lambda r: any(request.status == 500 for request in r.requests))
        await presence_once(ada, "shop", lambda p: not p["reachable"])

        failing = False  # back: the next retry succeeds
        await presence_once(ada, "shop", lambda p: p["via"] == ["webhook"])
        disabled = await shop.patch(f"/webhooks/{hook['id']}", json={"enabled": False})
        assert disabled.status_code == 200, disabled.text
        assert (await presence(ada, "shop"))["reachable"] is False  # a disabled endpoint delivers nothing


async def test_a_remote_a2a_agent_is_reachable_while_its_calls_are_answered(store: Store) -> None:
    parrot = Parrot()
    async with sdk_agent(parrot) as (card_url, guard), a2a_service(store, webhook_allow=allow(card_url)) as svc:
        assert (await svc.a2a_settings("parrot", agent_card_url=card_url)).status_code == 200
        async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
            thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "parrot"}])
            assert (await alice.get_presence("parrot")).via == []  # never called yet
            await alice.create_message(thread.id, content="hello")
            await answered(alice, thread.id, "parrot: hello")
            assert (await alice.get_presence("parrot")).via == ["a2a"]

            guard.expected = "a credential the service does not have"  # its calls are refused from now on
            await alice.create_message(thread.id, content="still there?")
            async with asyncio.timeout(15):
                while (await alice.get_presence("parrot")).reachable:
                    await asyncio.sleep(0.05)
            assert guard.refused >= 1


async def test_usually_replies_in_is_the_median_wait_for_the_actors_reply(api: API) -> None:
    shop, ada, bob = await api.actor("shop"), await api.actor("ada"), await api.actor("bob")
    waits = []
    # ada waits about a second for her answer
    first = await thread_with(ada, "ada", "shop")
    asked = await post(ada, first, "Do you have red socks?")
    await asyncio.sleep(1.1)
    waits.append((await post(shop, first, "Yes!"))["created_at"] - asked["created_at"])
    # bob asks twice before the answer: he waited since his first message
    second = await thread_with(bob, "bob", "shop")
    asked = await post(bob, second, "Hello?")
    await asyncio.sleep(1.1)
    await post(bob, second, "Anyone there?")
    await asyncio.sleep(1.1)
    answered = await post(shop, second, "Sorry, here now")
    waits.append(answered["created_at"] - asked["created_at"])
    await post(shop, second, "How can I help?")  # a second message in a row is no reply
    # an immediate answer
    asked = await post(ada, first, "Blue ones too?")
    waits.append((await post(shop, first, "Those too"))["created_at"] - asked["created_at"])

    found = await presence(ada, "shop")
    assert waits[1] >= 2 and found["usually_replies_in"] == statistics.median_low(waits)
    assert (await presence(bob, "bob"))["usually_replies_in"] is None  # bob spoke first and answered nobody
    assert (await presence(shop, "me"))["actor"] == "shop"  # "me": the caller itself


async def test_presence_is_for_whoever_may_see_the_actor(api: API) -> None:
    await api.known("ada", "eve", "lonely")
    shop, ada, eve = await api.actor("shop"), await api.actor("ada"), await api.actor("eve")
    await thread_with(ada, "ada", "shop")

    assert (await presence(ada, "shop"))["actor"] == "shop"  # ada shares a thread with it
    assert (await presence(shop, "shop"))["actor"] == "shop"  # itself
    assert (await presence(api.admin, "shop"))["actor"] == "shop"  # an admin
    for who, actor in ((eve, "shop"), (ada, "lonely"), (ada, "nobody-here")):
        response = await who.get(f"/actors/{actor}/presence")
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        # a known actor she may not see reads as an unknown one
        assert error["code"] == "actor_not_found" and error["message"] == f"No actor '{actor}' is known to this server."
    assert (await shop.get("/actors/shop/presence", headers={"Authorization": "Bearer nope"})).status_code == 401


# ------------------------------------------------------------------------------------------ activity


async def test_activity_is_for_members_only_and_limited_per_actor(api: API) -> None:
    await api.known("ada", "eve")
    shop, ada, eve = await api.actor("shop"), await api.actor("ada"), await api.actor("eve")
    thread_id = await thread_with(ada, "ada", "shop")

    before = time.time()
    set_ = await set_activity(shop, thread_id, "working")
    assert set_["object"] == "thread.activity" and set_["thread_id"] == thread_id and set_["actor"] == "shop"
    assert set_["state"] == "working" and before + 14 <= set_["expires_at"] <= time.time() + 16
    assert (await set_activity(shop, thread_id, "working", expires_in=40))["expires_at"] >= before + 39

    response = await eve.post(f"/threads/{thread_id}/activity", json={"state": "working"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "thread_not_found"
    response = await api.admin.post(f"/threads/{thread_id}/activity", json={"state": "working", "actor": "eve"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "actor_not_member"
    assert (await set_activity(api.admin, thread_id, "idle", actor="shop"))["actor"] == "shop"
    response = await ada.post(f"/threads/{thread_id}/activity", json={"state": "working", "actor": "shop"})
    assert response.status_code == 403  # no one works as another
    for body in ({"state": "typing"}, {}, {"state": "idle", "expires_in": 5}, {"state": "working", "expires_in": 61}):
        response = await shop.post(f"/threads/{thread_id}/activity", json=body)
        assert response.status_code == 400, (body, response.text)

    refused = None
    for _ in range(40):  # bursts of 30 per actor, 5 a second after
        response = await ada.post(f"/threads/{thread_id}/activity", json={"state": "working"})
        if response.status_code != 200:
            refused = response
            break
    assert refused is not None and refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_activity_updates" and refused.headers["Retry-After"]
    assert (await set_activity(shop, thread_id, "idle"))["state"] == "idle"  # another actor's are its own


async def test_a_member_following_the_thread_sees_working_then_idle_and_never_its_own(server: Server) -> None:
    shop, ada = await server.actor("shop"), await server.actor("ada")
    thread_id = await thread_with(ada, "ada", "shop")
    path = f"/threads/{thread_id}/events/ws"
    async with (
        ws_connect(server.base_url, path, server.keys["ada"], params={"after": 1, **ACTIVITY}) as on_ada,
        ws_connect(server.base_url, path, server.keys["shop"], params={"after": 1, **ACTIVITY}) as on_shop,
        ws_connect(server.base_url, path, server.keys["ada"], params={"after": 1}) as without,
    ):
        await asyncio.sleep(0.2)  # both streams open
        set_ = await set_activity(shop, thread_id, "working")
        frame = await next_frame(on_ada)
        assert frame == {
            "type": "thread.activity",
            "thread_id": thread_id,
            "data": {"actor": "shop", "state": "working", "expires_at": set_["expires_at"]},
        }
        await set_activity(shop, thread_id, "idle")
        assert activity_data(await next_frame(on_ada)) == ("shop", "idle")

        # the shop's own stream showed none of it, nor one that did not ask: their next frame is ada's message
        await post(ada, thread_id, "thanks")
        assert (await next_frame(on_shop))["type"] == "thread.message.created"
        assert (await next_frame(without))["type"] == "thread.message.created"
        assert (await next_frame(on_ada))["type"] == "thread.message.created"

        # working ends by itself: an idle frame when it expires, with no one saying so
        await set_activity(shop, thread_id, "working", expires_in=1)
        started = time.monotonic()
        assert activity_data(await next_frame(on_ada)) == ("shop", "working")
        assert activity_data(await next_frame(on_ada, 5)) == ("shop", "idle")
        assert time.monotonic() - started >= 0.5


async def test_the_working_actors_message_ends_its_activity(server: Server) -> None:
    shop, ada = await server.actor("shop"), await server.actor("ada")
    thread_id = await thread_with(ada, "ada", "shop")
    path = f"/threads/{thread_id}/events/ws"
    async with ws_connect(server.base_url, path, server.keys["ada"], params=ACTIVITY) as on_ada:
        assert (await next_frame(on_ada))["type"] == "thread.created"
        await set_activity(shop, thread_id, "working")
        assert activity_data(await next_frame(on_ada)) == ("shop", "working")
        answer = await post(shop, thread_id, "Here you are")
        event = await next_frame(on_ada)
        assert event["type"] == "thread.message.created" and event["data"]["id"] == answer["id"]
        assert activity_data(await next_frame(on_ada)) == ("shop", "idle")  # right after it
        await nothing_within(on_ada, 0.5)


async def test_activity_is_not_replayed_by_a_reconnect_and_reaches_inboxes_without_a_cursor(server: Server) -> None:
    shop, ada = await server.actor("shop"), await server.actor("ada")
    thread_id = await thread_with(ada, "ada", "shop")
    path = f"/threads/{thread_id}/events/ws"
    async with ws_connect(server.base_url, path, server.keys["ada"], params={"after": 1, **ACTIVITY}) as on_ada:
        await asyncio.sleep(0.2)
        await set_activity(shop, thread_id, "working", expires_in=30)
        assert activity_data(await next_frame(on_ada)) == ("shop", "working")
    # still working, but a stream opened after it was said does not hear of it, from any cursor
    async with ws_connect(server.base_url, path, server.keys["ada"], params={"after": 1, **ACTIVITY}) as again:
        await asyncio.sleep(0.2)
        message = await post(ada, thread_id, "hello?")
        event = await next_frame(again)
        assert event["type"] == "thread.message.created" and event["data"]["id"] == message["id"]
        await nothing_within(again, 0.5)

    # ada's inbox over SSE: a frame with no id (an EventSource resumes from the last event's cursor, never from it)
    frames = sse_frames(ada, "/actors/me/events", params={"after": 0, **ACTIVITY})
    try:
        async with asyncio.timeout(10):
            seen = [await anext(frames) for _ in range(2)]  # thread.created and her message
            assert all("id" in frame for frame in seen), seen
            await set_activity(shop, thread_id, "working")
            frame = await anext(frames)
            while "comment" in frame:  # keep-alives
                frame = await anext(frames)
        assert frame["event"] == "thread.activity" and "id" not in frame
        assert activity_data({"type": frame["event"], **frame["data"]}) == ("shop", "working")
    finally:
        await frames.aclose()

    # and over the inbox WebSocket, from the inbox's cursor
    inbox_path = "/actors/me/events/ws"
    async with ws_connect(server.base_url, inbox_path, server.keys["ada"], params={"after": 0, **ACTIVITY}) as inbox:
        while (await next_frame(inbox))["data"].get("id") != message["id"]:
            pass
        await set_activity(shop, thread_id, "idle")  # the end of a working it never showed: nothing to show
        await set_activity(shop, thread_id, "working")
        assert activity_data(await next_frame(inbox)) == ("shop", "working")


async def test_activity_and_presence_cross_instances_sharing_one_store(
    serve_backend: Callable[..., ServerProcess],
) -> None:
    first, second = serve_backend(AITP_RATE_LIMIT="0"), serve_backend(AITP_RATE_LIMIT="0")
    keys: dict[str, str] = {}
    on_a, on_b = Server(first, keys), Server(second, keys)
    try:
        shop_b, ada_a = await on_b.actor("shop"), await on_a.actor("ada")
        thread_id = await thread_with(ada_a, "ada", "shop")
        path, params = f"/threads/{thread_id}/events/ws", {"after": 1, **ACTIVITY}
        async with ws_connect(on_a.base_url, path, keys["ada"], params=params) as ws:
            await asyncio.sleep(0.3)
            await set_activity(shop_b, thread_id, "working")  # through B: A's tailer reads it from the store
            assert activity_data(await next_frame(ws)) == ("shop", "working")
            await set_activity(shop_b, thread_id, "idle")
            assert activity_data(await next_frame(ws)) == ("shop", "idle")

        # the shop's inbox followed through B is seen through A, and not once it closed
        async with ws_connect(on_b.base_url, "/actors/me/events/ws", keys["shop"]):
            assert (await presence_once(ada_a, "shop", lambda p: p["reachable"]))["via"] == ["inbox_stream"]
        await presence_once(ada_a, "shop", lambda p: not p["reachable"])
    finally:
        await on_a.close()
        await on_b.close()
