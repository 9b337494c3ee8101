"""Per-key rate limit, and live streams per key.

Specification: each API key may make `AITP_RATE_BURST` requests at once and `AITP_RATE_LIMIT` per second
sustained (a token bucket per key, in this process); one more is 429 `rate_limit_exceeded`, a
`rate_limit_error` envelope with an integer `Retry-After` in seconds, and does nothing; tokens come back
with time; other keys are unaffected; `AITP_RATE_LIMIT=0` turns it off. A key may hold
`AITP_MAX_STREAMS_PER_KEY` live streams (WebSocket and SSE together); one more WebSocket is closed with
4429 (SSE: 429 `too_many_connections`), and closing a stream frees its slot. WebSocket connects and
posts over the socket count as requests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from aitp.bindings.openai_threads.close_codes import CLOSE_TOO_MANY_REQUESTS
from aitp.errors import RateLimited
from aitp.gate import Gate
from aitp.services.rate_limit import RateLimiter
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY, API
from tests.support.live import sse_frames, ws_connect


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(api: API) -> FakeClock:
    """The app's rate limiter, driven by a fake clock."""
    clock = FakeClock()
    api._app.state.runtime.state(Gate).limiter = RateLimiter(clock=clock)
    return clock


def assert_rate_limited(response: httpx.Response, retry_after: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == str(retry_after)
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("rate_limit_error", "rate_limit_exceeded", None)
    assert f"Retry after {retry_after} s" in error["message"]


# ----------------------------------------------------------------------------------- the bucket


def test_a_bucket_allows_its_burst_then_says_how_long_to_wait() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    for _ in range(3):
        limiter.check("key", rate=2.0, burst=3)
    with pytest.raises(RateLimited) as refused:
        limiter.check("key", rate=2.0, burst=3)
    assert refused.value.retry_after == 1  # half a second, rounded up to whole seconds
    assert refused.value.headers == {"Retry-After": "1"}

    clock.advance(0.5)
    limiter.check("key", rate=2.0, burst=3)  # one token came back
    with pytest.raises(RateLimited):
        limiter.check("key", rate=2.0, burst=3)
    clock.advance(60)
    for _ in range(3):  # refilled up to the burst, not beyond
        limiter.check("key", rate=2.0, burst=3)
    with pytest.raises(RateLimited):
        limiter.check("key", rate=2.0, burst=3)


def test_retry_after_is_whole_seconds_until_the_next_token() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    limiter.check("key", rate=0.1, burst=1)
    with pytest.raises(RateLimited) as refused:
        limiter.check("key", rate=0.1, burst=1)
    assert refused.value.retry_after == 10
    clock.advance(9.5)
    with pytest.raises(RateLimited) as refused:
        limiter.check("key", rate=0.1, burst=1)
    assert refused.value.retry_after == 1
    clock.advance(0.5)
    limiter.check("key", rate=0.1, burst=1)


def test_a_rate_of_zero_means_no_limit() -> None:
    limiter = RateLimiter(clock=FakeClock())
    for _ in range(10_000):
        limiter.check("key", rate=0, burst=1)


# ------------------------------------------------------------------------------------- over HTTP


async def test_a_key_over_its_burst_gets_429_with_retry_after_until_tokens_refill(api: API, clock: FakeClock) -> None:
    alice = await api.actor("alice")
    api.settings_override(rate_limit=2.0, rate_burst=5)
    for _ in range(5):
        assert (await alice.get("/threads")).status_code == 200
    assert_rate_limited(await alice.get("/threads"), retry_after=1)
    assert_rate_limited(await alice.post("/threads", json={}), retry_after=1)

    clock.advance(0.5)  # one token at 2 per second
    assert (await alice.get("/threads")).status_code == 200
    assert_rate_limited(await alice.get("/threads"), retry_after=1)
    clock.advance(2.5)  # five tokens: the whole burst again
    for _ in range(5):
        assert (await alice.get("/threads")).status_code == 200
    assert_rate_limited(await alice.get("/threads"), retry_after=1)


async def test_a_refused_request_does_nothing(api: API, clock: FakeClock) -> None:
    alice = await api.actor("alice")
    tid = (await alice.post("/threads", json={})).json()["id"]
    api.settings_override(rate_limit=1.0, rate_burst=1)
    assert (await alice.post(f"/threads/{tid}/messages", json={"content": "one"})).status_code == 200
    assert_rate_limited(await alice.post(f"/threads/{tid}/messages", json={"content": "two"}), retry_after=1)
    clock.advance(1)
    messages = (await alice.get(f"/threads/{tid}/messages")).json()["data"]
    assert [m["content"][0]["text"]["value"] for m in messages] == ["one"]


async def test_each_key_has_its_own_bucket(api: API, clock: FakeClock) -> None:
    alice, bob = await api.actor("alice"), await api.actor("alice")  # two keys of one actor: two buckets
    carol = await api.actor("carol")
    api.settings_override(rate_limit=0.1, rate_burst=2)
    for _ in range(2):
        assert (await alice.get("/threads")).status_code == 200
    assert_rate_limited(await alice.get("/threads"), retry_after=10)
    assert (await bob.get("/threads")).status_code == 200
    assert (await carol.get("/threads")).status_code == 200
    assert (await api.admin.get("/keys")).status_code == 200


async def test_admin_keys_are_limited_too(api: API, clock: FakeClock) -> None:
    api.settings_override(rate_limit=1.0, rate_burst=3)
    for _ in range(3):
        assert (await api.admin.get("/keys")).status_code == 200
    assert_rate_limited(await api.admin.get("/keys"), retry_after=1)


async def test_rate_limit_zero_turns_it_off(api: API, clock: FakeClock) -> None:
    alice = await api.actor("alice")
    api.settings_override(rate_limit=0.0, rate_burst=1)
    for _ in range(20):
        assert (await alice.get("/threads")).status_code == 200


async def test_requests_without_a_valid_key_are_refused_before_counting(api: API, clock: FakeClock) -> None:
    api.settings_override(rate_limit=1.0, rate_burst=1)
    stranger = api.client("aitp_not_a_key")
    for _ in range(3):
        assert (await stranger.get("/threads")).status_code == 401
    assert (await api.admin.get("/keys")).status_code == 200


# ------------------------------------------------------------------------------- live streams


STREAMS = 3


def serve(tmp_path: Path, **env: str) -> ServerProcess:
    return start_server(
        f"sqlite:///{tmp_path / 'limited.db'}", tmp_path / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY, **env}
    )


@pytest.fixture
def stream_limited(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real server allowing 3 live streams per key (and no request rate limit)."""
    server = serve(tmp_path, AITP_MAX_STREAMS_PER_KEY=str(STREAMS), AITP_RATE_LIMIT="0")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def rate_limited(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real server allowing each key a burst of 4 requests that do not come back (0.001 per second)."""
    server = serve(tmp_path, AITP_RATE_LIMIT="0.001", AITP_RATE_BURST="4")
    try:
        yield server
    finally:
        server.stop()


async def new_key(server: ServerProcess, actor: str) -> str:
    async with httpx.AsyncClient(base_url=server.base_url + "/v1") as http:
        response = await http.post("/keys", json={"actor": actor}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        return response.json()["key"]


async def new_thread(server: ServerProcess, key: str) -> str:
    async with httpx.AsyncClient(base_url=server.base_url + "/v1") as http:
        response = await http.post("/threads", json={}, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200, response.text
        return response.json()["id"]


async def open_socket(stack: AsyncExitStack, server: ServerProcess, path: str, key: str) -> Any:
    """A WebSocket the server has taken on: the thread's first event has arrived on it."""
    socket = await stack.enter_async_context(ws_connect(server.base_url, path, key))
    assert json.loads(await asyncio.wait_for(socket.recv(), 10))["seq"] == 1
    return socket


async def refusal_code(server: ServerProcess, path: str, key: str) -> int | None:
    """The close code a new WebSocket gets at once, or None if it is taken on (then it is closed again)."""
    async with ws_connect(server.base_url, path, key) as socket:
        try:
            json.loads(await asyncio.wait_for(socket.recv(), 10))
        except websockets.ConnectionClosed as closed:
            assert closed.rcvd is not None
            return closed.rcvd.code
    return None


async def open_sse(stack: AsyncExitStack, server: ServerProcess, path: str, key: str) -> dict[str, Any]:
    """The first frame of an SSE stream (held open until `stack` closes), or {"status", "body"} if refused."""
    client = await stack.enter_async_context(
        httpx.AsyncClient(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    )
    frames = sse_frames(client, path)
    stack.push_async_callback(frames.aclose)
    return await anext(frames)


async def test_a_key_holds_at_most_max_streams_and_closing_one_frees_a_slot(stream_limited: ServerProcess) -> None:
    alice, bob = await new_key(stream_limited, "alice"), await new_key(stream_limited, "bob")
    tid = await new_thread(stream_limited, alice)
    await new_thread(stream_limited, bob)  # so that bob's inbox has an event to send
    path = f"/threads/{tid}/events/ws"
    async with AsyncExitStack() as stack:
        sockets = [await open_socket(stack, stream_limited, path, alice) for _ in range(STREAMS)]
        assert await refusal_code(stream_limited, path, alice) == CLOSE_TOO_MANY_REQUESTS
        assert await refusal_code(stream_limited, "/actors/me/events/ws", alice) == CLOSE_TOO_MANY_REQUESTS
        assert await refusal_code(stream_limited, "/actors/me/events/ws", bob) is None  # bob's slots are his

        await sockets[0].close()
        # the server frees the slot when it sees the close: wait for that, boundedly
        for _ in range(100):
            if await refusal_code(stream_limited, path, alice) is None:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("closing a WebSocket did not free its slot")


async def test_sse_streams_take_slots_too_and_over_the_limit_get_429(stream_limited: ServerProcess) -> None:
    alice = await new_key(stream_limited, "alice")
    tid = await new_thread(stream_limited, alice)
    async with AsyncExitStack() as stack:
        for _ in range(STREAMS - 1):
            await open_socket(stack, stream_limited, f"/threads/{tid}/events/ws", alice)
        first = await open_sse(stack, stream_limited, f"/threads/{tid}/events", alice)
        assert first["data"]["seq"] == 1
        assert await refusal_code(stream_limited, f"/threads/{tid}/events/ws", alice) == CLOSE_TOO_MANY_REQUESTS
        refused = await open_sse(stack, stream_limited, "/actors/me/events", alice)
    assert refused["status"] == 429
    error = refused["body"]["error"]
    assert (error["type"], error["code"], error["param"]) == ("rate_limit_error", "too_many_connections", None)


async def test_websocket_connects_and_posts_count_as_requests(rate_limited: ServerProcess) -> None:
    alice = await new_key(rate_limited, "alice")
    tid = await new_thread(rate_limited, alice)  # request 1 of 4
    async with AsyncExitStack() as stack:
        socket = await open_socket(stack, rate_limited, f"/threads/{tid}/events/ws", alice)  # 2
        for ref in (1, 2, 3):  # 3, 4, then refused
            await socket.send(json.dumps({"op": "post", "ref": ref, "message": {"content": f"m{ref}"}}))
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < 3:
            frame = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if "op" in frame:
                replies[frame["ref"]] = frame
    assert replies[1]["op"] == replies[2]["op"] == "posted"
    assert replies[3]["op"] == "error" and replies[3]["status"] == 429
    assert replies[3]["error"]["error"]["code"] == "rate_limit_exceeded"
    assert await refusal_code(rate_limited, f"/threads/{tid}/events/ws", alice) == CLOSE_TOO_MANY_REQUESTS
