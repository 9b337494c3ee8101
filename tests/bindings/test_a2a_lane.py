"""A2A's JSON-RPC endpoint answers refusals and failures as every route does.

Specification: `POST /a2a/{actor}` without a key, or with a wrong one, is 401; over the key's rate 429 with
`Retry-After`; a body declared or streamed over `AITP_MAX_BODY_BYTES` 413 `request_too_large` with
`Connection: close`; a failure nothing expected (here: the store went away) 500 `internal_error`; each
answer the same envelope, status and headers as the same refusal on a Threads API route.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from aitp.config import Settings
from aitp.gate import Gate
from aitp.services.rate_limit import RateLimiter
from tests.api.test_rate_limit import FakeClock
from tests.conftest import API

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
}
A2A = {"A2A-Version": "1.0"}
LIMIT = Settings().max_body_bytes


def answer(response: httpx.Response) -> tuple[int, dict[str, object], dict[str, str]]:
    """What a client can tell of a refusal: status, envelope, and the headers that say how to go on."""
    kept = {name: response.headers[name] for name in ("retry-after", "connection") if name in response.headers}
    return response.status_code, response.json(), kept


def on_root(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The same client addressing the server's root (the A2A face is not under /v1)."""
    return httpx.AsyncClient(transport=client._transport, base_url="http://aitp.test", headers=client.headers)


async def serve_shop(api: API) -> None:
    """`shop` opts in: its endpoint reads the body of what it is sent."""
    shop = on_root(await api.actor("shop"))
    assert (await shop.put("/a2a/shop/settings", json={"serve": True})).status_code == 200


async def chunks(first: bytes, size: int, count: int) -> AsyncIterator[bytes]:
    yield first
    for _ in range(count):
        yield b" " * size


async def test_no_key_or_a_wrong_one_is_401_as_on_any_route(api: API) -> None:
    for key in (None, "aitp_wrong"):
        client = on_root(api.client(key))
        lane = await client.post("/a2a/shop", json=SEND, headers=A2A)
        elsewhere = await client.post("/v1/threads", json={})
        assert lane.status_code == 401
        assert answer(lane) == answer(elsewhere)


async def test_over_the_rate_is_429_with_retry_after_as_on_any_route(api: API) -> None:
    api._app.state.runtime.state(Gate).limiter = RateLimiter(clock=FakeClock())
    alice = on_root(await api.actor("alice"))
    api.settings_override(rate_limit=1.0, rate_burst=1)
    assert (await alice.get("/v1/threads")).status_code == 200  # the one request of the burst
    lane = await alice.post("/a2a/shop", json=SEND, headers=A2A)
    elsewhere = await alice.post("/v1/threads", json={})
    assert lane.status_code == 429
    assert answer(lane) == answer(elsewhere)


async def test_a_body_declared_over_the_limit_is_413_unread_as_on_any_route(api: API) -> None:
    await serve_shop(api)
    alice = on_root(await api.actor("alice"))
    body = b"x" * (LIMIT + 1)  # not even JSON: the length alone refuses it
    lane = await alice.post("/a2a/shop", content=body, headers=A2A)
    elsewhere = await alice.post("/v1/threads", content=body)
    assert lane.status_code == 413 and lane.headers["connection"] == "close"
    assert answer(lane) == answer(elsewhere)


async def test_a_streamed_body_over_the_limit_is_413_as_on_any_route(api: API) -> None:
    await serve_shop(api)
    alice = on_root(await api.actor("alice"))
    size = 64 * 1024
    lane = await alice.post("/a2a/shop", content=chunks(b"{", size, LIMIT // size + 1), headers=A2A)
    elsewhere = await alice.post("/v1/threads", content=chunks(b"{", size, LIMIT // size + 1))
    assert lane.request.headers["transfer-encoding"] == "chunked"
    assert lane.status_code == 413
    assert answer(lane) == answer(elsewhere)


async def test_a_failure_under_the_route_is_the_500_envelope_as_on_any_route(api: API) -> None:
    alice = on_root(await api.actor("alice"))
    assert (await alice.get("/v1/threads")).status_code == 200  # the key is known: admitted from memory
    await api._app.state.runtime.store.close()  # the store goes away under the running app
    transport = httpx.ASGITransport(app=api._app, raise_app_exceptions=False)
    client = httpx.AsyncClient(transport=transport, base_url="http://aitp.test", headers=alice.headers)
    lane = await client.post("/a2a/not-known-yet", json=SEND, headers=A2A)
    elsewhere = await client.get("/v1/threads/thread_not_known_yet")
    assert lane.status_code == 500
    assert lane.json()["error"]["code"] == "internal_error"
    assert answer(lane) == answer(elsewhere)
