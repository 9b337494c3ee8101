"""Idempotent writes: a POST retried with the same `Idempotency-Key` returns the first response.

Same ids, same status, `Idempotent-Replayed: true`, and no second write: the thread's event log shows
one event. A key is scoped per caller, bound to one request (method, path, body), and kept in the
store, so retries after a restart are safe too.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from aitp.app import create_app
from aitp.bindings.http.context import ContextMiddleware
from aitp.bindings.http.idempotency import Idempotent, IdempotentWrites
from aitp.bindings.openai_threads import errors
from aitp.bindings.openai_threads.routes import NoKeyNeeded
from aitp.capabilities.registry import Registry, default_directory
from aitp.client import AitpClient, Unprocessable
from aitp.config import Settings
from aitp.events.hub import Hub
from aitp.runtime import Runtime
from aitp.services.idempotency import PENDING_TIMEOUT, fingerprint
from aitp.store import Store
from aitp.store.idempotency import IdempotencyRecord
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY, API
from tests.support.live import ws_connect

KEY = "Idempotency-Key"


def keyed(key: str) -> dict[str, str]:
    return {KEY: key}


async def event_count(client: httpx.AsyncClient, thread_id: str) -> int:
    response = await client.get(f"/threads/{thread_id}/events", params={"after": 0, "limit": 100})
    assert response.status_code == 200, response.text
    return len(response.json()["data"])


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["error"]


# --- every POST route ---------------------------------------------------------------------------


@dataclass
class Write:
    """One POST to repeat: who sends it, where, and the thread whose log must not grow."""

    client: httpx.AsyncClient
    path: str
    body: dict[str, Any]
    thread_id: str | None  # None: the write creates the thread (read its id from the response)


async def _member_thread(api: API) -> tuple[httpx.AsyncClient, str]:
    user = await api.actor("user.near")
    await api.known("shop.near")
    thread = await user.post("/threads", json={"actors": [{"id": "shop.near"}]})
    return user, thread.json()["id"]


async def create_thread(api: API) -> Write:
    return Write(await api.actor("user.near"), "/threads", {"messages": ["socks?"]}, None)


async def create_thread_t01(api: API) -> Write:
    await api.known("shop.near")
    body = {"actors": [{"id": "shop.near"}], "messages": ["socks?"]}
    return Write(await api.actor("user.near"), "/thread", body, None)


async def modify_thread(api: API) -> Write:
    user, thread_id = await _member_thread(api)
    return Write(user, f"/threads/{thread_id}", {"metadata": {"topic": "socks"}}, thread_id)


async def create_message(api: API) -> Write:
    user, thread_id = await _member_thread(api)
    return Write(user, f"/threads/{thread_id}/messages", {"content": "size 42"}, thread_id)


async def modify_message(api: API) -> Write:
    user, thread_id = await _member_thread(api)
    message = (await user.post(f"/threads/{thread_id}/messages", json={"content": "hi"})).json()
    return Write(user, f"/threads/{thread_id}/messages/{message['id']}", {"metadata": {"tag": "x"}}, thread_id)


async def put_actor(api: API) -> Write:
    user, thread_id = await _member_thread(api)
    await api.known("courier.near")
    return Write(user, f"/threads/{thread_id}/actors", {"id": "courier.near"}, thread_id)


WRITES = [create_thread, create_thread_t01, modify_thread, create_message, modify_message, put_actor]


@pytest.mark.parametrize("make", WRITES, ids=[w.__name__ for w in WRITES])
async def test_a_retried_write_returns_the_first_response_and_writes_once(
    api: API, make: Callable[[API], Awaitable[Write]]
) -> None:
    write = await make(api)
    first = await write.client.post(write.path, json=write.body, headers=keyed("retry-1"))
    assert first.status_code == 200, first.text
    thread_id = write.thread_id or first.json()["id"]
    events = await event_count(write.client, thread_id)

    again = await write.client.post(write.path, json=write.body, headers=keyed("retry-1"))

    assert again.status_code == first.status_code
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert await event_count(write.client, thread_id) == events


async def test_a_retried_thread_creation_creates_one_thread(api: API) -> None:
    user = await api.actor("user.near")
    first = await user.post("/threads", json={}, headers=keyed("t"))
    again = await user.post("/threads", json={}, headers=keyed("t"))

    listed = (await user.get("/threads")).json()["data"]

    assert [t["id"] for t in listed] == [first.json()["id"]] == [again.json()["id"]]


async def test_a_retried_capability_registration_replays_its_201(api: API) -> None:
    schema = {"type": "object", "required": ["$schema"], "properties": {"$schema": {"type": "string"}}}
    body = {"id": "acme-ping", "version": "1.0.0", "schema": schema, "examples": []}

    first = await api.admin.post("/capabilities", json=body, headers=keyed("register"))
    again = await api.admin.post("/capabilities", json=body, headers=keyed("register"))
    unkeyed = await api.admin.post("/capabilities", json=body)

    assert (first.status_code, again.status_code, unkeyed.status_code) == (201, 201, 200)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()


async def test_without_a_key_every_post_writes(api: API) -> None:
    write = await create_message(api)
    first = await write.client.post(write.path, json=write.body)
    second = await write.client.post(write.path, json=write.body)

    assert first.json()["id"] != second.json()["id"]


async def test_a_json_body_matches_whatever_its_key_order_and_spacing(api: API) -> None:
    write = await create_message(api)
    headers = {**keyed("json"), "Content-Type": "application/json"}
    first = await write.client.post(write.path, content=b'{"content": "hi", "metadata": {"a": "1"}}', headers=headers)
    again = await write.client.post(write.path, content=b'{"metadata":{"a":"1"},"content":"hi"}', headers=headers)

    assert first.status_code == 200, first.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]


# --- misuse -----------------------------------------------------------------------------------------


async def test_the_same_key_with_another_body_is_refused(api: API) -> None:
    write = await create_message(api)
    await write.client.post(write.path, json={"content": "size 42"}, headers=keyed("k"))
    events = await event_count(write.client, write.thread_id or "")

    error = error_of(await write.client.post(write.path, json={"content": "size 43"}, headers=keyed("k")), 422)

    assert (error["code"], error["param"]) == ("idempotency_key_reused", KEY)
    assert await event_count(write.client, write.thread_id or "") == events


async def test_the_same_key_on_another_path_is_refused(api: API) -> None:
    write = await create_message(api)
    await write.client.post(write.path, json=write.body, headers=keyed("k"))

    error = error_of(await write.client.post("/threads", json=write.body, headers=keyed("k")), 422)

    assert (error["code"], error["param"]) == ("idempotency_key_reused", KEY)
    assert "POST /v1/threads/" in error["message"]


async def test_keys_are_scoped_per_caller(api: API) -> None:
    user, thread_id = await _member_thread(api)
    shop = await api.actor("shop.near")
    path = f"/threads/{thread_id}/messages"

    mine = await user.post(path, json={"content": "hi"}, headers=keyed("shared"))
    theirs = await shop.post(path, json={"content": "hi"}, headers=keyed("shared"))

    assert theirs.status_code == 200
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["id"] != mine.json()["id"]


@pytest.mark.parametrize(
    "value",
    [b"", b"k" * 256, "cl\u00e9".encode(), b"tab\there"],
    ids=["empty", "too-long", "not-ascii", "control-character"],
)
async def test_a_malformed_key_is_refused_naming_the_header(api: API, value: bytes) -> None:
    write = await create_message(api)
    events = await event_count(write.client, write.thread_id or "")

    error = error_of(await write.client.post(write.path, json=write.body, headers=[(b"Idempotency-Key", value)]), 400)

    assert (error["code"], error["param"]) == ("invalid_idempotency_key", KEY)
    assert await event_count(write.client, write.thread_id or "") == events


async def test_a_key_of_255_printable_characters_is_accepted(api: API) -> None:
    write = await create_message(api)
    key = ("a b~" * 64)[:255]

    first = await write.client.post(write.path, json=write.body, headers=keyed(key))
    again = await write.client.post(write.path, json=write.body, headers=keyed(key))

    assert again.json()["id"] == first.json()["id"]


async def test_two_keys_on_one_request_are_refused(api: API) -> None:
    write = await create_message(api)
    headers = [(b"Idempotency-Key", b"a"), (b"Idempotency-Key", b"b")]

    error = error_of(await write.client.post(write.path, json=write.body, headers=headers), 400)

    assert error["param"] == KEY


async def test_an_unauthenticated_request_gets_its_401_before_its_key_is_looked_at(api: API) -> None:
    write = await create_message(api)
    stranger = api.client("aitp_not_a_key")

    error = error_of(await stranger.post(write.path, json=write.body, headers=keyed("")), 401)

    assert error["type"] == "authentication_error"


async def test_a_refusal_is_kept_and_replayed_too(api: API) -> None:
    # A 4xx answers the request as it was: the retry gets the same answer even if things changed since.
    owner, thread_id = await _member_thread(api)
    courier = await api.actor("courier.near")
    path = f"/threads/{thread_id}/messages"
    assert (await courier.post(path, json={"content": "hi"}, headers=keyed("k"))).status_code == 404
    await owner.post(f"/threads/{thread_id}/actors", json={"id": "courier.near"})

    again = await courier.post(path, json={"content": "hi"}, headers=keyed("k"))

    assert error_of(again, 404)["code"] == "thread_not_found"
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (await courier.post(path, json={"content": "hi"}, headers=keyed("new"))).status_code == 200


async def test_a_body_over_the_size_limit_is_refused_and_not_remembered(api: API) -> None:
    write = await create_message(api)
    api.settings_override(max_body_bytes=200)

    refused = await write.client.post(write.path, json={"content": "x" * 300}, headers=keyed("big"))
    accepted = await write.client.post(write.path, json={"content": "small"}, headers=keyed("big"))

    assert refused.status_code == 413
    assert accepted.status_code == 200, accepted.text


# --- concurrency --------------------------------------------------------------------------------------


async def test_concurrent_duplicates_write_once(api: API) -> None:
    write = await create_message(api)
    events = await event_count(write.client, write.thread_id or "")

    responses = await asyncio.gather(
        *(write.client.post(write.path, json=write.body, headers=keyed("race")) for _ in range(4))
    )

    assert await event_count(write.client, write.thread_id or "") == events + 1
    written = {r.json()["id"] for r in responses if r.status_code == 200}
    assert len(written) == 1
    for response in responses:
        if response.status_code != 200:
            assert error_of(response, 409)["code"] == "idempotency_key_in_use"


async def test_a_request_with_a_key_in_use_gets_a_retryable_409(api: API, store: Store) -> None:
    created = (await api.admin.post("/keys", json={"actor": "user.near"})).json()
    user = api.client(created["key"])
    body = {"content": "hi"}
    thread_id = (await user.post("/threads", json={})).json()["id"]
    path = f"/threads/{thread_id}/messages"
    # another instance is running this very request right now
    now = time.time()
    running = IdempotencyRecord(
        scope=created["id"],
        key="busy",
        fingerprint=fingerprint("POST", "/v1" + path, json.dumps(body).encode()),
        token=uuid.uuid4().hex,
        created_at=now,
        expires_at=now + 86400,
    )
    assert await store.idempotency.claim(running, pending_timeout=PENDING_TIMEOUT) is None

    response = await user.post(path, json=body, headers=keyed("busy"))

    assert (error_of(response, 409)["code"], response.headers["Retry-After"]) == ("idempotency_key_in_use", "1")
    assert await event_count(user, thread_id) == 1


# --- API keys: a secret is never stored -------------------------------------------------------------------


async def test_a_replayed_key_creation_creates_no_second_key_and_does_not_show_the_secret(
    api: API, store: Store
) -> None:
    first = await api.admin.post("/keys", json={"actor": "user.near"}, headers=keyed("new-key"))
    assert first.status_code == 200
    created = first.json()

    again = await api.admin.post("/keys", json={"actor": "user.near"}, headers=keyed("new-key"))

    error = error_of(again, 409)
    assert (error["code"], error["param"]) == ("idempotency_secret_not_replayable", KEY)
    assert created["id"] in error["message"]
    assert created["key"] not in again.text
    keys = (await api.admin.get("/keys")).json()["data"]
    assert [k["id"] for k in keys if k["actor"] == "user.near"] == [created["id"]]
    # the record kept in the store holds no secret either
    probe = IdempotencyRecord("admin", "new-key", "probe", "probe", time.time(), time.time() + 60)
    held = await store.idempotency.claim(probe, pending_timeout=PENDING_TIMEOUT)
    assert held is not None and held.body is not None
    assert created["key"] not in held.body
    assert json.loads(held.body)["id"] == created["id"]


# --- failures release the key ----------------------------------------------------------------------


class Flaky:
    """An ASGI app that fails the first `failures` times it runs (raising, or answering `status`)."""

    def __init__(self, failures: int, status: int | None = None) -> None:
        self.failures = failures
        self.status = status
        self.runs = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await Request(scope, receive).json()
        self.runs += 1
        response: Response = JSONResponse({"run": self.runs, "echo": body})
        if self.runs <= self.failures:
            if self.status is None:
                raise RuntimeError("the route crashed")
            response = JSONResponse({"error": {"message": "busy"}}, status_code=self.status)
        await response(scope, receive, send)


def guarded(app: Flaky, store: Store, **settings: Any) -> httpx.AsyncClient:
    """`app` as the route of a declared idempotent endpoint, behind the context middleware (key, rate, body)."""
    runtime = Runtime(
        store=store,
        registry=Registry.from_directory(default_directory()),
        settings=Settings(admin_key=ADMIN_KEY, **settings),
        hub=Hub(store),
    )
    guard = ContextMiddleware(
        IdempotentWrites(app, Idempotent()), runtime, public=NoKeyNeeded([]), refuse=errors.refusal
    )
    transport = httpx.ASGITransport(app=guard, raise_app_exceptions=False)
    return httpx.AsyncClient(
        transport=transport, base_url="http://aitp.test/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )


@pytest.mark.parametrize("status", [None, 500, 503, 429], ids=["crash", "500", "503", "429"])
async def test_a_request_that_failed_is_run_again_on_retry(store: Store, status: int | None) -> None:
    app = Flaky(failures=1, status=status)
    client = guarded(app, store)

    failed = await client.post("/things", json={"n": 1}, headers=keyed("k"))
    retried = await client.post("/things", json={"n": 1}, headers=keyed("k"))
    replayed = await client.post("/things", json={"n": 1}, headers=keyed("k"))

    assert failed.status_code == (status or 500)
    assert (retried.status_code, retried.json()["run"]) == (200, 2)
    assert (replayed.json()["run"], replayed.headers["Idempotent-Replayed"]) == (2, "true")
    assert app.runs == 2


async def test_only_routes_that_declare_it_take_a_key(api: API) -> None:
    """Every POST of the API that takes a key declares it; a route that does not (a DELETE) runs each time, the
    header ignored."""
    user, thread_id = await _member_thread(api)
    message = (await user.post(f"/threads/{thread_id}/messages", json={"content": "hi"})).json()
    path = f"/threads/{thread_id}/messages/{message['id']}"

    first = await user.delete(path, headers=keyed("d"))
    again = await user.delete(path, headers=keyed("d"))

    assert (first.status_code, again.status_code) == (200, 404)
    assert "Idempotent-Replayed" not in again.headers
    documented = create_app(Settings(store_url="sqlite:///:memory:")).openapi()["paths"]
    takes_it = {
        (method.upper(), path)
        for path, operations in documented.items()
        for method, operation in operations.items()
        if any(parameter["name"] == KEY for parameter in operation.get("parameters", []))
    }
    posts = {("POST", path) for path, operations in documented.items() if "post" in operations}
    # the public POSTs: no caller to keep a record for, and a sign-in code (a challenge's nonce) works once anyway
    public = {
        ("POST", "/v1/sign-in"),
        ("POST", "/v1/auth/challenge"),
        ("POST", "/v1/auth/token"),
        ("POST", "/v1/customer_sessions/anonymous"),
    }
    assert takes_it == posts - public and len(posts) == 23


async def test_a_body_over_the_size_limit_is_never_buffered(store: Store) -> None:
    app = Flaky(failures=0)
    client = guarded(app, store, max_body_bytes=100)

    response = await client.post("/things", json={"n": "x" * 200}, headers=keyed("k"))

    assert response.status_code == 413
    assert app.runs == 0


# --- across a restart ---------------------------------------------------------------------------------


def test_a_retry_after_a_restart_is_replayed(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'aitp.db'}"
    env = {"AITP_ADMIN_KEY": ADMIN_KEY}
    auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
    headers = {**auth, KEY: "across-restarts"}

    server = start_server(store_url, tmp_path / "first.log", env)
    try:
        thread_id = httpx.post(f"{server.base_url}/v1/threads", json={}, headers=auth).json()["id"]
        path = f"{server.base_url}/v1/threads/{thread_id}/messages"
        first = httpx.post(path, json={"content": "once"}, headers=headers)
        assert first.status_code == 200, first.text
    finally:
        server.stop()

    server = start_server(store_url, tmp_path / "second.log", env)
    try:
        path = f"{server.base_url}/v1/threads/{thread_id}/messages"
        again = httpx.post(path, json={"content": "once"}, headers=headers)
        messages = httpx.get(path, headers=auth).json()["data"]
    finally:
        server.stop()

    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert [m["id"] for m in messages] == [first.json()["id"]]


# --- the Python client ------------------------------------------------------------------------------------


async def test_the_client_sends_an_idempotency_key_when_given_one(store: Store) -> None:
    transport = httpx.ASGITransport(app=create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store))
    async with AitpClient("http://aitp.test", ADMIN_KEY, transport=transport) as user:
        thread = await user.create_thread(idempotency_key="thread-1")
        assert (await user.create_thread(idempotency_key="thread-1")).id == thread.id
        first = await user.create_message(thread.id, "hi", idempotency_key="message-1")
        again = await user.create_message(thread.id, "hi", idempotency_key="message-1")
        with pytest.raises(Unprocessable) as reused:
            await user.create_message(thread.id, "hello", idempotency_key="message-1")
        messages = await user.list_messages(thread.id)

    assert again.id == first.id
    assert (reused.value.code, reused.value.param) == ("idempotency_key_reused", KEY)
    assert [m.id for m in messages.data] == [first.id]


# --- posts over the WebSocket --------------------------------------------------------------------------


async def test_a_post_over_the_websocket_with_a_key_is_written_once(live_server: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1", headers=headers) as admin:
        thread_id = (await admin.post("/threads", json={})).json()["id"]
        frame = {"op": "post", "idempotency_key": "ws-1", "message": {"content": "once"}}
        async with ws_connect(live_server.base_url, f"/threads/{thread_id}/events/ws", ADMIN_KEY) as socket:
            replies = []
            for ref, sent in enumerate([frame, frame, {**frame, "message": {"content": "twice"}}]):
                await socket.send(json.dumps({**sent, "ref": ref}))
                while (reply := json.loads(await socket.recv())).get("ref") != ref:
                    pass  # an event frame
                replies.append(reply)
        # the same key on the HTTP POST of the same message: the same record
        over_http = await admin.post(f"/threads/{thread_id}/messages", json={"content": "once"}, headers=keyed("ws-1"))
        messages = (await admin.get(f"/threads/{thread_id}/messages")).json()["data"]

    first, again, reused = replies
    assert first["op"] == again["op"] == "posted"
    assert again["message"] == first["message"]
    assert (reused["op"], reused["status"]) == ("error", 422)
    assert (reused["error"]["error"]["code"], reused["error"]["error"]["param"]) == (
        "idempotency_key_reused",
        "idempotency_key",
    )
    assert over_http.headers["Idempotent-Replayed"] == "true"
    assert over_http.json() == first["message"]
    assert [m["id"] for m in messages] == [first["message"]["id"]]


async def test_a_malformed_key_on_a_websocket_post_is_refused(live_server: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1", headers=headers) as admin:
        thread_id = (await admin.post("/threads", json={})).json()["id"]
        async with ws_connect(live_server.base_url, f"/threads/{thread_id}/events/ws", ADMIN_KEY) as socket:
            await socket.send(json.dumps({"op": "post", "ref": 1, "idempotency_key": 7, "message": {"content": "x"}}))
            while (reply := json.loads(await socket.recv())).get("ref") != 1:
                pass
        messages = (await admin.get(f"/threads/{thread_id}/messages")).json()["data"]

    assert (reply["status"], reply["error"]["error"]["param"]) == (400, "idempotency_key")
    assert messages == []
