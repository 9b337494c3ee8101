"""Crash safety: `aitp serve` on SQLite killed with SIGKILL in the middle of concurrent writes.

Specification: once a POST has been answered 2xx its message survives a crash of the process, exactly
once and intact; a POST that got no answer may or may not have happened, but never twice; after a restart
on the same file each thread's event log is contiguous (seq 1..last, no hole, every acknowledged
message's event in it), messages and events agree, and new writes continue from the last seq.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from aitp.testing import ServerProcess
from tests.support.load import (
    ADMIN_KEY,
    MESSAGE_CREATED,
    Post,
    Stored,
    event_log,
    start_load_server,
    stored_messages,
)

WRITERS = 8  # split over two threads
THREADS = 2
PADDING = "durable ✓ " * 40  # long enough that a torn write would show in the content


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def write_until_killed(
    http: httpx.AsyncClient, thread_id: str, key: str, writer: int, posts: list[Post], kill: asyncio.Event
) -> None:
    """Post one message after another until the server stops answering; record every outcome."""
    index = 0
    while True:
        post = Post(writer, index, f"crash w{writer} #{index} {PADDING}", time.perf_counter_ns())
        posts.append(post)
        index += 1
        try:
            response = await http.post(
                f"/threads/{thread_id}/messages", json={"content": post.text}, headers=bearer(key)
            )
        except httpx.TransportError as error:  # no answer: the outcome is unknown
            post.error = repr(error)
            return
        post.status = response.status_code
        assert post.acknowledged, response.text  # before the kill, every write succeeds
        post.message_id = response.json()["id"]
        if kill.is_set():
            return


@pytest.mark.parametrize("kill_after", [3, 25, 100], ids=lambda n: f"after-{n}-acks")
async def test_acknowledged_messages_survive_sigkill(tmp_path: Path, kill_after: int) -> None:
    store_url = f"sqlite:///{tmp_path / 'crash.db'}"
    server = start_load_server(store_url, tmp_path / "first.log")
    posts: list[Post] = []
    kill = asyncio.Event()
    try:
        async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=bearer(ADMIN_KEY)) as admin:
            keys = [(await admin.post("/keys", json={"actor": f"w{w}.crash"})).json()["key"] for w in range(WRITERS)]
            threads = []
            for t in range(THREADS):
                actors = [{"id": f"w{w}.crash"} for w in range(t, WRITERS, THREADS)]
                threads.append((await admin.post("/threads", json={"actors": actors})).json()["id"])

            async def killer() -> None:
                while sum(p.acknowledged for p in posts) < kill_after:
                    await asyncio.sleep(0.001)
                os.kill(server.process.pid, signal.SIGKILL)  # with the other writers' requests in flight
                kill.set()

            writers = [write_until_killed(admin, threads[w % THREADS], keys[w], w, posts, kill) for w in range(WRITERS)]
            await asyncio.wait_for(asyncio.gather(killer(), *writers), timeout=60)
        assert server.process.wait(timeout=10) == -signal.SIGKILL
    finally:
        server.stop()

    restarted = start_load_server(store_url, tmp_path / "second.log")
    try:
        await check_after_restart(restarted, threads, posts)
    finally:
        restarted.stop()


async def check_after_restart(server: ServerProcess, threads: list[str], posts: list[Post]) -> None:
    acknowledged = {p.message_id: p for p in posts if p.message_id is not None}  # only 2xx answers have one
    assert len(acknowledged) >= 3 and not all(p.acknowledged for p in posts)  # the kill landed mid-load
    author = {p.text: f"w{p.writer}.crash" for p in posts}
    stored: list[Stored] = []
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=bearer(ADMIN_KEY)) as admin:
        for thread_id in threads:
            messages = await stored_messages(admin, thread_id)
            events = await event_log(admin, thread_id)
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # no hole
            created = [e["data"]["id"] for e in events if e["type"] == MESSAGE_CREATED]
            assert created == [m.message_id for m in messages]  # messages and events agree
            stored += messages

            more = await admin.post(f"/threads/{thread_id}/messages", json={"content": "after the crash"})
            assert more.status_code == 200, more.text
            assert (await event_log(admin, thread_id))[-1]["seq"] == len(events) + 1

    # every acknowledged message exactly once, intact
    copies = Counter(m.message_id for m in stored)
    assert {mid: copies[mid] for mid in acknowledged} == dict.fromkeys(acknowledged, 1)
    text_of = {m.message_id: m.text for m in stored}
    assert {mid: text_of.get(mid) for mid in acknowledged} == {mid: p.text for mid, p in acknowledged.items()}
    # answered or not: nothing twice, nothing that was never posted, each by its own writer
    assert [text for text, n in Counter(m.text for m in stored).items() if n > 1] == []
    assert all(author.get(m.text) == m.actor for m in stored)
