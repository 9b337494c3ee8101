"""Live thread events over WebSocket and SSE, against a real server process on every backend.

Specification: a subscriber gets every stored event after its cursor, then live events, with no gap and
no duplicate at the seam; it can drop and resume from its cursor; only members subscribe; a removed
member stops receiving; a consumer that cannot keep up is closed with a cursor to resume from.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY, Backend
from tests.support.live import RawWebSocket, sse_frames, ws_connect, ws_events


@pytest.fixture
def server(serve_backend: Callable[..., ServerProcess]) -> ServerProcess:
    # these tests post hundreds of messages per key as fast as they can: no rate limit
    return serve_backend(AITP_KEEPALIVE_SECONDS="1", AITP_RATE_LIMIT="0")


class Live:
    """HTTP clients of the live server, one per actor, and helpers."""

    def __init__(self, server: ServerProcess) -> None:
        self.base_url = server.base_url
        self.admin = httpx.AsyncClient(
            base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
        )
        self.keys: dict[str, str] = {}
        self._clients: list[httpx.AsyncClient] = [self.admin]

    async def actor(self, actor: str) -> httpx.AsyncClient:
        if actor not in self.keys:
            response = await self.admin.post("/keys", json={"actor": actor})
            self.keys[actor] = response.json()["key"]
        client = httpx.AsyncClient(
            base_url=self.base_url + "/v1", headers={"Authorization": f"Bearer {self.keys[actor]}"}, timeout=30
        )
        self._clients.append(client)
        return client

    async def thread(self, creator: httpx.AsyncClient, *actors: str) -> str:
        body = {"actors": [{"id": a} for a in actors]}
        response = await creator.post("/threads", json=body)
        assert response.status_code == 200, response.text
        return response.json()["id"]

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()


@pytest.fixture
async def live(server: ServerProcess) -> AsyncIterator[Live]:
    helper = Live(server)
    try:
        yield helper
    finally:
        await helper.close()


async def post(client: httpx.AsyncClient, thread_id: str, text: str) -> dict[str, Any]:
    response = await client.post(f"/threads/{thread_id}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    return response.json()


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["content"][0]["text"]["value"] for e in events if e["type"] == "thread.message.created"]


# --- one subscriber ----------------------------------------------------------------------------


async def test_a_websocket_replays_from_its_cursor_then_goes_live(live: Live) -> None:
    alice = await live.actor("alice")
    tid = await live.thread(alice, "alice")
    for text in ("one", "two"):
        await post(alice, tid, text)

    async with ws_connect(live.base_url, f"/threads/{tid}/events/ws", live.keys["alice"], params={"after": 1}) as ws:
        replayed = await ws_events(ws, 2)
        await post(alice, tid, "three")
        [live_event] = await ws_events(ws, 1)

    assert [e["seq"] for e in replayed + [live_event]] == [2, 3, 4]
    assert texts(replayed + [live_event]) == ["one", "two", "three"]
    assert set(live_event) == {"seq", "type", "thread_id", "created_at", "data"}
    assert live_event["thread_id"] == tid and live_event["data"]["object"] == "thread.message"


async def test_sse_streams_with_event_ids_and_resumes_from_last_event_id(live: Live) -> None:
    alice = await live.actor("alice")
    tid = await live.thread(alice, "alice")
    await post(alice, tid, "one")

    frames: list[dict[str, Any]] = []
    async for frame in sse_frames(alice, f"/threads/{tid}/events"):
        if "comment" in frame:
            continue
        frames.append(frame)
        if len(frames) == 2:
            await post(alice, tid, "two")
        if len(frames) == 3:
            break
    assert [(f["id"], f["event"]) for f in frames] == [
        ("1", "thread.created"),
        ("2", "thread.message.created"),
        ("3", "thread.message.created"),
    ]
    assert frames[2]["data"]["seq"] == 3 and texts([frames[2]["data"]]) == ["two"]

    async for frame in sse_frames(alice, f"/threads/{tid}/events", headers={"Last-Event-ID": "2"}):
        assert frame.get("id") == "3"
        break


async def test_sse_sends_keep_alive_comments_while_idle(live: Live) -> None:
    alice = await live.actor("alice")
    tid = await live.thread(alice, "alice")
    async for frame in sse_frames(alice, f"/threads/{tid}/events", params={"after": 1}):
        assert frame == {"comment": "keep-alive"}  # AITP_KEEPALIVE_SECONDS=1 in this server
        break


async def test_a_post_over_the_websocket_is_validated_and_answered_on_the_socket(live: Live) -> None:
    alice = await live.actor("alice")
    tid = await live.thread(alice, "alice")
    async with ws_connect(live.base_url, f"/threads/{tid}/events/ws", live.keys["alice"], params={"after": 1}) as ws:
        await ws.send(json.dumps({"op": "post", "ref": 7, "message": {"content": "hi over ws"}}))
        await ws.send(json.dumps({"op": "post", "ref": 8, "message": {"content": "x", "role": "system"}}))
        await ws.send(json.dumps({"op": "post", "ref": 9, "message": {"contents": "typo"}}))
        await ws.send("not json")
        # a ref is echoed back, so it must be a scalar (a deep one could not even be rendered)
        await ws.send('{"op": "post", "ref": ' + "[" * 300 + "]" * 300 + ', "message": {"content": "x"}}')
        replies: dict[Any, dict[str, Any]] = {}
        unreferenced: list[dict[str, Any]] = []
        events = []
        while len(replies) < 3 or len(unreferenced) < 2 or not events:
            frame = json.loads(await ws.recv())
            if "op" not in frame:
                events.append(frame)
            elif frame["ref"] is None:
                unreferenced.append(frame["error"]["error"])
            else:
                replies[frame["ref"]] = frame

    assert replies[7]["op"] == "posted" and replies[7]["message"]["content"][0]["text"]["value"] == "hi over ws"
    assert events[0]["data"]["id"] == replies[7]["message"]["id"]
    assert (replies[8]["op"], replies[8]["error"]["error"]["param"]) == ("error", "role")
    assert (replies[9]["status"], replies[9]["error"]["error"]["param"]) == (400, "content")  # missing
    assert [(e["message"], e["param"]) for e in unreferenced] == [
        ("Frames must be JSON.", None),
        ("'ref' must be a string or a number.", "ref"),
    ]


# --- who may subscribe -------------------------------------------------------------------------


async def test_only_members_subscribe(live: Live) -> None:
    alice = await live.actor("alice")
    mallory = await live.actor("mallory")
    tid = await live.thread(alice, "alice")

    async with ws_connect(live.base_url, f"/threads/{tid}/events/ws", live.keys["mallory"]) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403

    async with ws_connect(live.base_url, f"/threads/{tid}/events/ws", "aitp_wrong") as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401

    async for frame in sse_frames(mallory, f"/threads/{tid}/events"):
        assert frame["status"] == 404 and frame["body"]["error"]["code"] == "thread_not_found"


async def test_a_removed_member_stops_receiving(live: Live) -> None:
    alice = await live.actor("alice")
    await live.actor("bob")
    tid = await live.thread(alice, "alice", "bob")
    async with ws_connect(live.base_url, f"/threads/{tid}/events/ws", live.keys["bob"], params={"after": 1}) as ws:
        await post(alice, tid, "before")
        assert texts(await ws_events(ws, 1)) == ["before"]
        assert (await alice.delete(f"/threads/{tid}/actors/bob")).status_code == 200
        await post(alice, tid, "after")
        frames = []
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                frames.append(json.loads(await ws.recv()))
    assert [f["type"] for f in frames] == ["thread.actor.left"]
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1000, "removed from the thread")


# --- many subscribers, many writers ------------------------------------------------------------

WRITERS, PER_WRITER, WS_SUBSCRIBERS, SSE_SUBSCRIBERS = 5, 200, 10, 10
TOTAL = WRITERS * PER_WRITER


async def _ws_subscriber(live: Live, tid: str, after: int, count: int) -> list[dict[str, Any]]:
    async with ws_connect(
        live.base_url, f"/threads/{tid}/events/ws", live.keys["alice"], params={"after": after}
    ) as ws:
        return await ws_events(ws, count)


async def _sse_subscriber(client: httpx.AsyncClient, tid: str, count: int) -> list[dict[str, Any]]:
    events = []
    async for frame in sse_frames(client, f"/threads/{tid}/events", params={"after": 1}):
        if "data" in frame:
            assert frame["id"] == str(frame["data"]["seq"])
            events.append(frame["data"])
            if len(events) == count:
                break
    return events


async def _dropping_subscriber(live: Live, tid: str, started: asyncio.Event) -> list[dict[str, Any]]:
    """Reads a third of the stream, drops the connection, resumes with its cursor for the rest."""
    first = await _ws_subscriber(live, tid, 1, TOTAL // 3)
    started.set()
    rest = await _ws_subscriber(live, tid, first[-1]["seq"], TOTAL - len(first))
    return first + rest


async def test_twenty_subscribers_each_get_every_message_once_in_order(live: Live, backend: Backend) -> None:
    alice = await live.actor("alice")
    tid = await live.thread(alice, "alice")
    readers = [await live.actor("alice") for _ in range(SSE_SUBSCRIBERS)]
    dropped_started = asyncio.Event()
    subscribers = [asyncio.create_task(_ws_subscriber(live, tid, 1, TOTAL)) for _ in range(WS_SUBSCRIBERS - 1)]
    subscribers += [asyncio.create_task(_sse_subscriber(reader, tid, TOTAL)) for reader in readers]
    dropping = asyncio.create_task(_dropping_subscriber(live, tid, dropped_started))
    await asyncio.sleep(0.5)  # let them connect: most of the stream then arrives live

    async def writer(w: int) -> None:
        for i in range(PER_WRITER):
            await post(alice, tid, f"w{w}-{i}")

    if backend.is_nx27017:  # it fails overlapping transactions (see test_contract): writers take turns
        for w in range(WRITERS):
            await writer(w)
    else:
        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    results = await asyncio.wait_for(asyncio.gather(*subscribers, dropping), timeout=120)

    stored = (await alice.get(f"/threads/{tid}/events", params={"after": 1, "limit": 1000})).json()["data"]
    expected = [(e["seq"], e["data"]["id"]) for e in stored]
    assert len(expected) == TOTAL
    for events in results:
        assert [(e["seq"], e["data"]["id"]) for e in events] == expected
    for w in range(WRITERS):  # each writer's messages in the order it wrote them
        assert [t for t in texts(results[0]) if t.startswith(f"w{w}-")] == [f"w{w}-{i}" for i in range(PER_WRITER)]


# --- actor inbox ------------------------------------------------------------------------------


async def test_the_inbox_follows_every_thread_of_the_actor_and_resumes_by_cursor(live: Live) -> None:
    alice = await live.actor("alice")
    bob = await live.actor("bob")
    first = await live.thread(alice, "alice", "bob")
    async with ws_connect(live.base_url, "/actors/me/events/ws", live.keys["bob"]) as ws:
        [created] = await ws_events(ws, 1)
        assert (created["type"], created["thread_id"]) == ("thread.created", first)
        second = await live.thread(alice, "alice", "bob")  # bob is added to a new thread: one connection is enough
        await live.thread(alice, "alice")  # not bob's
        await post(alice, first, "in first")
        await post(bob, second, "in second")
        events = await ws_events(ws, 3)
    assert [(e["type"], e["thread_id"]) for e in events] == [
        ("thread.created", second),
        ("thread.message.created", first),
        ("thread.message.created", second),
    ]
    cursors = [created["cursor"]] + [e["cursor"] for e in events]
    assert cursors == sorted(cursors)

    async for frame in sse_frames(bob, "/actors/me/events", params={"after": cursors[1]}):
        assert frame["data"] == events[1] and frame["id"] == str(events[1]["cursor"])
        break
    page = (await bob.get("/actors/me/events", params={"after": cursors[0]})).json()
    assert page["data"] == events and page["last_cursor"] == cursors[-1]


# --- slow consumers ----------------------------------------------------------------------------


async def test_a_slow_consumer_is_closed_with_its_cursor_and_resumes_without_a_gap(
    backend: Backend, tmp_path: Path
) -> None:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_STREAM_BUFFER": "4", "AITP_RATE_LIMIT": "0"}
    process = start_server(backend.url, tmp_path / "slow.log", env)
    live = Live(process)
    try:
        alice = await live.actor("alice")
        tid = await live.thread(alice, "alice")
        big = "x" * 60_000
        stalled = RawWebSocket(process.port, f"/v1/threads/{tid}/events/ws?after=1&token={live.keys['alice']}")
        try:
            for i in range(400):  # ~24 MB: far more than the socket buffers between us hold
                await post(alice, tid, f"{i}:{big}")
            received = []
            while True:  # now read what the server managed to send before giving up on us
                opcode, payload = stalled.frame()
                if opcode == 8:
                    break
                received.append(json.loads(payload))
        finally:
            stalled.close()
        code, reason = struct.unpack("!H", payload[:2])[0], payload[2:].decode()
        last = received[-1]["seq"]
        assert (code, reason) == (4008, f"slow consumer: more than 4 events buffered; resume with after={last}")
        assert [e["seq"] for e in received] == list(range(2, last + 1))
        assert last < 300  # it was cut off, not served in full

        rest = await _ws_subscriber(live, tid, last, 401 - last)
        assert [e["seq"] for e in received + rest] == list(range(2, 402))
    finally:
        await live.close()
        process.stop()
