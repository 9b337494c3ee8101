"""The A2A request handler of the agents served here: each A2A method as the same service calls the Threads
face makes (post a message, read a thread's event log, follow it), translated by `parts` and `tasks`.

Served by the SDK's JSON-RPC dispatcher (A2A 1.0 and, on the same endpoint, 0.3). Who calls and which
agent is called come in the call context (`routes.Context`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from packaging.version import InvalidVersion, Version

from aitp.bindings.a2a.errors import a2a_error
from aitp.bindings.a2a.parts import aitp_content
from aitp.bindings.a2a.tasks import (
    CONTEXT_ID,
    MESSAGE_ID,
    STATE,
    TASK,
    Refusal,
    TaskView,
    ThreadTasks,
    parse_task_id,
)
from aitp.capabilities.registry import CapabilityRef
from aitp.errors import APIError
from aitp.events.stream import End, Frame, Overflow
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import a2a_contexts as contexts
from aitp.services import addressing
from aitp.services import events as event_service
from aitp.services import messages as message_service
from aitp.services.access import readable_thread
from aitp.services.requests import NewMessage
from aitp.services.streams import thread_end, thread_stream
from aitp.store.a2a import A2AAgentRecord
from aitp.store.base import EventRecord, MessageRecord

PAGE = 200  # events read at once while folding a thread
CANCELED_TEXT = "The client canceled this task."
MAX_LISTED_THREADS = 100  # tasks/list without a context: the caller's most recent threads with the agent
TO = "to"  # the A2A message's metadata naming its recipients (AITP `metadata.to`)


class Call:
    """One A2A request: the runtime, who calls, and the agent called."""

    def __init__(self, rt: Runtime, principal: Principal, agent: A2AAgentRecord) -> None:
        self.rt = rt
        self.principal = principal
        self.agent = agent

    @property
    def caller(self) -> str:
        return self.principal.actor

    def extension(self, capability: str, version: str) -> str:
        """The URL a client declares `capability` with: the agent's own (its card lists it), else the
        capability's canonical schema URL."""
        for url in self.agent.capabilities:
            ref = self.rt.registry.resolve(url)
            if ref is not None and ref.id == capability:
                return url
        try:
            return CapabilityRef(capability, Version(version)).url
        except InvalidVersion:
            return f"the schema URL of {capability}"

    def describe(self, refusal: Refusal) -> str:
        """The status text of a task whose answer was refused: what the client lacks and how to declare it."""
        url = self.extension(refusal.capability, refusal.version)
        return (
            f"The agent's answer was refused: it holds a '{refusal.type}' message ({refusal.capability} "
            f"{refusal.version}), a capability this client did not declare. To receive such answers, declare it: "
            f"send your next message with {url} in its `extensions` (or in the A2A-Extensions header)."
        )

    def tasks(self, caller: str | None = None) -> ThreadTasks:
        """An empty fold of the caller's tasks with the agent in a thread."""
        return ThreadTasks(caller or self.caller, self.agent.actor, self.describe)


CALL = "aitp.a2a.call"  # call-context state key


def _call(context: ServerCallContext) -> Call:
    call: Call = context.state[CALL]
    return call


class RecordFrame(Frame):
    """A thread event handed to an A2A stream as its record: each stream renders its own task's events."""

    def __init__(self, record: EventRecord) -> None:
        super().__init__(record.seq, record.type, "")
        self.record = record


def _record_frame(record: EventRecord) -> Frame:
    return RecordFrame(record)


async def _fold(call: Call, thread_id: str, tasks: ThreadTasks, until: int | None = None) -> None:
    """Fold the thread's events after `tasks.cursor` into `tasks`, up to seq `until` (else to the log's end)."""
    while until is None or tasks.cursor < until:
        page = await event_service.list_events(call.rt, call.principal, thread_id, after=tasks.cursor, limit=PAGE)
        for record in page.records:
            if until is not None and record.seq > until:
                return
            tasks.apply_event(record)
        if not page.has_more:
            return


async def _load(call: Call, task: str) -> tuple[ThreadTasks, TaskView]:
    """The task as its thread's log says now, with the fold of the thread it was read from."""
    thread_id, message_id = parse_task_id(task)
    try:
        view = await readable_thread(call.rt, call.principal, thread_id)
        first = await message_service.get_message(call.rt, call.principal, thread_id, message_id)
        if view.member(call.agent.actor) is None or (first.actor != call.caller and not call.principal.admin):
            raise TaskNotFoundError(message=f"No task found with id {task!r}.")
        tasks = call.tasks(first.actor)
        await _fold(call, thread_id, tasks)
    except APIError as error:
        raise a2a_error(error, task=task) from None
    found = tasks.tasks.get(message_id)
    if found is None or found.deleted:  # a continuation, or not a message of the caller: not a task
        raise TaskNotFoundError(message=f"No task found with id {task!r}.")
    return tasks, found


async def _post(call: Call, thread_id: str, content: list[Any], metadata: dict[str, str]) -> MessageRecord:
    body = NewMessage(content=content, metadata=metadata)
    return await message_service.create_message(call.rt, call.principal, thread_id, body)


def _invalid(message: str, param: str) -> InvalidParamsError:
    """-32602, naming the field as AITP refusals do (`data.param`)."""
    return InvalidParamsError(message=message, data={"param": param})


def _check_message(message: Message) -> None:
    """A sent message has what the spec requires of it: an id and a role."""
    if not message.message_id:
        raise _invalid("message.messageId is required.", "message.messageId")
    if message.role == Role.ROLE_UNSPECIFIED:
        raise _invalid("message.role is required (ROLE_USER for a client's message).", "message.role")


def _history_length(holder: Any, param: str) -> int | None:
    """The history length asked for (None: all), refused when negative."""
    if not holder.HasField("history_length"):
        return None
    if holder.history_length < 0:
        raise _invalid(f"{param} must not be negative.", param)
    return int(holder.history_length)


def _metadata(message: Message) -> dict[str, str]:
    """The AITP metadata of the message an A2A message becomes: its messageId, and the recipients its
    metadata names (`to`: actor ids; 400 naming `message.metadata.to` for another shape)."""
    metadata = {MESSAGE_ID: message.message_id}
    if message.HasField("metadata") and TO in message.metadata.fields:
        named = MessageToDict(message.metadata)[TO]
        metadata[addressing.TO] = addressing.encode_to(addressing.read_to(named, f"message.metadata.{TO}"))
    return metadata


async def _send(call: Call, message: Message, requested: set[str]) -> tuple[ThreadTasks, TaskView]:
    """Post the A2A message into its thread: a new task, or the next message of the task it names. A
    message the client sent before (its messageId already in the task, or starting a task of the context)
    is not posted again: its task is answered as it stands."""
    content = aitp_content(message)
    try:
        metadata = _metadata(message)
        if message.task_id:
            tasks, view = await _load(call, message.task_id)
            if tasks.by_client_id(message.message_id) is view:
                return tasks, view  # sent again
            if view.ended:
                raise UnsupportedOperationError(message=f"Task {view.id} has ended ({TaskState.Name(view.state)}).")
            record = await _post(call, view.first.thread_id, content, {**metadata, TASK: view.id})
            await _fold(call, view.first.thread_id, tasks, until=record.seq)
            return tasks, view
        capabilities = [*message.extensions, *requested]
        tasks = call.tasks()
        if message.context_id:
            metadata[CONTEXT_ID] = message.context_id
            thread_id = await contexts.thread_for(call.rt, call.principal, call.agent, message.context_id, capabilities)
            await _fold(call, thread_id, tasks)
            sent = tasks.by_client_id(message.message_id)
            if sent is not None:
                return tasks, sent
            record = await _post(call, thread_id, content, metadata)
            await _fold(call, thread_id, tasks, until=record.seq)
        else:  # a new context: its thread and the task's first message are one write
            first = NewMessage(content=content, metadata=metadata)
            record, sent_before = await contexts.open_once(
                call.rt, call.principal, call.agent, capabilities, first, message.message_id
            )
            if sent_before:  # the task as it stands
                await _fold(call, record.thread_id, tasks)
    except APIError as error:
        raise a2a_error(error) from None
    return tasks, tasks.start(record)


async def _follow(call: Call, tasks: ThreadTasks, view: TaskView) -> AsyncIterator[TaskView]:
    """The task after each change read from its thread's events after the fold's cursor, until it is
    interrupted (ended or waiting for the caller) or the thread ends."""
    thread_id = view.first.thread_id
    async with thread_stream(call.rt, call.principal, thread_id, tasks.cursor, _record_frame) as stream:
        async for item in stream:
            if isinstance(item, End | Overflow):
                return
            if not isinstance(item, RecordFrame):
                continue  # a keep-alive tick: the SSE response pings on its own
            if tasks.apply_event(item.record) is view:
                yield view
                if view.interrupted:
                    return


async def _until_interrupted(call: Call, tasks: ThreadTasks, view: TaskView) -> None:
    """SendMessage's wait: the task folded from its thread's events after the fold's cursor until it is
    interrupted (ended, or waiting for the caller) or the thread ends. The thread's feed is read directly:
    one request that returns, bounded by `a2a_wait_seconds`, needs no stream (its pump task, queue,
    keep-alives and stream slot were a tenth of a SendMessage's CPU)."""
    with call.rt.hub.follow(view.first.thread_id) as feed:
        while True:
            wake = feed.signal.waiter()  # before the read: a change while it runs wakes the next wait
            records = await feed.after(tasks.cursor, PAGE)
            for record in records:
                if thread_end(record, call.principal) is not None:
                    return
                if tasks.apply_event(record) is view and view.interrupted:
                    return
            if not records:
                await wake.wait()


class AitpRequestHandler(RequestHandler):
    """A2A methods over the services, for whichever agent the call names."""

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        view, history = await self.send(params, context)
        return view.task(history)

    async def send(self, params: SendMessageRequest, context: ServerCallContext) -> tuple[TaskView, int | None]:
        """SendMessage's task once the agent answered (or it is interrupted, or the wait is over), and the
        history length asked for."""
        call = _call(context)
        _check_message(params.message)
        history = _history_length(params.configuration, "configuration.historyLength")
        tasks, view = await _send(call, params.message, context.requested_extensions)
        if params.configuration.return_immediately or view.interrupted:
            return view, history
        # wait for the agent's answer, up to a2a_wait_seconds: then the task is returned still working
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(call.rt.settings.a2a_wait_seconds):
                await _until_interrupted(call, tasks, view)
        return view, history

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = _call(context)
        _check_message(params.message)
        tasks, view = await _send(call, params.message, context.requested_extensions)
        yield view.task()
        if view.interrupted:
            return
        async for changed in _follow(call, tasks, view):
            yield changed.update()

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = _call(context)
        tasks, view = await _load(call, params.id)
        if view.ended:
            raise UnsupportedOperationError(message=f"Task {view.id} has ended ({TaskState.Name(view.state)}).")
        # the task as read, then every change after the last event read: nothing missed, nothing twice
        yield view.task()
        if view.interrupted:
            return
        async for changed in _follow(call, tasks, view):
            yield changed.update()

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        history = _history_length(params, "historyLength")
        _, view = await _load(_call(context), params.id)
        return view.task(history)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        call = _call(context)
        tasks, view = await _load(call, params.id)
        if view.ended:
            raise TaskNotCancelableError(message=f"Task {view.id} has ended ({TaskState.Name(view.state)}).")
        thread_id = view.first.thread_id
        try:
            record = await _post(call, thread_id, [CANCELED_TEXT], {TASK: view.id, STATE: "canceled"})
            await _fold(call, thread_id, tasks, until=record.seq)  # what came first stays first
        except APIError as error:
            raise a2a_error(error, task=params.id) from None
        return view.task()

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        call = _call(context)
        if params.HasField("page_size") and not 1 <= params.page_size <= 100:
            raise _invalid("pageSize must be between 1 and 100.", "pageSize")
        history = _history_length(params, "historyLength")
        token = params.page_token or "0"
        if not token.isascii() or not token.isdigit():  # a token this server gave: a position, never negative
            raise _invalid("Invalid pageToken: give the nextPageToken of the page before.", "pageToken")
        offset = int(token)
        if params.status and params.status not in TaskState.values():
            raise _invalid(f"Unknown status {params.status}.", "status")
        try:
            if params.context_id:
                thread_id = await contexts.existing_thread(call.rt, call.principal, call.agent, params.context_id)
                threads = [] if thread_id is None else [thread_id]
            else:
                threads = await contexts.threads_with(call.rt, call.principal, call.agent, MAX_LISTED_THREADS)
            views = []
            for thread_id in threads:
                tasks = call.tasks()
                await _fold(call, thread_id, tasks)
                views.extend(tasks.shown())
        except APIError as error:
            raise a2a_error(error) from None
        if params.status:
            views = [v for v in views if v.state == params.status]
        if params.HasField("status_timestamp_after"):
            after = params.status_timestamp_after.seconds
            views = [v for v in views if v.updated_at >= after]
        views.sort(key=lambda v: (v.updated_at, v.first.seq), reverse=True)
        size = params.page_size or 50
        page = views[offset : offset + size]
        more = offset + size < len(views)
        return ListTasksResponse(
            tasks=[v.task(history) for v in page],
            next_page_token=str(offset + size) if more else "",
            page_size=len(page),
            total_size=len(views),
        )

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError
