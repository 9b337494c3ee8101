"""A revoked key loses its open streams, not only its next requests, on every instance sharing the store.

Specification: revoking a key (through the API of this instance or another, or `aitp keys revoke`) closes
its WebSockets with 4401 and ends its SSE streams with `event: end` naming the reason, within the
principal cache's TTL (at once through this instance's API); other keys' streams stay open. A post over
a socket re-checks the key: once revoked, it is refused (401) and nothing is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from aitp.principals import PRINCIPAL_TTL
from aitp.services.keys import revoke_key
from aitp.store import Store
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY, Backend
from tests.support.live import sse_frames, ws_connect, ws_events

REVOKED = "the API key was revoked"
CLOSE_WITHIN = 10.0  # seconds: generous; the server's bound is PRINCIPAL_TTL (1 s) after the revocation


def admin_client(server: ServerProcess) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"})


async def new_key(admin: httpx.AsyncClient, actor: str) -> dict[str, Any]:
    response = await admin.post("/keys", json={"actor": actor})
    assert response.status_code == 200, response.text
    return response.json()


async def post(server: ServerProcess, key: str, thread_id: str, text: str) -> None:
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}) as c:
        response = await c.post(f"/threads/{thread_id}/messages", json={"content": text})
        assert response.status_code == 200, response.text


async def close_of(ws: Any) -> tuple[int, str]:
    """Read until the server closes the socket: its close code and reason."""
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await ws.recv()
    assert closed.value.rcvd is not None, "closed without a close frame"
    return closed.value.rcvd.code, closed.value.rcvd.reason


async def sse_until_end(server: ServerProcess, key: str, path: str, opened: asyncio.Event) -> list[dict[str, Any]]:
    """The SSE frames of `path` (keep-alives left out) until the server ends the stream."""
    frames = []
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=headers, timeout=60) as client:
        async for frame in sse_frames(client, path):
            if "comment" not in frame:
                frames.append(frame)
                opened.set()
    return frames


class Subscribers:
    """alice follows a thread over a WebSocket and SSE, and her inbox over a WebSocket; bob follows the
    thread over a WebSocket. All on `server`."""

    def __init__(self, server: ServerProcess, alice: str, bob: str, thread_id: str) -> None:
        self.server, self.alice, self.bob, self.thread_id = server, alice, bob, thread_id

    async def __aenter__(self) -> Subscribers:
        self._stack = contextlib.AsyncExitStack()
        connect = self._stack.enter_async_context
        path = f"/threads/{self.thread_id}/events"
        self.alice_ws = await connect(ws_connect(self.server.base_url, path + "/ws", self.alice))
        self.alice_inbox = await connect(ws_connect(self.server.base_url, "/actors/me/events/ws", self.alice))
        self.bob_ws = await connect(ws_connect(self.server.base_url, path + "/ws", self.bob, params={"after": 1}))
        opened = asyncio.Event()
        self.alice_sse = asyncio.create_task(sse_until_end(self.server, self.alice, path, opened))
        await asyncio.wait_for(opened.wait(), 10)
        # every stream is live: each gets a message posted now
        await post(self.server, self.bob, self.thread_id, "before")
        await ws_events(self.alice_ws, 2)  # thread.created, then the message
        await ws_events(self.bob_ws, 1)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.alice_sse.cancel()
        await asyncio.gather(self.alice_sse, return_exceptions=True)
        await self._stack.aclose()

    async def assert_alices_closed_and_bobs_open(self) -> None:
        async def closed() -> None:
            assert await close_of(self.alice_ws) == (4401, REVOKED)
            assert await close_of(self.alice_inbox) == (4401, REVOKED)
            frames = await self.alice_sse  # it ended: the server closed the response
            assert frames[-1] == {"event": "end", "data": {"reason": REVOKED}}

        await asyncio.wait_for(closed(), CLOSE_WITHIN)
        await post(self.server, self.bob, self.thread_id, "after")
        [event] = await asyncio.wait_for(ws_events(self.bob_ws, 1), 10)
        assert event["data"]["content"][0]["text"]["value"] == "after"


async def test_revoking_a_key_through_the_api_closes_its_streams_and_no_others(
    serve_backend: Callable[..., ServerProcess],
) -> None:
    server = serve_backend(AITP_RATE_LIMIT="0")
    async with admin_client(server) as admin:
        alice, bob = await new_key(admin, "alice"), await new_key(admin, "bob")
        async with httpx.AsyncClient(base_url=server.base_url + "/v1") as client:
            created = await client.post(
                "/threads", json={"actors": [{"id": "bob"}]}, headers={"Authorization": f"Bearer {alice['key']}"}
            )
        tid = created.json()["id"]
        async with Subscribers(server, alice["key"], bob["key"], tid) as subscribers:
            assert (await admin.delete(f"/keys/{alice['id']}")).status_code == 200
            await subscribers.assert_alices_closed_and_bobs_open()


@pytest.mark.parametrize("revoked_by", ["another instance", "aitp keys revoke"])
async def test_a_key_revoked_elsewhere_loses_its_streams_here_within_the_ttl(
    backend: Backend, tmp_path: Path, revoked_by: str
) -> None:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_RATE_LIMIT": "0"}
    here = start_server(backend.url, tmp_path / "here.log", env)
    other = start_server(backend.url, tmp_path / "other.log", env) if revoked_by == "another instance" else None
    try:
        async with admin_client(here) as admin:
            alice, bob = await new_key(admin, "alice"), await new_key(admin, "bob")
            created = await admin.post("/threads", json={"actors": [{"id": "alice"}, {"id": "bob"}]})
        async with Subscribers(here, alice["key"], bob["key"], created.json()["id"]) as subscribers:
            if other is not None:
                async with admin_client(other) as admin_there:
                    assert (await admin_there.delete(f"/keys/{alice['id']}")).status_code == 200
            else:
                command = [sys.executable, "-m", "aitp", "keys", "--store", backend.url, "revoke", alice["id"]]
                done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
            await subscribers.assert_alices_closed_and_bobs_open()
    finally:
        here.stop()
        if other is not None:
            other.stop()


async def test_a_post_over_the_socket_after_its_key_is_revoked_is_refused_and_not_stored(
    serve_backend: Callable[..., ServerProcess], store: Store
) -> None:
    server = serve_backend(AITP_RATE_LIMIT="0")
    async with admin_client(server) as admin:
        alice = await new_key(admin, "alice")
        tid = (await admin.post("/threads", json={"actors": [{"id": "alice"}]})).json()["id"]
        async with ws_connect(server.base_url, f"/threads/{tid}/events/ws", alice["key"]) as ws:
            await ws.send(json.dumps({"op": "post", "ref": "before", "message": {"content": "before"}}))
            while (reply := json.loads(await ws.recv())).get("ref") != "before":
                pass
            assert reply["op"] == "posted"
            await asyncio.sleep(PRINCIPAL_TTL + 0.2)  # the server no longer remembers the key: it reads the store
            await revoke_key(store, alice["id"])  # as `aitp keys revoke` does, in another process than the server's
            await ws.send(json.dumps({"op": "post", "ref": "after", "message": {"content": "after"}}))
            try:
                while (reply := json.loads(await ws.recv())).get("ref") != "after":
                    pass
            except websockets.ConnectionClosed as closed:
                # the server's periodic check of open streams' keys got there first: closed before reading it
                assert closed.rcvd is not None and closed.rcvd.code == 4401
            else:
                refused = (reply["op"], reply["status"], reply["error"]["error"]["code"])
                assert refused == ("error", 401, "invalid_api_key")
                assert await close_of(ws) == (4401, REVOKED)  # and its streams end
        messages = (await admin.get(f"/threads/{tid}/messages", params={"order": "asc"})).json()["data"]
    assert [m["content"][0]["text"]["value"] for m in messages] == ["before"]
