"""A2A outbound, end to end on every backend: a remote agent built on the a2a-sdk server stands in a thread as
an actor, and what `deliveries.a2a` sends it goes over real HTTP.

Specification (issue 27): a task the agent leaves input-required is continued by the next message sent to it
in that thread (its `taskId` and `contextId`), across a restart; a `taskId` the agent refuses is forgotten and
the message sent once more as a new task; only messages that ask the agent (its reply policy) are sent, so
two agents in one thread do not answer each other; the credential the agent's card asks for is sent with
every request, held write-only in its settings, and reaches no log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from a2a.helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    Message,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from aitp.client import AitpClient
from aitp.store import Store
from aitp.store.a2a import RemoteTaskRecord
from tests.bindings.test_a2a import add_sdk_agent, service
from tests.support.serving import serving

SECRET = "remote-agent-secret-5f1c9e"  # not shaped like an AITP key: the log redaction would not hide it


@dataclass
class Guard:
    """The remote agent's door: records the credential header of each JSON-RPC call, and refuses (401) a
    call without the expected one."""

    app: ASGIApp
    header: str = "authorization"
    expected: str | None = None
    seen: list[str | None] = field(default_factory=list)
    refused: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            got = dict(scope["headers"]).get(self.header.encode())
            self.seen.append(None if got is None else got.decode())
            if self.expected is not None and self.seen[-1] != self.expected:
                self.refused += 1
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@asynccontextmanager
async def sdk_agent(executor: AgentExecutor, scheme: SecurityScheme | None = None) -> AsyncIterator[tuple[str, Guard]]:
    """The SDK's own server (default request handler, in-memory task store) on a free port, its card asking
    for `scheme` when given: its card URL, and its door."""
    app = Starlette()
    guard = Guard(app)
    async with serving(guard) as base:
        security: dict[str, Any] = {}
        if scheme is not None:
            security = {
                "security_schemes": {"remoteKey": scheme},
                "security_requirements": [SecurityRequirement(schemes={"remoteKey": StringList()})],
            }
        yield add_sdk_agent(app, base, executor, "remote", **security), guard


def allow(card_url: str) -> tuple[str, ...]:
    """AITP_WEBHOOK_ALLOW for a loopback agent."""
    return (card_url.split("/.well-known")[0] + "/",)


class Parrot(AgentExecutor):
    """Answers every message with its text, at once (a plain message: no task)."""

    def __init__(self, name: str = "parrot") -> None:
        self.name = name
        self.heard: list[Message] = []
        self.gate: asyncio.Event | None = None  # set: answers wait for it

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        self.heard.append(context.message)
        if self.gate is not None:
            await self.gate.wait()
        await event_queue.enqueue_event(new_text_message(f"{self.name}: {context.get_user_input()}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError

    @property
    def texts(self) -> list[str]:
        """What it heard, each message once: deliveries are at least once (a message whose answer could not
        be stored is sent again, with the same messageId; nx-27017 fails one of two overlapping posts)."""
        return list({m.message_id: m.parts[0].text for m in self.heard}.values())


class Sizer(Parrot):
    """Asks "Which size?" (input-required) on a new task; completes a task it asked in."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        self.heard.append(context.message)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            task = new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, [], [context.message])
            await event_queue.enqueue_event(task)
            await updater.requires_input(updater.new_agent_message([new_text_part("Which size?")]))
        else:
            await updater.complete(
                updater.new_agent_message([new_text_part(f"Size {context.get_user_input()}, noted")])
            )


async def texts_when(client: AitpClient, thread_id: str, count: int) -> list[str]:
    """The thread's texts once it holds `count` messages."""
    async with asyncio.timeout(15):
        while len((listed := await client.list_messages(thread_id, order="asc", limit=100)).data) < count:
            await asyncio.sleep(0.05)
    return [m.content[0].text.value for m in listed.data]


async def answered(client: AitpClient, thread_id: str, text: str) -> None:
    """Wait until the thread holds a message with this text."""
    async with asyncio.timeout(15):
        while text not in [m.content[0].text.value for m in (await client.list_messages(thread_id, limit=100)).data]:
            await asyncio.sleep(0.05)


async def test_an_input_required_task_is_continued_by_the_next_message_even_after_a_restart(store: Store) -> None:
    sizer = Sizer()
    async with sdk_agent(sizer) as (card_url, _):
        async with service(store, webhook_allow=allow(card_url)) as svc:
            assert (await svc.a2a_settings("shirts", agent_card_url=card_url)).status_code == 200
            key = await svc.key("alice")
            async with AitpClient(base_url=svc.base, api_key=key) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "shirts"}])
                await alice.create_message(thread.id, content="a shirt, please")
                assert await texts_when(alice, thread.id, 2) == ["a shirt, please", "Which size?"]
            waiting = await store.a2a.remote_task("shirts", thread.id)
            assert waiting is not None and waiting.task_id == sizer.heard[0].task_id != ""
        # another instance (this one stopped) goes on with the same remote task
        async with service(store, webhook_allow=allow(card_url)) as svc:
            async with AitpClient(base_url=svc.base, api_key=key) as alice:
                await alice.create_message(thread.id, content="M")
                texts = await texts_when(alice, thread.id, 4)
                assert texts == ["a shirt, please", "Which size?", "M", "Size M, noted"]
                first, second = sizer.heard
                assert second.task_id == first.task_id == waiting.task_id
                assert second.context_id == first.context_id == thread.id
                ended = await store.a2a.remote_task("shirts", thread.id)
                assert ended == RemoteTaskRecord("shirts", thread.id, thread.id, None, ended.updated_at)  # type: ignore[union-attr]
                await alice.create_message(thread.id, content="and a hat")  # the task completed: a new one
                assert (await texts_when(alice, thread.id, 6))[-1] == "Which size?"
    third = sizer.heard[2]
    assert third.task_id != first.task_id and third.context_id == thread.id


async def test_a_task_the_agent_refuses_to_continue_is_forgotten_and_the_message_sent_as_a_new_task(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    sizer = Sizer()
    async with sdk_agent(sizer) as (card_url, _), service(store, webhook_allow=allow(card_url)) as svc:
        assert (await svc.a2a_settings("shirts", agent_card_url=card_url)).status_code == 200
        async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
            thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "shirts"}])
            # a task the agent no longer knows (its in-memory task store was emptied by a restart, say)
            await store.a2a.put_remote_task(RemoteTaskRecord("shirts", thread.id, thread.id, "task-it-forgot", 1))
            with caplog.at_level(logging.INFO, logger="aitp.deliveries.a2a"):
                await alice.create_message(thread.id, content="a shirt, please")
                assert await texts_when(alice, thread.id, 2) == ["a shirt, please", "Which size?"]
    [heard] = sizer.heard  # the refused attempt never reached the executor
    kept = await store.a2a.remote_task("shirts", thread.id)
    assert kept is not None and kept.task_id == heard.task_id and heard.task_id != "task-it-forgot"
    assert any("task-it-forgot" in r.getMessage() and "new task" in r.getMessage() for r in caplog.records)


async def test_two_agents_in_a_thread_answer_the_person_not_each_other(store: Store) -> None:
    """Reply policy `addressed` (the default): a person's message naming no one reaches both agents; their
    answers name no one and are not a person's, so neither is sent to the other. Then the person names each
    in turn: each agent heard exactly the person's two messages, in inbox order (an answer of the other
    agent sent to it would come before). One thread's posts follow each other (`two` answers once `one`'s
    answer is in): nx-27017 fails one of two overlapping posts, and a redelivery is not what is tested."""
    one, two = Parrot("one"), Parrot("two")
    two.gate = asyncio.Event()
    async with sdk_agent(one) as (url_one, _), sdk_agent(two) as (url_two, _):
        async with service(store, webhook_allow=(*allow(url_one), *allow(url_two))) as svc:
            assert (await svc.a2a_settings("one", agent_card_url=url_one)).status_code == 200
            assert (await svc.a2a_settings("two", agent_card_url=url_two)).status_code == 200
            async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "one"}, {"id": "two"}])
                await alice.create_message(thread.id, content="hello")
                await answered(alice, thread.id, "one: hello")
                two.gate.set()
                await answered(alice, thread.id, "two: hello")
                await alice.create_message(thread.id, content="bye one", metadata={"to": '["one"]'})
                await answered(alice, thread.id, "one: bye one")
                await alice.create_message(thread.id, content="bye two", metadata={"to": '["two"]'})
                await answered(alice, thread.id, "two: bye two")
    assert one.texts == ["hello", "bye one"] and two.texts == ["hello", "bye two"]


async def test_an_agent_gets_what_names_it_and_with_reply_policy_all_every_other_message(store: Store) -> None:
    parrot = Parrot()
    async with sdk_agent(parrot) as (card_url, _), service(store, webhook_allow=allow(card_url)) as svc:
        assert (await svc.a2a_settings("parrot", agent_card_url=card_url)).status_code == 200
        async with (
            AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice,
            AitpClient(base_url=svc.base, api_key=await svc.key("bob")) as bob,
        ):
            thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "bob"}, {"id": "parrot"}])
            await bob.create_message(thread.id, content="bob to all")  # an agent's chatter: passed over
            await alice.create_message(thread.id, content="alice to bob", metadata={"to": '["bob"]'})
            await bob.create_message(thread.id, content="bob to parrot", metadata={"to": '["parrot"]'})
            await answered(alice, thread.id, "parrot: bob to parrot")
            await alice.create_message(thread.id, content="alice to parrot", metadata={"to": '["parrot"]'})
            await answered(alice, thread.id, "parrot: alice to parrot")
            assert parrot.texts == ["bob to parrot", "alice to parrot"]

            settings = await svc.a2a_settings("parrot", agent_card_url=card_url, reply_policy="all")
            assert settings.status_code == 200 and settings.json()["reply_policy"] == "all"
            await bob.create_message(thread.id, content="bob to all again")
            await answered(alice, thread.id, "parrot: bob to all again")
            await alice.create_message(thread.id, content="alice to bob again", metadata={"to": '["bob"]'})
            await bob.create_message(thread.id, content="bob to parrot again", metadata={"to": '["parrot"]'})
            await answered(alice, thread.id, "parrot: bob to parrot again")
    assert parrot.texts[2:] == ["bob to all again", "bob to parrot again"]


def bearer() -> SecurityScheme:
    return SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer"))


def api_key_header() -> SecurityScheme:
    return SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Remote-Key"))


@pytest.mark.parametrize(
    ("scheme", "kind", "header", "sent"),
    [
        (bearer, "bearer", "authorization", f"Bearer {SECRET}"),
        (api_key_header, "api_key", "x-remote-key", SECRET),
    ],
)
async def test_the_credential_the_card_asks_for_is_sent_kept_cleared_and_never_shown_or_logged(
    store: Store, caplog: pytest.LogCaptureFixture, scheme: Any, kind: str, header: str, sent: str
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    parrot = Parrot()
    async with sdk_agent(parrot, scheme()) as (card_url, guard), service(store, webhook_allow=allow(card_url)) as svc:
        guard.header, guard.expected = header, sent
        put = await svc.a2a_settings("parrot", agent_card_url=card_url, credentials={kind: SECRET})
        assert put.status_code == 200 and put.json()["credentials"] == {kind: "set"}
        shown = await svc.admin.get("/a2a/parrot/settings")
        assert shown.json()["credentials"] == {kind: "set"} and SECRET not in shown.text and SECRET not in put.text
        async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
            thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "parrot"}])
            await alice.create_message(thread.id, content="one")
            await texts_when(alice, thread.id, 2)
            # a PUT that does not name the credentials keeps them (the card URL is the same)
            kept = await svc.a2a_settings("parrot", agent_card_url=card_url, reply_policy="all")
            assert kept.json()["credentials"] == {kind: "set"}
            await alice.create_message(thread.id, content="two")
            await texts_when(alice, thread.id, 4)
            # null clears them: the agent refuses the next message (logged, not answered, not retried)
            cleared = await svc.a2a_settings("parrot", agent_card_url=card_url, credentials=None)
            assert cleared.json()["credentials"] == {}
            await alice.create_message(thread.id, content="three")
            assert (await svc.a2a_settings("parrot", agent_card_url=card_url, credentials={kind: SECRET})).is_success
            await alice.create_message(thread.id, content="four")
            texts = await texts_when(alice, thread.id, 7)
    assert texts == ["one", "parrot: one", "two", "parrot: two", "three", "four", "parrot: four"]
    assert parrot.texts == ["one", "two", "four"] and guard.refused == 1
    assert guard.seen == [sent, sent, None, sent]
    assert any("did not answer" in r.getMessage() for r in caplog.records)  # the refused one
    # this process's log lines, but the remote agent's own server (in this process too), which received it,
    # and the MongoDB driver's command log (DEBUG: every document written, as stored)
    ours = [r for r in caplog.records if not r.name.startswith(("a2a.server", "pymongo"))]
    assert not [r for r in ours if SECRET in r.getMessage() or SECRET in str(r.args)]


async def test_a2a_settings_validate_reply_policy_and_credentials_without_repeating_a_secret(store: Store) -> None:
    card = "https://agent.invalid/.well-known/agent-card.json"  # never resolves: registered, never reached
    async with service(store) as svc:
        shown = await svc.admin.get("/a2a/bot/settings")
        assert shown.json()["reply_policy"] == "addressed" and shown.json()["credentials"] == {}
        cases: list[tuple[dict[str, Any], str]] = [
            ({"reply_policy": "sometimes"}, "reply_policy"),
            ({"reply_policy": 1}, "reply_policy"),
            ({"agent_card_url": card, "credentials": {"password": SECRET}}, "credentials.password"),
            ({"agent_card_url": card, "credentials": {"bearer": 12345}}, "credentials.bearer"),
            ({"agent_card_url": card, "credentials": {"bearer": f"{SECRET}\r\nX-Evil: 1"}}, "credentials.bearer"),
            ({"agent_card_url": card, "credentials": {"bearer": ""}}, "credentials.bearer"),
            ({"agent_card_url": card, "credentials": SECRET}, "credentials"),
            ({"credentials": {"bearer": SECRET}}, "credentials"),  # no agent to send it to
        ]
        for body, param in cases:
            refused = await svc.a2a_settings("bot", **body)
            assert refused.status_code == 400, (body, refused.text)
            assert refused.json()["error"]["param"] == param, (body, refused.text)
            assert SECRET not in refused.text
        put = await svc.a2a_settings("bot", agent_card_url=card, credentials={"bearer": SECRET}, reply_policy="all")
        assert put.status_code == 200, put.text
        assert (put.json()["reply_policy"], put.json()["credentials"]) == ("all", {"bearer": "set"})
        # PUT replaces the settings whole: the reply policy goes back to its default when not given
        same = await svc.a2a_settings("bot", agent_card_url=card)
        assert (same.json()["reply_policy"], same.json()["credentials"]) == ("addressed", {"bearer": "set"})
        # another agent's card: the secret given for the first one is not kept for it
        other = await svc.a2a_settings("bot", agent_card_url="https://other.invalid/.well-known/agent-card.json")
        assert other.json()["credentials"] == {}
        held = await store.a2a.get("bot")
        assert held is not None and held.credentials == {}
