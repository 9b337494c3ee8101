"""`AitpClient.events`, `.inbox` and `.stream` against a real server process (SQLite).

Specification: the caller sees every event after its cursor once, in order, across server restarts and
slow-consumer closes; the feed ends when the thread is deleted; refusals raise the client's typed
errors; posts over the socket answer with the created `Message` or the typed refusal.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, aclosing
from pathlib import Path
from typing import TypeVar

import pytest

from aitp.client import (
    AitpClient,
    AitpError,
    BadRequest,
    Conflict,
    Event,
    Message,
    NotFound,
    PermissionDenied,
    Reconnect,
    TextPart,
    Unauthenticated,
    Unprocessable,
)
from aitp.client._stream import reply_error
from aitp.testing import ServerProcess, free_port, start_server
from tests.conftest import ADMIN_KEY

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
WAIT = 20  # seconds any single wait may take before the test fails
FAST = Reconnect(initial_delay=0.05, max_delay=0.5, max_attempts=100)  # rides out a restart of a few seconds
T = TypeVar("T")


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'events.db'}"


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    # anyone may contact the actors its keys make (the contact policies: tests/api/test_identities.py)
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}
    process = start_server(store_url, tmp_path / "serve.log", env)
    try:
        yield process
    finally:
        process.stop()


class Clients:
    """One `AitpClient` per actor against a server, each with a fresh key."""

    def __init__(self, base_url: str, stack: AsyncExitStack) -> None:
        self.base_url = base_url
        self._stack = stack
        self._admin = AitpClient(base_url, ADMIN_KEY)
        stack.push_async_callback(self._admin.aclose)

    async def actor(self, actor: str) -> AitpClient:
        key = (await self._admin.create_key(actor)).key
        return await self._stack.enter_async_context(AitpClient(self.base_url, key))


@pytest.fixture
async def clients(server: ServerProcess) -> AsyncIterator[Clients]:
    async with AsyncExitStack() as stack:
        yield Clients(server.base_url, stack)


async def take(events: AsyncIterator[T], count: int) -> list[T]:
    """The next `count` items, failing the test after `WAIT` seconds."""

    async def collect() -> list[T]:
        return [await anext(events) for _ in range(count)]

    return await asyncio.wait_for(collect(), WAIT)


def text_of(event: Event) -> str | None:
    if event.type != "thread.message.created":
        return None
    part = Message.model_validate(event.data).content[0]
    assert isinstance(part, TextPart)
    return part.text.value


# ------------------------------------------------------------------------------ replay, then live


async def test_events_replay_from_the_cursor_then_follow_live(clients: Clients) -> None:
    alice = await clients.actor("alice")
    thread = await alice.create_thread(messages=["one", "two"])
    async with aclosing(alice.events(thread.id)) as events:
        replayed = await take(events, 3)
        await alice.create_message(thread.id, "three")
        live = await take(events, 1)
    assert all(isinstance(e, Event) for e in replayed + live)
    assert [e.seq for e in replayed + live] == [1, 2, 3, 4]
    assert [text_of(e) for e in replayed + live] == [None, "one", "two", "three"]
    assert replayed[0].type == "thread.created" and replayed[0].thread_id == thread.id

    async with aclosing(alice.events(thread.id, after=2)) as resumed:
        assert [e.seq for e in await take(resumed, 2)] == [3, 4]


@pytest.mark.parametrize("stop", ["terminate", "kill"])
async def test_events_resume_without_gap_or_duplicate_when_the_server_restarts(
    store_url: str, tmp_path: Path, stop: str, caplog: pytest.LogCaptureFixture
) -> None:
    """terminate: uvicorn closes the socket with 1012; kill: the connection just vanishes (1006)."""
    caplog.set_level(logging.INFO, logger="aitp.client")
    env = {"AITP_ADMIN_KEY": ADMIN_KEY}
    server = start_server(store_url, tmp_path / "first.log", env)
    try:
        async with AsyncExitStack() as stack:
            alice = await Clients(server.base_url, stack).actor("alice")
            thread = await alice.create_thread(messages=["m0", "m1", "m2"])
            events = await stack.enter_async_context(aclosing(alice.events(thread.id, reconnect=FAST)))
            seen = await take(events, 2)  # m1 and m2 are on their way, or already in our buffers

            if stop == "kill":
                server.process.kill()
                server.process.wait()
            else:
                server.stop()
            server = start_server(store_url, tmp_path / "second.log", env, port=server.port)
            for i in range(3, 6):
                await alice.create_message(thread.id, f"m{i}")
            seen += await take(events, 5)
    finally:
        server.stop()

    assert [e.seq for e in seen] == list(range(1, 8))
    assert [text_of(e) for e in seen[1:]] == [f"m{i}" for i in range(6)]
    code = 1006 if stop == "kill" else 1012
    assert f"closed ({code}" in caplog.text and "resuming after" in caplog.text


async def test_a_slow_consumer_is_resumed_after_a_4008_close(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aitp.client")
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_STREAM_BUFFER": "4", "AITP_RATE_LIMIT": "0"}  # 400 posts at full speed
    server = start_server(store_url, tmp_path / "slow.log", env)
    try:
        async with AsyncExitStack() as stack:
            alice = await Clients(server.base_url, stack).actor("alice")
            thread = await alice.create_thread()
            events = await stack.enter_async_context(aclosing(alice.events(thread.id)))
            [created] = await take(events, 1)  # connected, live, then not reading while the thread fills up
            for i in range(400):  # ~24 MB, incompressible: more than the socket buffers between us hold
                await alice.create_message(thread.id, f"{i}:{secrets.token_hex(30_000)}")
            rest = await take(events, 400)
    finally:
        server.stop()
    assert [e.seq for e in [created, *rest]] == list(range(1, 402))
    assert [(text_of(e) or "").split(":")[0] for e in rest] == [str(i) for i in range(400)]
    assert "closed (4008 slow consumer" in caplog.text


# ------------------------------------------------------------------------------------------ endings


async def test_the_feed_ends_when_the_thread_is_deleted(clients: Clients) -> None:
    alice = await clients.actor("alice")
    thread = await alice.create_thread(messages=["hi"])
    events = alice.events(thread.id)
    first = await take(events, 2)
    await alice.delete_thread(thread.id)
    rest = await asyncio.wait_for(_all(events), WAIT)
    assert [e.type for e in first + rest] == ["thread.created", "thread.message.created", "thread.deleted"]


async def test_the_feed_ends_when_the_caller_is_removed(clients: Clients) -> None:
    alice = await clients.actor("alice")
    bob = await clients.actor("bob")
    thread = await alice.create_thread(actors=["bob"])
    events = bob.events(thread.id)
    await take(events, 1)
    await alice.remove_actor(thread.id, "bob")
    await alice.create_message(thread.id, "not for bob")
    rest = await asyncio.wait_for(_all(events), WAIT)
    assert [(e.type, e.data["id"]) for e in rest] == [("thread.actor.left", "bob")]


async def _all(events: AsyncIterator[T]) -> list[T]:
    return [e async for e in events]


async def test_refusals_raise_typed_errors(clients: Clients, server: ServerProcess) -> None:
    alice = await clients.actor("alice")
    mallory = await clients.actor("mallory")
    thread = await alice.create_thread()
    for tid in (thread.id, "thread_missing"):
        with pytest.raises(NotFound) as missing:
            await asyncio.wait_for(anext(mallory.events(tid)), WAIT)
        assert (missing.value.status, missing.value.code, missing.value.param) == (404, "thread_not_found", "thread_id")

    async with AitpClient(server.base_url, "aitp_wrong") as stranger:
        with pytest.raises(Unauthenticated) as refused:
            await asyncio.wait_for(anext(stranger.events(thread.id)), WAIT)
        assert refused.value.status == 401
        with pytest.raises(Unauthenticated):
            await asyncio.wait_for(anext(stranger.inbox(after=0)), WAIT)  # refused at the socket's upgrade
        with pytest.raises(Unauthenticated):
            await asyncio.wait_for(anext(stranger.inbox()), WAIT)  # refused asking where the inbox ends


async def test_it_gives_up_after_the_configured_failed_connects(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aitp.client")
    async with AitpClient(f"http://127.0.0.1:{free_port()}", "aitp_k") as client:
        events = client.events("thread_1", reconnect=Reconnect(initial_delay=0.01, max_attempts=3))
        with pytest.raises(OSError):
            await asyncio.wait_for(anext(events), WAIT)
    assert caplog.text.count("retrying") == 2


# --------------------------------------------------------------------------------------------- inbox


async def test_the_inbox_follows_threads_the_caller_is_added_to(clients: Clients) -> None:
    alice = await clients.actor("alice")
    bob = await clients.actor("bob")
    first = await alice.create_thread(actors=["bob"])
    async with aclosing(bob.inbox(after=0)) as inbox:
        [created] = await take(inbox, 1)
        assert (created.type, created.thread_id) == ("thread.created", first.id)
        second = await alice.create_thread(actors=["bob"])  # one connection follows new threads too
        await alice.create_thread()  # not bob's
        await alice.create_message(first.id, "in first")
        await bob.create_message(second.id, "in second")
        events = await take(inbox, 3)
    assert [(e.type, e.thread_id, text_of(e)) for e in events] == [
        ("thread.created", second.id, None),
        ("thread.message.created", first.id, "in first"),
        ("thread.message.created", second.id, "in second"),
    ]
    cursors = [created.cursor] + [e.cursor for e in events]
    assert cursors == sorted(set(cursors))

    async with aclosing(bob.inbox(after=cursors[1])) as resumed:
        assert await take(resumed, 2) == events[1:]
    page = await bob.list_inbox(after=cursors[0], limit=2)
    assert page.data == events[:2] and page.has_more and page.last_cursor == cursors[2]


async def test_the_inbox_starts_at_its_end_unless_told_where_to_start(clients: Clients) -> None:
    """Without `after`, the inbox starts where it ends when iteration starts, as `Agent.run()` does: a
    program started again is not handed the past to answer again. `after=0` replays it all."""
    alice = await clients.actor("alice")
    bob = await clients.actor("bob")
    thread = await alice.create_thread(actors=["bob"], messages=["before"])
    past = await bob.list_inbox()

    async def keep_posting() -> None:  # until bob reads one: whenever the inbox started, one comes after
        while True:
            await alice.create_message(thread.id, "after")
            await asyncio.sleep(0.1)

    posting = asyncio.create_task(keep_posting())
    try:
        async with aclosing(bob.inbox()) as inbox:
            [first] = await take(inbox, 1)
    finally:
        posting.cancel()
        await asyncio.gather(posting, return_exceptions=True)
    assert [text_of(e) for e in past.data] == [None, "before"]
    assert first.cursor > past.data[-1].cursor and text_of(first) == "after"
    async with aclosing(bob.inbox(after=0)) as replayed:
        assert await take(replayed, 2) == past.data


# --------------------------------------------------------------------------------------------- posts


async def test_posts_over_the_stream_answer_with_the_message_or_a_typed_error(clients: Clients) -> None:
    alice = await clients.actor("alice")
    thread = await alice.create_thread(actors=[{"id": "alice", "capabilities": [DECISIONS]}])
    async with alice.stream(thread.id) as stream:
        posted = await stream.post("hi over the socket", metadata={"via": "ws"})
        assert isinstance(posted, Message)
        assert (posted.thread_id, posted.role, posted.metadata) == (thread.id, "user", {"via": "ws", "actor": "alice"})

        bad = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"name": "no id"}]}}
        with pytest.raises(Unprocessable) as invalid:
            await stream.post(bad)
        assert (invalid.value.status, invalid.value.code) == (422, "invalid_capability_message")
        assert invalid.value.param is not None and invalid.value.param.startswith(
            "content[0].request_decision.options[0]"
        )
        with pytest.raises(BadRequest) as empty:
            await stream.post([])
        assert (empty.value.status, empty.value.code, empty.value.param) == (400, "invalid_request", "content")
        ask = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"id": "yes"}]}}
        second = await stream.post(["Well?", ask])
        assert second.aitp is not None and second.aitp[1] is not None and second.aitp[1].type == "request_decision"
        with pytest.raises(Conflict) as duplicate:
            await stream.post(ask)
        assert (duplicate.value.status, duplicate.value.code, duplicate.value.param) == (
            409,
            "duplicate_request_id",
            "content[0].request_decision.id",
        )
        events = await take(stream, 3)
        assert stream.cursor == 3
    assert [e.type for e in events] == ["thread.created", "thread.message.created", "thread.message.created"]
    assert [e.data["id"] for e in events[1:]] == [posted.id, second.id]
    assert Message.model_validate(events[1].data) == posted


@pytest.mark.parametrize(
    ("code", "kind", "error"),
    [
        ("thread_not_found", "invalid_request_error", NotFound),
        ("already_answered", "invalid_request_error", Conflict),
        ("unknown_request", "invalid_request_error", Unprocessable),
        ("invalid_value", "invalid_request_error", BadRequest),
        ("actor_impersonation", "permission_error", PermissionDenied),
    ],
)
def test_a_refused_post_raises_what_the_same_refusal_raises_over_http(
    code: str, kind: str, error: type[AitpError]
) -> None:
    """Error replies carry the envelope without the HTTP status: the class follows from `code` and `type`."""
    reply = {"op": "error", "ref": 1, "error": {"error": {"message": "m", "type": kind, "param": "p", "code": code}}}
    raised = reply_error(reply)
    assert type(raised) is error
    assert (raised.message, raised.type, raised.code, raised.param) == ("m", kind, code, "p")


async def test_a_post_is_answered_while_another_task_is_reading(clients: Clients) -> None:
    alice = await clients.actor("alice")
    thread = await alice.create_thread()
    async with alice.stream(thread.id, after=1) as stream:
        reader = asyncio.create_task(take(stream, 2))
        while not stream._reading.locked():  # until the reader holds the read side: the replies come through it
            await asyncio.sleep(0)
        first = await asyncio.wait_for(stream.post("one"), WAIT)
        second = await asyncio.wait_for(stream.post("two"), WAIT)
        events = await reader
    assert [e.data["id"] for e in events] == [first.id, second.id]
