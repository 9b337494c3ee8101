"""Security, proven over every route the app serves, HTTP and WebSocket, against a real server per backend.

The route table is generated from the app itself, so a new route is covered (or a test fails and names it):

- every /v1 route but the public schema documents needs a key: 401 (WebSocket: close 4401);
- a member of thread A probing thread B learns nothing: every thread route answers exactly as for a thread
  that does not exist (404; WebSocket: 4403), SSE included, and nothing of B shows in A's member's lists or
  inbox; B's messages are not found through A either;
- no write route lets a key act as another actor: 403 (a table that must name every write route).

Registering a capability without the `capabilities:write` scope, a schema whose `$ref` points to a remote
URL (refused, nothing fetched) and a catastrophic regex (answered at once) are specified in
tests/api/test_capability_registration.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import websockets
from fastapi import FastAPI

from aitp.app import create_app
from aitp.config import Settings
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY
from tests.support.live import sse_frames, ws_connect


@dataclass(frozen=True)
class ServedRoute:
    """One route of the app: an HTTP method (or "WS") and its path template."""

    method: str
    template: str

    def path(self, **values: str) -> str:
        """The template under /v1 filled in (a KeyError names a path parameter this file does not know yet)."""
        return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m[1]], self.template).removeprefix("/v1")

    @property
    def names_a_thread(self) -> bool:
        return "{thread_id}" in self.template or "{conversation_id}" in self.template  # a conversation is a thread

    @property
    def writes(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE", "WS")  # a WebSocket takes post ops

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def served_routes(app: FastAPI) -> list[ServedRoute]:
    """Every route under /v1, those of included routers too."""
    found: list[ServedRoute] = []
    for route in app.routes:
        # FastAPI keeps included routers whole; their effective routes carry the full path.
        for effective in getattr(route, "effective_route_contexts", lambda r=route: [r])():
            # (a WebSocket route's full path is on the Starlette route FastAPI built for it)
            path = getattr(effective, "path", "") or getattr(getattr(effective, "starlette_route", None), "path", "")
            if not path.startswith("/v1/"):
                continue
            methods = getattr(effective, "methods", None)
            found += [ServedRoute(m, path) for m in sorted(methods)] if methods else [ServedRoute("WS", path)]
    return found


APP = create_app(Settings(store_url="sqlite:///:memory:", admin_key=ADMIN_KEY))
ROUTES = served_routes(APP)
PUBLIC = {
    ServedRoute("GET", "/v1/capabilities/{capability_id}/{version}/schema.json"),
    ServedRoute("GET", "/v1/capabilities/{capability_id}/{version}/examples"),
    ServedRoute("POST", "/v1/sign-in"),  # a one-time sign-in code is the credential (tests/api/test_one_time_codes.py)
    # a domain or NEAR actor's signature over a challenge is the credential (tests/api/test_sign_in.py)
    ServedRoute("POST", "/v1/auth/challenge"),
    ServedRoute("POST", "/v1/auth/token"),
    # a shop that let anonymous visitors in: the visitor has no credential yet (tests/api/test_customer_sessions.py)
    ServedRoute("POST", "/v1/customer_sessions/anonymous"),
}


def test_the_route_table_is_the_whole_api() -> None:
    """A guard on the generator: every operation of the OpenAPI document is in the table, WebSockets too."""
    documented = {
        ServedRoute(method.upper(), path)
        for path, operations in APP.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in operations
    }
    templates = {ServedRoute(r.method, re.sub(r":\w+\}", "}", r.template)) for r in ROUTES}
    assert documented <= templates
    assert ServedRoute("WS", "/v1/threads/{thread_id}/events/ws") in ROUTES
    assert ServedRoute("WS", "/v1/actors/me/events/ws") in ROUTES
    assert PUBLIC <= set(ROUTES)


# --- fixtures: a real server on each backend, and a few actors -----------------------------------


@pytest.fixture
def server(serve_backend: Callable[..., ServerProcess]) -> ServerProcess:
    return serve_backend()


class Actors:
    """Keys and HTTP clients of the running server, one per actor."""

    def __init__(self, server: ServerProcess) -> None:
        self.base_url = server.base_url
        self.keys: dict[str, str] = {"admin": ADMIN_KEY}
        self.clients: dict[str, httpx.AsyncClient] = {}

    def client(self, key: str | None, authorization: str | None = None) -> httpx.AsyncClient:
        header = authorization or (f"Bearer {key}" if key else None)
        client = httpx.AsyncClient(
            base_url=self.base_url + "/v1", headers={"Authorization": header} if header else {}, timeout=30
        )
        self.clients[f"{header}#{len(self.clients)}"] = client
        return client

    async def __getitem__(self, actor: str) -> httpx.AsyncClient:
        if actor not in self.keys:
            response = await self.client(ADMIN_KEY).post("/keys", json={"actor": actor})
            self.keys[actor] = response.json()["key"]
        return self.client(self.keys[actor])

    async def close(self) -> None:
        for client in self.clients.values():
            await client.aclose()


@pytest.fixture
async def actors(server: ServerProcess) -> AsyncIterator[Actors]:
    helper = Actors(server)
    try:
        yield helper
    finally:
        await helper.close()


async def ws_close_code(actors: Actors, path: str, key: str | None, **params: Any) -> int | None:
    """The close code the server ends a fresh WebSocket on `path` with (None: it stayed open)."""
    async with ws_connect(actors.base_url, path, key, params=params) as socket:
        try:
            while True:
                await socket.recv()
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None


async def ws_post(actors: Actors, path: str, key: str, frame: dict[str, Any]) -> dict[str, Any]:
    """The reply to one post op sent on a WebSocket on `path` (events are skipped)."""
    async with ws_connect(actors.base_url, path, key, params={"after": 0}) as socket:
        await socket.send(json.dumps({"op": "post", "ref": 1, **frame}))
        while True:
            reply = json.loads(await socket.recv())
            if reply.get("op") in ("posted", "error"):
                return reply


async def sse_refusal(client: httpx.AsyncClient, path: str) -> tuple[Any, ...]:
    """(status, code, param) of an SSE request on `path` that is refused, or its first frame if it is not."""
    async for frame in sse_frames(client, path):
        if "status" not in frame:
            return (frame,)
        error = frame["body"]["error"]
        return frame["status"], error["code"], error["param"]
    raise AssertionError(f"no answer on {path}")


async def log_of(actors: Actors, thread_id: str) -> list[dict[str, Any]]:
    return (await (await actors["owner.near"]).get(f"/threads/{thread_id}/events")).json()["data"]


# --- every route needs a key ----------------------------------------------------------------------


async def test_every_route_but_the_public_ones_needs_a_key(actors: Actors) -> None:
    callers = {
        "no key": actors.client(None),
        "wrong key": actors.client("aitp_wrong"),
        "malformed header": actors.client(None, authorization="Basic abc"),
    }
    admitted = []
    for route in ROUTES:
        path = route.path(
            thread_id="t",
            message_id="m",
            actor_id="a",
            capability_id="c",
            version="1.0.0",
            key_id="k",
            conversation_id="t",
            item_id="m",
            webhook_id="w",
            delivery_id="d",
        )
        if route in PUBLIC:
            continue
        if route.method == "WS":
            for name, key in (("no key", None), ("wrong key", "aitp_wrong")):
                if (code := await ws_close_code(actors, path, key)) != 4401:
                    admitted.append((str(route), name, code))
            continue
        for name, client in callers.items():
            response = await client.request(route.method, path, json={})
            if response.status_code != 401 or response.json()["error"]["type"] != "authentication_error":
                admitted.append((str(route), name, response.status_code))
    assert admitted == []

    schema = "/capabilities/aitp-02-decisions/1.0.0/schema.json"  # the public routes: no key needed
    assert (await callers["no key"].get(schema)).status_code == 200
    assert (await callers["no key"].get(schema.replace("schema.json", "examples"))).status_code == 200
    async with httpx.AsyncClient(base_url=actors.base_url) as root:
        assert (await root.get("/health")).json()["status"] == "ok"
        assert (await root.get("/openapi.json")).status_code == 200


# --- a member of thread A probing thread B ---------------------------------------------------------


@dataclass
class TwoThreads:
    """Thread B (owner.near and shop.near, with a message) and thread A of prober.near, who is not in B."""

    a: str
    b: str
    b_message: str
    a_marker: str  # the last message of A, posted after everything in B


async def two_threads(actors: Actors) -> TwoThreads:
    owner, prober = await actors["owner.near"], await actors["prober.near"]
    await actors["shop.near"]
    b = (await owner.post("/threads", json={"actors": [{"id": "shop.near"}], "messages": ["secret"]})).json()["id"]
    b_message = (await owner.get(f"/threads/{b}/messages")).json()["data"][0]["id"]
    a = (await prober.post("/threads", json={})).json()["id"]
    a_marker = (await prober.post(f"/threads/{a}/messages", json={"content": "marker"})).json()["id"]
    return TwoThreads(a, b, b_message, a_marker)


BODIES: dict[str, Any] = {
    "/v1/threads/{thread_id}/messages": {"content": "x"},
    "/v1/threads/{thread_id}/actors": {"id": "prober.near"},
    "/v1/threads/{thread_id}/activity": {"state": "working"},
    "/v1/threads/{thread_id}/messages/{message_id}": {"metadata": {"k": "v"}},
    "/v1/conversations/{conversation_id}": {"metadata": {"k": "v"}},
    "/v1/conversations/{conversation_id}/items": {"items": [{"role": "user", "content": "x"}]},
}


async def test_a_member_of_one_thread_gets_404_on_every_route_of_another(actors: Actors) -> None:
    """Thread B answers exactly as a thread that does not exist: its id leaks nothing, and nothing is written."""
    threads = await two_threads(actors)
    prober = await actors["prober.near"]
    before = await log_of(actors, threads.b)
    missing = (await prober.get("/threads/thread_doesnotexist")).json()["error"]
    assert missing["code"] == "thread_not_found"
    key = (missing["code"], missing["param"])
    leaks = []
    for route in filter(lambda r: r.names_a_thread, ROUTES):
        for thread_id in (threads.b, "thread_doesnotexist"):
            path = route.path(
                thread_id=thread_id,
                message_id=threads.b_message,
                actor_id="owner.near",
                conversation_id=thread_id,
                item_id=threads.b_message,
            )
            if route.method == "WS":
                answer: Any = await ws_close_code(actors, path, actors.keys["prober.near"], after=0)
                expected: Any = 4403
            else:
                response = await prober.request(route.method, path, json=BODIES.get(route.template, {}))
                answer = (response.status_code, response.json()["error"]["code"], response.json()["error"]["param"])
                # the same refusal, in this face's words for the thread
                conversation = "{conversation_id}" in route.template
                expected = (404, "conversation_not_found", "conversation_id") if conversation else (404, *key)
            if answer != expected:
                leaks.append((str(route), thread_id, answer))
            if route.template.endswith("/events") and (refusal := await sse_refusal(prober, path)) != expected:
                leaks.append((f"SSE {route}", thread_id, refusal))
    assert leaks == []
    assert await log_of(actors, threads.b) == before


async def test_nothing_of_another_thread_shows_in_ones_own_lists_and_inbox(actors: Actors) -> None:
    threads = await two_threads(actors)
    prober = await actors["prober.near"]
    assert [t["id"] for t in (await prober.get("/threads")).json()["data"]] == [threads.a]

    page = (await prober.get("/actors/me/events", params={"after": 0})).json()["data"]
    assert {e["thread_id"] for e in page} == {threads.a}
    # the live inbox replays in cursor order; B was written before A's marker, so B would show before it
    async for frame in sse_frames(prober, "/actors/me/events", params={"after": 0}):
        if "data" in frame:
            assert frame["data"]["thread_id"] == threads.a
            if frame["data"]["data"].get("id") == threads.a_marker:
                break
    async with ws_connect(actors.base_url, "/actors/me/events/ws", actors.keys["prober.near"]) as socket:
        while (event := json.loads(await socket.recv()))["data"].get("id") != threads.a_marker:
            assert event["thread_id"] == threads.a


async def test_a_message_of_another_thread_is_not_found_through_ones_own(actors: Actors) -> None:
    threads = await two_threads(actors)
    prober = await actors["prober.near"]
    before = await log_of(actors, threads.b)
    for route in filter(lambda r: "{message_id}" in r.template, ROUTES):
        path = route.path(thread_id=threads.a, message_id=threads.b_message)
        response = await prober.request(route.method, path, json=BODIES.get(route.template, {}))
        assert (response.status_code, response.json()["error"]["code"]) == (404, "message_not_found"), route
    inbox_post = {"thread_id": threads.b, "message": {"content": "x"}}
    reply = await ws_post(actors, "/actors/me/events/ws", actors.keys["prober.near"], inbox_post)
    assert (reply["status"], reply["error"]["error"]["code"]) == (404, "thread_not_found")
    assert await log_of(actors, threads.b) == before


# --- no write route lets a key act as another actor -------------------------------------------------

AS_OWNER = {"content": "x", "metadata": {"actor": "owner.near"}}
# Each write route, as mallory.near (a member of the thread, not its creator) trying to act as someone
# else: the body sent and the (code, param) of the 403. WebSocket routes send a post op instead.
IMPERSONATIONS: dict[ServedRoute, tuple[Any, str, str | None]] = {
    ServedRoute("POST", "/v1/threads"): ({"messages": [AS_OWNER]}, "actor_impersonation", "messages[0].metadata.actor"),
    ServedRoute("POST", "/v1/thread"): ({"messages": [AS_OWNER]}, "actor_impersonation", "messages[0].metadata.actor"),
    ServedRoute("POST", "/v1/threads/{thread_id}/messages"): (AS_OWNER, "actor_impersonation", "metadata.actor"),
    ServedRoute("POST", "/v1/threads/{thread_id}/messages/{message_id}"): (
        {"metadata": {"k": "v"}},
        "permission_denied",
        "message_id",
    ),
    ServedRoute("DELETE", "/v1/threads/{thread_id}/messages/{message_id}"): (None, "permission_denied", "message_id"),
    ServedRoute("POST", "/v1/threads/{thread_id}/actors"): (
        {"id": "owner.near", "capabilities": []},
        "permission_denied",
        "id",
    ),
    ServedRoute("DELETE", "/v1/threads/{thread_id}/actors/{actor_id:path}"): (None, "permission_denied", "actor_id"),
    ServedRoute("DELETE", "/v1/threads/{thread_id}"): (None, "permission_denied", "thread_id"),
    ServedRoute("POST", "/v1/capabilities"): ({"id": "x", "version": "1.0.0", "schema": {}}, "missing_scope", None),
    ServedRoute("POST", "/v1/keys"): ({"actor": "owner.near"}, "admin_required", None),
    ServedRoute("DELETE", "/v1/keys/{key_id}"): (None, "admin_required", None),
    ServedRoute("WS", "/v1/threads/{thread_id}/events/ws"): ({"message": AS_OWNER}, "actor_impersonation", None),
    ServedRoute("WS", "/v1/actors/me/events/ws"): ({"message": AS_OWNER}, "actor_impersonation", None),
    ServedRoute("DELETE", "/v1/conversations/{conversation_id}/items/{item_id}"): (
        None,
        "permission_denied",
        "item_id",
    ),
    ServedRoute("DELETE", "/v1/conversations/{conversation_id}"): (None, "permission_denied", "conversation_id"),
    ServedRoute("POST", "/v1/webhooks"): (
        {"url": "https://hooks.example.com/aitp", "actor": "owner.near"},
        "permission_denied",
        "actor",
    ),
    ServedRoute("PUT", "/v1/actors/{actor_id}/profile"): ({"display_name": "Shop"}, "permission_denied", "actor"),
    ServedRoute("PUT", "/v1/actors/{actor_id:path}/contact_policy"): (
        {"policy": "anyone"},
        "permission_denied",
        "actor",
    ),
    ServedRoute("POST", "/v1/sign-in-codes"): ({"actor": "owner.near"}, "permission_denied", "actor"),
    ServedRoute("POST", "/v1/threads/{thread_id}/activity"): (
        {"state": "working", "actor": "owner.near"},
        "actor_impersonation",
        "actor",
    ),
    ServedRoute("POST", "/v1/customer_sessions"): (
        {"customer": "1", "shop": "owner.near"},
        "permission_denied",
        "shop",
    ),
    ServedRoute("PUT", "/v1/customer_sessions/settings"): (
        {"anonymous": True, "shop": "owner.near"},
        "permission_denied",
        "shop",
    ),
}
# Write routes with no actor to impersonate: a thread's metadata belongs to all its members alike, and a
# conversation item has no author field (the key's actor writes it).
NO_ACTOR = {
    # the key's own actor, always: its profile and contact policy, a WebSocket ticket; a sign-in code names its
    # actor itself, and a sign-in with a signed challenge proves its actor
    ServedRoute("PUT", "/v1/actors/me/profile"),
    ServedRoute("PUT", "/v1/actors/me/contact_policy"),
    ServedRoute("POST", "/v1/auth/challenge"),
    ServedRoute("POST", "/v1/auth/token"),
    ServedRoute("POST", "/v1/tickets"),
    ServedRoute("POST", "/v1/sign-in"),
    ServedRoute("POST", "/v1/customer_sessions/anonymous"),
    ServedRoute("POST", "/v1/threads/{thread_id}"),
    ServedRoute("POST", "/v1/conversations"),
    ServedRoute("POST", "/v1/conversations/{conversation_id}"),
    ServedRoute("POST", "/v1/conversations/{conversation_id}/items"),
}


# Write routes on an object only its actor (or an admin) sees: another key gets 404, as for an object that
# does not exist (tests/deliveries/test_webhooks.py, an actor manages its own webhooks).
OWN_OBJECTS = {
    ServedRoute("PATCH", "/v1/webhooks/{webhook_id}"),
    ServedRoute("DELETE", "/v1/webhooks/{webhook_id}"),
    ServedRoute("POST", "/v1/webhooks/{webhook_id}/rotate_secret"),
    ServedRoute("POST", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"),
    ServedRoute("POST", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/cancel"),
}


def test_the_impersonation_table_names_every_write_route() -> None:
    assert {r for r in ROUTES if r.writes} == set(IMPERSONATIONS) | NO_ACTOR | OWN_OBJECTS


async def test_no_write_route_lets_a_key_act_as_another_actor(actors: Actors) -> None:
    owner, mallory = await actors["owner.near"], await actors["mallory.near"]
    await actors["shop.near"]
    body = {"actors": [{"id": "shop.near"}, {"id": "mallory.near"}], "messages": ["mine"]}
    thread_id = (await owner.post("/threads", json=body)).json()["id"]
    message_id = (await owner.get(f"/threads/{thread_id}/messages")).json()["data"][0]["id"]
    admin = actors.client(ADMIN_KEY)
    key_id = (await admin.get("/keys")).json()["data"][0]["id"]
    before = await log_of(actors, thread_id), (await admin.get("/keys")).json(), (await owner.get("/threads")).json()

    allowed = []
    for route, (request, code, param) in IMPERSONATIONS.items():
        path = route.path(
            thread_id=thread_id,
            message_id=message_id,
            actor_id="shop.near",
            key_id=key_id,
            conversation_id=thread_id,
            item_id=message_id,
        )
        if route.method == "WS":
            frame = {**request, "thread_id": thread_id}
            reply = await ws_post(actors, path, actors.keys["mallory.near"], frame)
            answer: tuple[Any, ...] = (reply.get("status"), reply.get("error", {}).get("error", {}).get("code"))
            expected: tuple[Any, ...] = (403, code)
        else:
            response = await mallory.request(route.method, path, json=request)
            error = response.json().get("error") or {}
            answer = (response.status_code, error.get("type"), error.get("code"), error.get("param"))
            expected = (403, "permission_error", code, param)
        if answer != expected:
            allowed.append((str(route), answer))
    assert allowed == []
    after = await log_of(actors, thread_id), (await admin.get("/keys")).json(), (await owner.get("/threads")).json()
    assert after == before  # nothing was written as anyone
