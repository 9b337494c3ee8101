"""A2A tasks that end, are routed by task, and are made once, end to end on every backend: the `a2a-sdk`
client (or raw JSON-RPC) against the A2A face, an AITP agent (the Python client's `Agent`) behind it.

Specification (bindings/a2a/tasks.py):
- the agent's answer refused because the caller did not declare its capability ends the task `failed` at
  once, its status message naming the capability and how to declare it: SendMessage (blocking and
  streaming), GetTask and ListTasks alike, and an instance reading the store later; the client declares it
  with its next message's `extensions` and is answered;
- two tasks at once in one context each get their own answer: an answer naming nothing goes to the oldest
  task waiting for the agent, one naming the message it replies to (`reply_to`, `a2a_reply_to`) or answering
  the caller's request (a decision) goes to that message's task;
- a SendMessage sent again with the same messageId (same caller, same agent) answers the same task, posts
  nothing twice: a new context, a named context, a task's next message; the fast path, the SDK's
  dispatcher (A2A 0.3) and streaming alike; a refused message does not hold its messageId;
- an A2A message's `metadata.to` names the AITP message's recipients.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from google.protobuf.json_format import MessageToDict

from aitp.client import AitpClient, Incoming
from aitp.store import Store
from tests.bindings.test_a2a import (
    DECISIONS,
    EXAMPLES,
    Service,
    a2a_message,
    agent_running,
    collect,
    data_part,
    echo,
    service,
    text_message,
)

FAILED = TaskState.TASK_STATE_FAILED
COMPLETED = TaskState.TASK_STATE_COMPLETED
WORKING = TaskState.TASK_STATE_WORKING
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
REQUEST = json.loads((EXAMPLES / "request_decision_products.json").read_text())


def request_decision(request_id: str) -> dict[str, Any]:
    request = copy.deepcopy(REQUEST)
    request["request_decision"]["id"] = request_id
    return request


def decision_for(request: dict[str, Any]) -> dict[str, Any]:
    asked = request["request_decision"]
    return {
        "$schema": DECISIONS,
        "decision": {"request_decision_id": asked["id"], "options": [{"id": asked["options"][0]["id"]}]},
    }


async def asks_a_decision(incoming: Incoming) -> None:
    await incoming.reply([json.dumps(request_decision(f"ask-{incoming.message.id}"))])


async def until_ended(client: Any, task_id: str) -> Task:
    """The task once it stops working, followed on a resubscribed stream (nothing is polled); a task that
    ended already cannot be subscribed to: it is read."""
    try:
        async with asyncio.timeout(30):  # a hang guard only: the stream ends when the task does
            events = await collect(client.subscribe(SubscribeToTaskRequest(id=task_id)))
    except UnsupportedOperationError:
        ended: Task = await client.get_task(GetTaskRequest(id=task_id))
        return ended
    task: Task = events[0].task
    for event in events[1:]:
        task.status.CopyFrom(event.status_update.status)
    return task


# ------------------------------------------------------------------ refused answers end the task


def assert_refusal(task: Task) -> None:
    assert task.status.state == FAILED
    notice = task.status.message
    assert notice.role == Role.ROLE_AGENT and notice.task_id == task.id
    text = notice.parts[0].text
    assert "request_decision" in text and DECISIONS in text and "extensions" in text, text
    metadata = MessageToDict(notice.metadata)
    assert metadata["aitp_code"] == "capability_not_supported"
    assert metadata["aitp_capability"] == "aitp-02-decisions"


async def test_an_answer_the_caller_cannot_read_fails_the_task_at_once(store: Store) -> None:
    async with service(store, a2a_wait_seconds=120) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        key = await svc.key("alice")
        async with agent_running(svc.base, await svc.key("shop"), asks_a_decision):
            client = await svc.client(key, "shop", streaming=False)
            # blocking SendMessage: the agent's request_decision is refused (alice declared nothing)
            [sent] = await collect(client.send_message(SendMessageRequest(message=text_message("hi?"))))
            task = sent.task
            assert_refusal(task)
            assert [m.role for m in task.history] == [Role.ROLE_USER]  # the refused message was never posted
            assert await client.get_task(GetTaskRequest(id=task.id)) == task
            listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
            assert list(listed.tasks) == [task]

            streaming = await svc.client(key, "shop")
            events = await collect(
                streaming.send_message(SendMessageRequest(message=text_message("hi?", messageId="m-2")))
            )
            assert events[0].task.status.state == WORKING
            streamed = events[0].task
            streamed.status.CopyFrom(events[-1].status_update.status)
            assert_refusal(streamed)

            # declaring the capability with the next message of the context: the agent's question arrives
            ask = text_message("hi again", messageId="m-3", contextId=task.context_id, extensions=[DECISIONS])
            [asked] = await collect(client.send_message(SendMessageRequest(message=ask)))
            assert asked.task.status.state == INPUT_REQUIRED
            assert asked.task.id != task.id
    # another instance, reading the same store later: the same failed task
    async with service(store) as svc:
        later = await svc.client(key, "shop", streaming=False)
        assert await later.get_task(GetTaskRequest(id=task.id)) == task


# ------------------------------------------------------------------ answers routed by task


@asynccontextmanager
async def two_tasks(svc: Service, **first: Any) -> AsyncIterator[tuple[Any, list[str]]]:
    """A client that sent "one" then "two" in one context (each returned at once): its tasks' ids."""
    client = await svc.client(await svc.key("alice"), "shop", streaming=True)
    ids = []
    for i, text in enumerate(["one", "two"]):
        message = text_message(text, messageId=f"m-{text}", contextId="ctx")
        request = SendMessageRequest(message=message, configuration={"return_immediately": True})
        [sent] = await collect(
            (await svc.client(await svc.key("alice"), "shop", streaming=False)).send_message(request)
        )
        assert sent.task.status.state == WORKING, i
        ids.append(sent.task.id)
    yield client, ids


async def test_two_tasks_at_once_in_one_context_are_answered_in_order(store: Store) -> None:
    """The agent answers each message in turn, naming nothing: first in, first answered."""
    release = asyncio.Event()

    async def held(incoming: Incoming) -> None:
        await release.wait()
        await incoming.reply(f"echo: {incoming.text}")

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        async with agent_running(svc.base, await svc.key("shop"), held), two_tasks(svc) as (client, ids):
            release.set()
            answers = [await until_ended(client, task_id) for task_id in ids]
            assert [a.status.state for a in answers] == [COMPLETED, COMPLETED]
            assert [a.status.message.parts[0].text for a in answers] == ["echo: one", "echo: two"]
            listed = await client.list_tasks(ListTasksRequest(context_id="ctx"))
            assert sorted(t.status.message.parts[0].text for t in listed.tasks) == ["echo: one", "echo: two"]


@pytest.mark.parametrize("marker", ["reply_to", "a2a_reply_to", None])
async def test_an_answer_naming_the_message_it_replies_to_goes_to_its_task(store: Store, marker: str | None) -> None:
    """The agent answers the second message first, each reply naming the message it answers (None: as
    `Incoming.reply` names it by itself)."""
    heard: list[Incoming] = []

    async def later_first(incoming: Incoming) -> None:
        heard.append(incoming)
        if len(heard) == 2:
            for each in reversed(heard):
                metadata = None if marker is None else {marker: each.message.id}
                await each.reply(f"echo: {each.text}", metadata=metadata)

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        async with agent_running(svc.base, await svc.key("shop"), later_first), two_tasks(svc) as (client, ids):
            answers = [await until_ended(client, task_id) for task_id in ids]
            assert [a.status.message.parts[0].text for a in answers] == ["echo: one", "echo: two"]


async def test_a_refused_answer_fails_the_task_of_the_message_it_replies_to(store: Store) -> None:
    """The agent answers the second message first with a request the caller cannot read (refused), then the
    first with text: the second task fails, the first completes."""
    heard: list[Incoming] = []

    async def later_first(incoming: Incoming) -> None:
        heard.append(incoming)
        if len(heard) == 2:
            first, second = heard
            with pytest.raises(Exception, match="capability_not_supported"):
                await second.reply([json.dumps(request_decision("ask-second"))])
            await first.reply(f"echo: {first.text}")

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        async with agent_running(svc.base, await svc.key("shop"), later_first), two_tasks(svc) as (client, ids):
            first, second = [await until_ended(client, task_id) for task_id in ids]
            assert first.status.state == COMPLETED and first.status.message.parts[0].text == "echo: one"
            assert_refusal(second)


async def test_a_decision_goes_to_the_task_of_the_request_it_answers(store: Store) -> None:
    """The caller asks the agent to choose in two tasks; the agent decides the second request first."""
    asked: list[Incoming] = []

    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        async with agent_running(svc.base, await svc.key("shop"), echo) as agent:

            @agent.on("request_decision")
            async def choose(incoming: Incoming) -> None:
                asked.append(incoming)
                if len(asked) == 2:
                    for each in reversed(asked):
                        await each.reply([json.dumps(decision_for(each.part.document))])  # type: ignore[union-attr]

            client = await svc.client(await svc.key("alice"), "shop", streaming=False)
            ids = []
            for n in (1, 2):
                part = data_part(request_decision(f"r-{n}"))
                message = a2a_message(part, messageId=f"m-{n}", contextId="ctx", extensions=[DECISIONS])
                request = SendMessageRequest(message=message, configuration={"return_immediately": True})
                [sent] = await collect(client.send_message(request))
                ids.append(sent.task.id)
            streaming = await svc.client(await svc.key("alice"), "shop")
            answers = [await until_ended(streaming, task_id) for task_id in ids]
            chosen = [MessageToDict(a.status.message.parts[0])["data"]["decision"] for a in answers]
            assert [c["request_decision_id"] for c in chosen] == ["r-1", "r-2"]
            assert [a.status.state for a in answers] == [COMPLETED, COMPLETED]


# ------------------------------------------------------------------ a message sent again


def call(method: str, message: dict[str, Any], request_id: int = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message, **params}}


def text(message_id: str, value: str = "hello", **fields: Any) -> dict[str, Any]:
    return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": value}], **fields}


async def thread_messages(svc: Service, key: str, thread_id: str) -> list[Any]:
    async with AitpClient(base_url=svc.base, api_key=key) as client:
        return list((await client.list_messages(thread_id, order="asc")).data)


async def test_a_message_sent_again_answers_the_same_task_and_posts_nothing(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            agent_running(svc.base, await svc.key("shop"), echo),
            httpx.AsyncClient(base_url=svc.base, headers=headers) as http,
        ):

            async def send(body: dict[str, Any], version: str | None = "1.0") -> dict[str, Any]:
                sent = await http.post("/a2a/shop", json=body, headers={"A2A-Version": version} if version else {})
                answer: dict[str, Any] = sent.json()
                assert "result" in answer, answer
                return answer["result"]

            # a new context, on the fast path (a plain text message) and through the SDK's parser (metadata)
            for message in (text("m-new"), text("m-meta", metadata={"note": "x"})):
                first = (await send(call("SendMessage", message)))["task"]
                again = (await send(call("SendMessage", message, 2)))["task"]
                assert again == first and first["status"]["state"] == "TASK_STATE_COMPLETED"
                thread = first["metadata"]["aitp_thread_id"]
                assert len(await thread_messages(svc, key, thread)) == 2  # the message and its answer, once
            listed = await send({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}})
            assert len(listed["tasks"]) == 2

            # a named context, then a task's next message
            first = (await send(call("SendMessage", text("m-ctx", contextId="c-1"))))["task"]
            assert (await send(call("SendMessage", text("m-ctx", contextId="c-1"), 2)))["task"] == first
            follow_up = text("m-next", "more", taskId=first["id"])
            # (the task completed: a next message is refused, the same one sent again is not)
            refused = (
                await http.post("/a2a/shop", json=call("SendMessage", follow_up), headers={"A2A-Version": "1.0"})
            ).json()
            assert "error" in refused
            thread = first["metadata"]["aitp_thread_id"]
            assert len(await thread_messages(svc, key, thread)) == 2

            # the SDK's dispatcher: A2A 0.3 `message/send`, and SendStreamingMessage
            legacy = {"kind": "message", "messageId": "m-03", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
            first_03 = await send(call("message/send", legacy), version=None)
            again_03 = await send(call("message/send", legacy, 2), version=None)
            assert first_03["id"] == again_03["id"] and first_03["kind"] == "task"
        client = await svc.client(key, "shop")
        async with agent_running(svc.base, await svc.key("shop"), echo):
            streams = [
                await collect(client.send_message(SendMessageRequest(message=text_message("s", messageId="m-s"))))
                for _ in range(2)
            ]
        assert streams[0][0].task.id == streams[1][0].task.id
        assert streams[1][0].task.status.state == COMPLETED  # as it stands: answered by the first time


async def test_a_message_sent_again_after_its_context_was_deleted_is_refused_naming_its_id(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with (
            agent_running(svc.base, await svc.key("shop"), echo),
            httpx.AsyncClient(base_url=svc.base, headers=headers) as http,
        ):
            first = (await http.post("/a2a/shop", json=call("SendMessage", text("m-gone")))).json()["result"]["task"]
            deleted = await http.delete(f"/v1/threads/{first['metadata']['aitp_thread_id']}")
            assert deleted.status_code == 200, deleted.text
            again = (await http.post("/a2a/shop", json=call("SendMessage", text("m-gone"), 2))).json()
        error = again["error"]
        assert error["code"] == -32602, error
        assert "messageId" in error["message"]
        assert any(d.get("metadata", {}).get("param") == "message.messageId" for d in error.get("data") or []), error


async def test_a_task_continued_twice_with_one_message_gets_it_once(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        client = await svc.client(key, "shop", streaming=False)
        now = {"return_immediately": True}  # no agent runs: the task stays working
        [sent] = await collect(client.send_message(SendMessageRequest(message=text_message("a"), configuration=now)))
        more = text_message("b", messageId="m-2", taskId=sent.task.id, contextId=sent.task.context_id)
        for _ in range(2):
            [continued] = await collect(client.send_message(SendMessageRequest(message=more, configuration=now)))
        assert [m.message_id for m in continued.task.history] == ["m-1", "m-2"]
        thread = sent.task.metadata["aitp_thread_id"]
        assert len(await thread_messages(svc, key, thread)) == 2


async def test_a_refused_message_does_not_hold_its_message_id(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True, capabilities=[DECISIONS])
        client = await svc.client(await svc.key("alice"), "shop", streaming=False)
        bad = a2a_message(data_part({"$schema": DECISIONS, "decision": {"options": "none"}}), extensions=[DECISIONS])
        with pytest.raises(InvalidParamsError):
            await collect(client.send_message(SendMessageRequest(message=bad)))
        request = SendMessageRequest(message=text_message("plain"), configuration={"return_immediately": True})
        [sent] = await collect(client.send_message(request))  # the same messageId, m-1
        assert sent.task.status.state == WORKING and sent.task.history[0].message_id == "m-1"


# ------------------------------------------------------------------ addressing


async def test_the_recipients_an_a2a_message_names_are_its_aitp_recipients(store: Store) -> None:
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with httpx.AsyncClient(base_url=svc.base, headers=headers) as http:
            now = {"configuration": {"returnImmediately": True}}
            named = text("m-to", metadata={"to": ["shop"]})
            task = (await http.post("/a2a/shop", json=call("SendMessage", named, **now))).json()["result"]["task"]
            [posted] = await thread_messages(svc, key, task["metadata"]["aitp_thread_id"])
            assert posted.metadata["to"] == '["shop"]'
            for wrong, param in [(5, "message.metadata.to"), ([""], "message.metadata.to[0]")]:
                body = call("SendMessage", text("m-bad", metadata={"to": wrong}), **now)
                error = (await http.post("/a2a/shop", json=body)).json()["error"]
                assert error["code"] == -32602, error
                (info,) = [d for d in error["data"] if d["@type"].endswith("google.rpc.ErrorInfo")]
                assert info["metadata"]["param"] == param, error
