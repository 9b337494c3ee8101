"""An `Agent` that never dies, against a real server that fails, stops and starts (issue 29, item 1), and its
hook for a thread it is brought into (item 2).

Specification: a handler that raises is logged (thread, cursor), reported to the `on_error` handlers, the
event handled again up to `attempts` times in all, then skipped, and the agent goes on with the next events;
with a `cursor_file` the failures of an event are counted across restarts. A refusal (4xx) is reported once
and not retried. A reply made while the server restarts is made again once it is back, and arrives once;
`run` started before the server is up waits for it. `on_arrival` handlers get the threads another actor
opens with the agent in it or adds it to, and their replies are posted once however often the event is
handled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aitp.client import Agent, AitpClient, Arrival, InboxEvent, Incoming, Reconnect
from aitp.client import _agent as agent_module
from aitp.testing import ServerProcess, free_port, start_server
from tests.client.test_agent import messages_of, running, until
from tests.conftest import ADMIN_KEY

FAST = Reconnect(initial_delay=0.05, max_delay=0.3, max_attempts=200)  # ~1 minute of tries


@dataclass
class Served:
    """A real server on a store of its own that a test may stop and start again on the same port."""

    tmp_path: Path
    port: int
    server: ServerProcess | None = None
    starts: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.starts += 1
        env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}
        store = f"sqlite:///{self.tmp_path / 'agent.db'}"
        self.server = start_server(store, self.tmp_path / f"serve-{self.starts}.log", env, port=self.port)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(tmp_path, free_port())
    served.start()
    try:
        yield served
    finally:
        served.stop()


@contextlib.asynccontextmanager
async def actors(served: Served) -> AsyncIterator[tuple[AitpClient, AitpClient]]:
    """Clients of user.near and shop.near (keys made by the admin)."""
    async with contextlib.AsyncExitStack() as stack:
        admin = await stack.enter_async_context(AitpClient(served.base_url, ADMIN_KEY))
        user = AitpClient(served.base_url, (await admin.create_key("user.near")).key)
        shop = AitpClient(served.base_url, (await admin.create_key("shop.near")).key)
        yield await stack.enter_async_context(user), await stack.enter_async_context(shop)


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_module, "RETRY_DELAY", 0.05)


async def test_a_failing_handler_is_logged_reported_retried_then_skipped_and_the_agent_goes_on(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aitp.agent")
    async with actors(served) as (user, shop):
        agent = Agent(shop, attempts=3)
        calls: list[str] = []
        reported: list[tuple[str, int]] = []

        @agent.on_text
        async def answer(incoming: Incoming) -> None:
            calls.append(incoming.text)
            if incoming.text == "boom":
                raise ValueError("a bug in the handler")
            await incoming.reply(f"got {incoming.text}")

        @agent.on_error
        async def report(error: Exception, event: InboxEvent) -> None:
            reported.append((str(error), event.cursor))
            raise RuntimeError("the error handler fails too")  # logged, goes no further

        async with running(agent):
            thread = await user.create_thread(actors=["shop.near"])
            await user.create_message(thread.id, "boom")
            await user.create_message(thread.id, "next")
            await until(lambda: calls[-1:] == ["next"])
            await until(lambda: has(user, thread.id, "got next"))

        assert calls == ["boom", "boom", "boom", "next"]
        assert [error for error, _ in reported] == ["a bug in the handler"] * 3
        failed_at = reported[0][1]
        assert f"event {failed_at} (thread.message.created): skipped after 3 failed attempts" in caplog.text
        assert "ValueError: a bug in the handler" in caplog.text  # with its traceback
        assert "the error handler failed" in caplog.text
        assert await texts(user, thread.id) == ["boom", "next", "got next"]


async def test_a_refusal_is_reported_once_and_not_retried(served: Served) -> None:
    async with actors(served) as (user, shop):
        agent = Agent(shop)
        calls: list[str] = []
        reported: list[int] = []

        @agent.on_text
        async def answer(incoming: Incoming) -> None:
            calls.append(incoming.text)
            await shop.get_thread("thread_gone")  # 404: asking again gets 404 again

        @agent.on_error
        async def report(error: Exception, event: InboxEvent) -> None:
            reported.append(getattr(error, "status", 0))

        async with running(agent):
            thread = await user.create_thread(actors=["shop.near"], messages=["one"])
            await until(lambda: reported == [404])
            await user.create_message(thread.id, "two")
            await until(lambda: calls == ["one", "two"])


async def test_an_events_failures_are_counted_across_restarts(served: Served, tmp_path: Path) -> None:
    """Killed between two attempts, the agent resumes at that event and skips it after its last attempt."""
    cursor_file = tmp_path / "shop.cursor"
    async with actors(served) as (user, shop):
        calls: list[str] = []
        failed_twice = asyncio.Event()

        def agent() -> Agent:
            made = Agent(shop, attempts=3, cursor_file=cursor_file)

            @made.on_text
            async def answer(incoming: Incoming) -> None:
                calls.append(incoming.text)
                if incoming.text == "boom":
                    if calls.count("boom") == 2:
                        failed_twice.set()
                        await asyncio.sleep(3600)  # killed here, in its second attempt
                    raise ValueError("a bug")

            return made

        thread = await user.create_thread(actors=["shop.near"])
        async with running(agent()):
            await user.create_message(thread.id, "boom")
            await asyncio.wait_for(failed_twice.wait(), 20)
        # two attempts started (the second never ended): both on record
        _, started = cursor_file.read_text().splitlines()
        assert started.split()[0] == "attempts" and started.split()[2] == "2"

        await user.create_message(thread.id, "after")
        async with running(agent()):
            await until(lambda: calls[-1:] == ["after"])
        # a failed attempt, the killed one, then one more: 3 attempts in all, then skipped
        assert calls == ["boom", "boom", "boom", "after"]
        assert cursor_file.read_text().splitlines()[1:] == []


async def test_a_reply_made_while_the_server_restarts_arrives_once(served: Served) -> None:
    async with actors(served) as (user, shop):
        agent = Agent(shop, reconnect=FAST)
        handling, down = asyncio.Event(), asyncio.Event()

        @agent.on_text
        async def answer(incoming: Incoming) -> None:
            handling.set()
            await down.wait()
            await incoming.reply(f"got {incoming.text}")

        async with running(agent):
            thread = await user.create_thread(actors=["shop.near"], messages=["hello"])
            await asyncio.wait_for(handling.wait(), 20)
            await asyncio.to_thread(served.stop)
            down.set()  # the reply meets no server
            await asyncio.sleep(0.5)
            await asyncio.to_thread(served.start)
            await until(lambda: has(user, thread.id, "got hello"))
            await asyncio.sleep(0.5)  # nothing more comes
            assert await texts(user, thread.id) == ["hello", "got hello"]


async def test_run_started_before_the_server_waits_for_it(served: Served) -> None:
    async with actors(served) as (user, shop):
        thread = await user.create_thread(actors=["shop.near"])
        await asyncio.to_thread(served.stop)
        agent = Agent(shop, reconnect=FAST)
        heard: list[str] = []

        @agent.on_text
        async def hear(incoming: Incoming) -> None:
            heard.append(incoming.text)

        task = asyncio.create_task(agent.run())
        try:
            await asyncio.sleep(1.0)
            assert not task.done()  # waiting, not failed
            await asyncio.to_thread(served.start)
            await until(lambda: agent.cursor is not None)
            await user.create_message(thread.id, "you are up")
            await until(lambda: heard == ["you are up"])
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_an_arrival_is_handled_once_with_who_opened_the_thread(served: Served) -> None:
    async with actors(served) as (user, shop):
        agent = Agent(shop)
        assert agent.actor is None and await agent.me() == "shop.near" == agent.actor  # known before run
        arrivals: list[tuple[str, str]] = []

        @agent.on_arrival
        async def greet(arrival: Arrival) -> None:
            arrivals.append((arrival.thread_id, arrival.creator))
            await arrival.reply(f"Welcome, {arrival.creator}!")

        async with running(agent):
            opened = await user.create_thread(actors=["shop.near"])
            later = await user.create_thread()
            await user.put_actor(later.id, "shop.near")
            await shop.create_thread(actors=["user.near"])  # the shop's own thread: no arrival
            await until(lambda: len(arrivals) == 2)
            events = [e async for e in _inbox(shop, opened.id)]
            await agent.handle(events[0])  # handled again (a restart before its cursor was saved)

        assert arrivals == [(opened.id, "user.near"), (later.id, "user.near"), (opened.id, "user.near")]
        for thread_id in (opened.id, later.id):
            assert await texts(user, thread_id) == ["Welcome, user.near!"]


async def texts(client: AitpClient, thread_id: str) -> list[str]:
    return [m.content[0].text.value for m in await messages_of(client, thread_id)]  # type: ignore[union-attr]


async def has(client: AitpClient, thread_id: str, text: str) -> bool:
    return text in await texts(client, thread_id)


async def _inbox(client: AitpClient, thread_id: str) -> AsyncIterator[InboxEvent]:
    """The thread's `thread.created` event as the inbox shows it."""
    async for event in client.inbox(after=0):
        if event.thread_id == thread_id and event.type == "thread.created":
            yield event
            return
