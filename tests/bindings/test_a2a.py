"""The A2A face, end to end on every backend: an AITP agent (the Python client's `Agent`, on its inbox
stream) reached by the `a2a-sdk` client over real HTTP and SSE, and an A2A agent built from the SDK
standing in a thread as an actor.

Specification: an actor that opts in is an A2A agent at /a2a/{actor} with its Agent Card; a message opens
a task in a thread between the caller and the agent, the agent's answer completes it, a request it sends
(request_decision) makes it input-required until the caller's answer; streams resume from the thread's
log without a gap; AITP's refusals arrive as A2A errors; actors that did not opt in are not reachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.applications import Starlette

from aitp.app import create_app
from aitp.bindings.a2a.send import _text_message
from aitp.client import Agent, AitpClient, Incoming
from aitp.config import Settings
from aitp.deliveries.a2a import POLL
from aitp.store import Store
from tests.conftest import ADMIN_KEY
from tests.support.serving import serving

DECISIONS = "https://aitp.dev/v1/decisions/schema.json"
EXAMPLES = Path(__file__).parents[2] / "capabilities" / "aitp-02-decisions" / "1.0.0" / "examples"
WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


@dataclass
class Service:
    base: str
    admin: httpx.AsyncClient

    async def key(self, actor: str) -> str:
        response = await self.admin.post("/v1/keys", json={"actor": actor})
        assert response.status_code == 200, response.text
        key: str = response.json()["key"]
        return key

    async def a2a_settings(self, actor: str, **settings: Any) -> httpx.Response:
        return await self.admin.put(f"/a2a/{actor}/settings", json=settings)

    async def client(self, key: str, agent: str, *, streaming: bool = True) -> Client:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        config = ClientConfig(streaming=streaming, httpx_client=http)
        return await ClientFactory(config).create_from_url(f"{self.base}/a2a/{agent}")


@asynccontextmanager
async def service(store: Store, **changes: Any) -> AsyncIterator[Service]:
    # anyone may contact the actors these tests make (the contact policies: tests/api/test_identities.py)
    settings = Settings(store_url="unused://", admin_key=ADMIN_KEY, **{"contact_policy": "anyone", **changes})
    app = create_app(settings, store=store)
    async with app.router.lifespan_context(app), serving(app) as base:
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=base, headers=headers) as admin:
            yield Service(base, admin)


@asynccontextmanager
async def agent_running(
    base: str, key: str, on_text: Callable[[Incoming], Awaitable[None]], capabilities: list[str] | None = None
) -> AsyncIterator[Agent]:
    """An AITP agent following its inbox, answering text with `on_text`."""
    async with AitpClient(base_url=base, api_key=key) as client:
        agent = Agent(client, capabilities=capabilities or [])
        agent.on_text(on_text)
        task = asyncio.create_task(agent.run())
        await asyncio.sleep(0.2)  # its inbox stream is open
        try:
            yield agent
        finally:
            agent.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def a2a_message(*parts: dict[str, Any], **fields: Any) -> Message:
    return ParseDict({"messageId": "m-1", "role": "ROLE_USER", "parts": list(parts), **fields}, Message())


def text_message(text: str, **fields: Any) -> Message:
    return a2a_message({"text": text}, **fields)


def data_part(message: dict[str, Any]) -> dict[str, Any]:
    """An AITP capability message as an A2A data part: its `$schema` in the part's metadata."""
    data = {k: v for k, v in message.items() if k != "$schema"}
    return {"data": data, "metadata": {"$schema": message["$schema"]}}


async def echo(incoming: Incoming) -> None:
    await incoming.reply(f"echo: {incoming.text}")


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


async def test_message_send_is_answered_by_the_aitp_agent(store: Store) -> None:
    async with service(store) as svc:
        assert (await svc.a2a_settings("shop", serve=True)).status_code == 200
        async with agent_running(svc.base, await svc.key("shop"), echo):
            client = await svc.client(await svc.key("alice"), "shop", streaming=False)
            [response] = await collect(client.send_message(SendMessageRequest(message=text_message("hello"))))
            task = response.task
            assert task.status.state == COMPLETED
            assert task.status.message.parts[0].text == "echo: hello"
            assert [m.role for m in task.history] == [1, 2]  # user, agent
            # the same task, read again
            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == COMPLETED and again.context_id == task.context_id


@pytest.mark.parametrize("ending", ["thread deleted", "caller removed"])
async def test_a_send_waiting_for_its_agent_returns_the_task_working_when_the_thread_ends(
    store: Store, ending: str
) -> None:
    async with service(store, a2a_wait_seconds=120) as svc:
        await svc.a2a_settings("shop", serve=True)

        async def end_the_thread(incoming: Incoming) -> None:  # the agent never answers: it ends the thread
            if ending == "thread deleted":
                response = await svc.admin.delete(f"/v1/threads/{incoming.thread_id}")
            else:
                response = await svc.admin.delete(f"/v1/threads/{incoming.thread_id}/actors/alice")
            assert response.status_code == 200, response.text

        async with agent_running(svc.base, await svc.key("shop"), end_the_thread):
            client = await svc.client(await svc.key("alice"), "shop", streaming=False)
            async with asyncio.timeout(30):  # well before the 120 s wait: the wait saw the thread end
                [response] = await collect(client.send_message(SendMessageRequest(message=text_message("hello"))))
            assert response.task.status.state == WORKING


async def test_a_stream_shows_the_task_then_its_completion(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        async with agent_running(svc.base, await svc.key("shop"), echo):
            client = await svc.client(await svc.key("alice"), "shop")
            events = await collect(client.send_message(SendMessageRequest(message=text_message("hi"))))
            assert events[0].task.status.state == WORKING
            assert events[-1].status_update.status.state == COMPLETED
            assert events[-1].status_update.status.message.parts[0].text == "echo: hi"
            assert events[-1].status_update.task_id == events[0].task.id


async def test_resubscribing_after_a_dropped_stream_misses_nothing(store: Store) -> None:
    """The stream drops after its first event; the agent answers twice meanwhile (a question, then the
    final answer to the caller's reply); resubscribing shows the task as it is, then what follows."""
    release = asyncio.Event()

    async def slow(incoming: Incoming) -> None:
        await release.wait()
        await incoming.reply("done")

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        async with agent_running(svc.base, await svc.key("shop"), slow):
            client = await svc.client(await svc.key("alice"), "shop")
            stream = client.send_message(SendMessageRequest(message=text_message("work")))
            first = await anext(stream)
            await stream.aclose()  # the connection drops
            task_id = first.task.id
            resubscribed = client.subscribe(SubscribeToTaskRequest(id=task_id))
            snapshot = await anext(resubscribed)
            assert snapshot.task.id == task_id and snapshot.task.status.state == WORKING
            release.set()
            rest = await collect(resubscribed)
            assert [e.status_update.status.state for e in rest] == [COMPLETED]
            assert rest[0].status_update.status.message.parts[0].text == "done"


async def test_a_decision_request_makes_the_task_input_required_until_answered(store: Store) -> None:
    request = json.loads((EXAMPLES / "request_decision_products.json").read_text())
    choice = json.loads((EXAMPLES / "decision_products.json").read_text())
    choice["decision"]["request_decision_id"] = request["request_decision"]["id"]
    choice["decision"]["options"] = [{"id": request["request_decision"]["options"][0]["id"]}]

    async def shop(incoming: Incoming) -> None:
        await incoming.reply([json.dumps(request)])

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        async with agent_running(svc.base, await svc.key("shop"), shop) as agent:

            @agent.on("decision")
            async def chosen(incoming: Incoming) -> None:
                await incoming.reply("ordered")

            client = await svc.client(await svc.key("alice"), "shop", streaming=False)
            ask = text_message("headphones?", extensions=[DECISIONS])
            [asked] = await collect(client.send_message(SendMessageRequest(message=ask)))
            task = asked.task
            assert task.status.state == INPUT_REQUIRED
            part = MessageToDict(task.status.message.parts[0])
            assert part["metadata"] == {"$schema": DECISIONS}
            assert part["data"]["request_decision"]["id"] == request["request_decision"]["id"]

            answer = a2a_message(data_part(choice), taskId=task.id, contextId=task.context_id, messageId="m-2")
            [answered] = await collect(client.send_message(SendMessageRequest(message=answer)))
            assert answered.task.id == task.id
            assert answered.task.status.state == COMPLETED
            assert answered.task.status.message.parts[0].text == "ordered"
            users = [m.message_id for m in answered.task.history if m.role == Role.ROLE_USER]
            assert users == ["m-1", "m-2"] and len(answered.task.history) == 4


async def test_an_invalid_data_part_is_refused_with_the_mapped_error(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        client = await svc.client(await svc.key("alice"), "shop", streaming=False)
        bad = a2a_message(data_part({"$schema": DECISIONS, "decision": {"options": "none"}}), extensions=[DECISIONS])
        with pytest.raises(InvalidParamsError) as refused:
            await collect(client.send_message(SendMessageRequest(message=bad)))
        assert refused.value.data["aitp_code"] == "invalid_capability_message"
        # a new context (its thread opened with the message in one write) or a named one: the same refusal
        in_context = a2a_message(
            data_part({"$schema": DECISIONS, "decision": {"options": "none"}}), extensions=[DECISIONS], contextId="c-1"
        )
        with pytest.raises(InvalidParamsError) as refused_in_context:
            await collect(client.send_message(SendMessageRequest(message=in_context)))
        assert refused_in_context.value.data == refused.value.data
        assert refused_in_context.value.message == refused.value.message
        assert refused.value.data["param"].startswith("content[0]")
        unknown = a2a_message(data_part({"$schema": "https://example.com/nope.json", "x": {}}))
        with pytest.raises(ContentTypeNotSupportedError):
            await collect(client.send_message(SendMessageRequest(message=unknown)))


async def test_only_actors_that_opted_in_are_reachable_and_only_by_members(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        async with httpx.AsyncClient(base_url=svc.base, headers={"Authorization": f"Bearer {key}"}) as http:
            assert (await http.get("/a2a/hidden/.well-known/agent-card.json")).status_code == 404
            call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            assert (await http.post("/a2a/hidden", json=call)).status_code == 404
            assert (await httpx.AsyncClient().post(f"{svc.base}/a2a/shop", json=call)).status_code == 401
            # the settings are the actor's own
            assert (await http.put("/a2a/alice/settings", json={"serve": True})).status_code == 200
            assert (await http.put("/a2a/shop/settings", json={"serve": False})).status_code == 403
        client = await svc.client(key, "shop", streaming=False)
        [sent] = await collect(
            client.send_message(
                SendMessageRequest(message=text_message("x"), configuration={"return_immediately": True})
            )
        )
        bob = await svc.client(await svc.key("bob"), "shop", streaming=False)
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=sent.task.id))  # not in the task's thread
        with pytest.raises(TaskNotFoundError):
            await bob.send_message(SendMessageRequest(message=text_message("y", taskId=sent.task.id))).__anext__()


class Parrot(AgentExecutor):
    """A remote A2A agent built from the SDK: answers every message with its text, at once."""

    def __init__(self) -> None:
        self.heard: list[Message] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        self.heard.append(context.message)
        await event_queue.enqueue_event(new_text_message(f"parrot: {context.get_user_input()}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def add_sdk_agent(app: Starlette, base: str, executor: AgentExecutor, name: str, **card: Any) -> str:
    """The SDK's own agent routes (default request handler, in-memory task store) on `app`, its card naming
    `base` as its JSON-RPC interface (`card`: more of the card's fields, e.g. its security): its card URL."""
    described = AgentCard(
        name=name,
        description=f"a remote agent, {name}",
        version="1",
        supported_interfaces=[AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=name, name=name, description=f"a remote agent, {name}", tags=["test"])],
        **card,
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=described)
    app.router.routes.extend([*create_agent_card_routes(described), *create_jsonrpc_routes(handler, "/")])
    return f"{base}/.well-known/agent-card.json"


@asynccontextmanager
async def sdk_agent(executor: AgentExecutor) -> AsyncIterator[str]:
    """The SDK's own server on a free port: its card URL."""
    app = Starlette()
    async with serving(app) as base:
        yield add_sdk_agent(app, base, executor, "parrot")


@asynccontextmanager
async def parrot_in_service(store: Store, parrot: Parrot) -> AsyncIterator[Service]:
    """The service with `parrot` (a remote A2A agent) standing in threads as the actor `parrot`."""
    async with (
        sdk_agent(parrot) as card_url,
        service(store, webhook_allow=(card_url.split("/.well-known")[0] + "/",)) as svc,
    ):
        assert (await svc.a2a_settings("parrot", agent_card_url=card_url)).status_code == 200
        yield svc


async def test_an_a2a_agent_answers_in_a_thread_as_its_actor(store: Store) -> None:
    parrot = Parrot()
    async with parrot_in_service(store, parrot) as svc:
        async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
            thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "parrot"}])
            await alice.create_message(thread.id, content="hello")
            async with asyncio.timeout(10):
                while True:
                    listed = await alice.list_messages(thread.id, order="asc")
                    if len(listed.data) == 2:
                        break
                    await asyncio.sleep(0.05)
        reply = listed.data[1]
        assert reply.metadata["actor"] == "parrot"
        assert reply.content[0].text.value == "parrot: hello"
        assert [m.context_id for m in parrot.heard] == [thread.id]


async def test_writes_in_threads_without_the_a2a_agent_do_not_wake_its_delivery(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An A2A agent's worker wakes for its own threads' events (as its inbox streams would), not at every
    write anywhere: each wake-up reads its settings and takes its lease (a write)."""
    parrot = Parrot()
    async with parrot_in_service(store, parrot) as svc:
        async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
            await alice.create_message((await alice.create_thread(actors=[{"id": "alice"}])).id, content="start")
            await asyncio.sleep(0.2)  # the worker has started and read the agent once
            looks: list[str] = []
            get = store.a2a.get

            async def counted(actor: str) -> Any:
                looks.append(actor)
                return await get(actor)

            elsewhere = await alice.create_thread(actors=[{"id": "alice"}])  # a creation wakes every inbox
            await asyncio.sleep(0.2)
            monkeypatch.setattr(store.a2a, "get", counted)
            started = time.monotonic()
            for i in range(20):
                await alice.create_message(elsewhere.id, content=f"not for the parrot {i}")
            polls = (time.monotonic() - started) / POLL  # the worker also looks every POLL seconds
            assert len(looks) <= polls + 1, (looks, polls)  # 20 before: one per write
            with_parrot = await alice.create_thread(actors=[{"id": "alice"}, {"id": "parrot"}])
            await alice.create_message(with_parrot.id, content="hello")
            async with asyncio.timeout(10):
                while len((await alice.list_messages(with_parrot.id)).data) < 2:
                    await asyncio.sleep(0.05)
        assert [m.parts[0].text for m in parrot.heard] == ["hello"]


class Hangs(Parrot):
    """An agent that never answers its first message (the instance sending it stops meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.first = asyncio.Event()
        self.release = asyncio.Event()  # set once that instance stopped: the SDK's server can stop then

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if not self.heard:
            assert context.message is not None
            self.heard.append(context.message)
            self.first.set()
            await self.release.wait()
            await event_queue.enqueue_event(new_text_message("too late"))  # to nobody: that request is gone
            return
        await super().execute(context, event_queue)


async def test_a_message_whose_delivery_was_cut_short_is_sent_again(store: Store) -> None:
    agent = Hangs()
    async with sdk_agent(agent) as card_url:
        allow = (card_url.split("/.well-known")[0] + "/",)
        async with service(store, webhook_allow=allow) as svc:
            assert (await svc.a2a_settings("parrot", agent_card_url=card_url)).status_code == 200
            key = await svc.key("alice")
            async with AitpClient(base_url=svc.base, api_key=key) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "parrot"}])
                await alice.create_message(thread.id, content="hello")
            async with asyncio.timeout(10):
                await agent.first.wait()
        agent.release.set()
        # that instance stopped while the agent held the message; the next one sends it again
        async with service(store, webhook_allow=allow) as svc, AitpClient(base_url=svc.base, api_key=key) as alice:
            async with asyncio.timeout(10):
                while len((listed := await alice.list_messages(thread.id, order="asc")).data) < 2:
                    await asyncio.sleep(0.05)
    assert listed.data[1].content[0].text.value == "parrot: hello"
    assert [m.message_id for m in agent.heard] == [listed.data[0].id] * 2


def send_call(request_id: Any, text: str = "hello", **fields: Any) -> dict[str, Any]:
    message = {"messageId": f"m-{request_id}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {"message": message}, **fields}


async def test_send_message_on_the_wire_is_a_json_rpc_answer_with_the_completed_task(store: Store) -> None:
    """SendMessage is answered outside the SDK's generic dispatcher (bench/a2a_send.py): the answer is still
    a JSON-RPC 2.0 response echoing the request's id, whose result is a SendMessageResponse to the letter."""
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with agent_running(svc.base, await svc.key("shop"), echo), httpx.AsyncClient(headers=headers) as http:
            for request_id in ("req-1", 7):
                answer = (await http.post(f"{svc.base}/a2a/shop", json=send_call(request_id))).json()
                assert answer.keys() == {"jsonrpc", "id", "result"}
                assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id
                task = ParseDict(answer["result"], SendMessageResponse()).task  # no unknown field
                assert task.status.state == COMPLETED
                assert task.status.message.parts[0].text == "echo: hello"
                assert [m.message_id for m in task.history][0] == f"m-{request_id}"


async def test_send_message_errors_are_the_sdk_dispatchers_own(store: Store) -> None:
    """Whatever the SendMessage path does not serve itself (a malformed request or params, no id, another
    protocol version) is answered by the SDK's dispatcher: the same answer as the SDK's own server gives,
    byte for byte once parsed."""
    refused = [
        (send_call(1, params={"message": {"parts": "x"}}), {"A2A-Version": "1.0"}),  # params: -32602
        ({**send_call(2), "extra": True}, {"A2A-Version": "1.0"}),  # not a JSON-RPC request: -32600
        ({**send_call(3), "jsonrpc": "1.0"}, {"A2A-Version": "1.0"}),
        (send_call(4), {"A2A-Version": "2.0"}),  # a version this endpoint does not speak: -32009
        (send_call(5), {}),  # no version: 0.3, which has no SendMessage
    ]
    async with sdk_agent(Parrot()) as card_url, service(store) as svc:
        reference = card_url.split("/.well-known")[0] + "/"
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        async with httpx.AsyncClient() as http:
            for body, headers in refused:
                ours = await http.post(
                    f"{svc.base}/a2a/shop", json=body, headers={"Authorization": f"Bearer {key}", **headers}
                )
                theirs = await http.post(reference, json=body, headers=headers)
                assert (ours.status_code, ours.json()) == (theirs.status_code, theirs.json()), body
                assert "error" in ours.json()


async def test_send_message_answers_the_task_as_tasks_get_shows_it(store: Store) -> None:
    """SendMessage prints its task without the SDK's protobuf printer; tasks/get (the SDK's dispatcher and
    printer) shows the same task identically: text answers, a capability message as a data part, every
    history length."""
    decision = json.loads((EXAMPLES / "request_decision_products.json").read_text())

    async def shop(incoming: Incoming) -> None:
        await incoming.reply([json.dumps(decision)] if incoming.text == "decide" else f"echo: {incoming.text}")

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with agent_running(svc.base, await svc.key("shop"), shop), httpx.AsyncClient(headers=headers) as http:

            async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                answer: dict[str, Any] = (await http.post(f"{svc.base}/a2a/shop", json=body)).json()
                return answer["result"]

            states = []
            for text, history in [("hi", None), ("decide", None), ("hi", 0), ("hi", 1), ("émoji 🎧", 5)]:
                params: dict[str, Any] = send_call(text, text)["params"]
                params["message"]["extensions"] = [DECISIONS]
                if history is not None:
                    params["configuration"] = {"historyLength": history}
                sent = (await call("SendMessage", params))["task"]
                shown = await call(
                    "GetTask", {"id": sent["id"], **({} if history is None else {"historyLength": history})}
                )
                assert sent == shown
                states.append(sent["status"]["state"])
            assert states == ["TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"] + ["TASK_STATE_COMPLETED"] * 3


@pytest.mark.parametrize(
    ("params", "read_here"),
    [
        ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}, True),
        ({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": ""}], "taskId": "t"}}, True),
        ({"message": {"contextId": "c", "parts": []}}, True),
        ({"message": {"messageId": "m", "role": "NOPE", "parts": [{"text": "hi"}]}}, False),
        ({"message": {"message_id": "m", "parts": [{"text": "hi"}]}}, False),
        ({"message": {"messageId": None, "parts": [{"text": "hi"}]}}, False),
        ({"message": {"parts": [{"text": "hi", "metadata": {}}]}}, False),
        ({"message": {"parts": [{"text": "hi"}]}, "configuration": {}}, False),
    ],
)
def test_a_text_message_is_read_as_the_sdks_parser_reads_it(params: dict[str, Any], read_here: bool) -> None:
    """SendMessage reads a plain text message itself (`send._text_message`): the same request as the SDK's
    `ParseDict`, or nothing for anything else (then ParseDict reads it)."""
    read = _text_message(params)
    assert (read is not None) == read_here
    if read is not None:
        assert read == ParseDict(params, SendMessageRequest(), ignore_unknown_fields=True)


@pytest.mark.parametrize(
    ("method", "params", "param"),
    [
        ("SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}}, "message.messageId"),
        ("SendMessage", {"message": {"messageId": "m1", "parts": [{"text": "hi"}]}}, "message.role"),
        (
            "SendMessage",
            {
                "message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"historyLength": -1},
            },
            "configuration.historyLength",
        ),
        ("SendStreamingMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}}, "message.messageId"),
        ("GetTask", {"id": "TASK", "historyLength": -1}, "historyLength"),
        ("ListTasks", {"pageToken": "-5"}, "pageToken"),
        ("ListTasks", {"pageToken": "x"}, "pageToken"),
        ("ListTasks", {"historyLength": -2}, "historyLength"),
        ("ListTasks", {"pageSize": 0}, "pageSize"),
        ("ListTasks", {"status": "TASK_STATE_BOGUS"}, "status"),
        ("ListTasks", {"status": 99}, "status"),
    ],
)
async def test_each_bad_param_is_refused_with_invalid_params_naming_it(
    store: Store, method: str, params: dict[str, Any], param: str
) -> None:
    """JSON-RPC params the spec requires or bounds are checked: -32602, the field named in the error's
    ErrorInfo metadata (`param`, as AITP refusals on this face); nothing is sent to the agent, no task made."""
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with agent_running(svc.base, await svc.key("shop"), echo), httpx.AsyncClient(headers=headers) as http:
            first = (await http.post(f"{svc.base}/a2a/shop", json=send_call("first"))).json()["result"]["task"]
            params = json.loads(json.dumps(params).replace("TASK", first["id"]))
            body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
            answer = await http.post(f"{svc.base}/a2a/shop", json=body)
            if method == "SendStreamingMessage":  # answered as a stream of one error event
                text = answer.text
                error = json.loads(text[text.index("{") : text.rindex("}") + 1])["error"]
            else:
                error = answer.json()["error"]
            assert error["code"] == -32602, error
            (info,) = [d for d in error["data"] if d["@type"].endswith("google.rpc.ErrorInfo")]  # the SDK's form
            assert info["metadata"]["param"] == param, error
            listed = await http.post(
                f"{svc.base}/a2a/shop", json={"jsonrpc": "2.0", "id": 10, "method": "ListTasks", "params": {}}
            )
            assert len(listed.json()["result"]["tasks"]) == 1
