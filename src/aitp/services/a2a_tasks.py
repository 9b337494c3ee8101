"""The A2A face's task rules over the services: which tasks a caller sees, sending a message into its task's
thread, canceling, listing, and following a task until it is interrupted. A task is what `a2a_fold` reads
from its thread's event log; nothing here knows the protocol's types (the face translates).

- A task is the caller's (or an admin's) in a thread the agent is in; any other is not found.
- A message names the task it continues (`task_id`), the context it goes in (`context_id`: its thread,
  opened when new), or neither (a new context: its thread and its first message are one write). A message
  the client sent before (its messageId already in the task, or starting a task of the context) is not
  posted again: its task is answered as it stands.
- Sent and waited for (`send_and_wait`), the task is returned once it is interrupted (ended, or waiting for
  the caller), the thread ends, or `a2a_wait_seconds` are over.
- A listing reads the threads the caller shares with the agent from the store, newest first (at most
  `MAX_LISTED_THREADS`), folds them one at a time keeping only what orders and filters a task, and folds
  again the threads of the page asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from aitp.capabilities.registry import CapabilityRef
from aitp.errors import APIError, Conflict
from aitp.events.stream import End, Frame, Overflow
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import a2a_contexts as contexts
from aitp.services import events as event_service
from aitp.services import messages as message_service
from aitp.services.a2a_fold import (
    CONTEXT_ID,
    MESSAGE_ID,
    STATE,
    TASK,
    Refusal,
    TaskView,
    ThreadTasks,
    not_found,
    parse_task_id,
)
from aitp.services.access import readable_thread
from aitp.services.requests import NewMessage
from aitp.services.streams import thread_end, thread_stream
from aitp.store.a2a import A2AAgentRecord
from aitp.store.base import EventRecord, MessageRecord

PAGE = 200  # events read at once while folding a thread
CANCELED_TEXT = "The client canceled this task."
MAX_LISTED_THREADS = 100  # a listing without a context: the caller's most recent threads with the agent
ENDED = "task_ended"  # the code of a refusal to continue or follow an ended task
NOT_CANCELABLE = "task_not_cancelable"  # the code of a refusal to cancel an ended task


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


@dataclass
class Sent:
    """A message an A2A client sends: its own ids, its content and metadata as an AITP message's, and the
    capability schema URLs it declares (its extensions)."""

    message_id: str
    content: list[Any]
    metadata: dict[str, str]
    context_id: str = ""
    task_id: str = ""
    extensions: list[str] = field(default_factory=list)


@dataclass
class TaskPage:
    tasks: list[TaskView]
    total: int
    next_offset: int | None  # None: the last page


def ended(view: TaskView, code: str = ENDED) -> Conflict:
    return Conflict(f"Task {view.id} has ended ({view.state.value}).", code=code)


class RecordFrame(Frame):
    """A thread event handed to a task's stream as its record: each stream folds its own task's events."""

    def __init__(self, record: EventRecord) -> None:
        super().__init__(record.seq, record.type, "")
        self.record = record


def _record_frame(record: EventRecord) -> Frame:
    return RecordFrame(record)


async def fold(call: Call, thread_id: str, tasks: ThreadTasks, until: int | None = None) -> None:
    """Fold the thread's events after `tasks.cursor` into `tasks`, up to seq `until` (else to the log's end)."""
    while until is None or tasks.cursor < until:
        page = await event_service.list_events(call.rt, call.principal, thread_id, after=tasks.cursor, limit=PAGE)
        for record in page.records:
            if until is not None and record.seq > until:
                return
            tasks.apply_event(record)
        if not page.has_more:
            return


async def load(call: Call, task: str) -> tuple[ThreadTasks, TaskView]:
    """The task as its thread's log says now, with the fold of the thread it was read from; `not_found` for a
    task that is not the caller's (or an admin's) with the agent."""
    thread_id, message_id = parse_task_id(task)
    try:
        view = await readable_thread(call.rt, call.principal, thread_id)
        first = await message_service.get_message(call.rt, call.principal, thread_id, message_id)
    except APIError as error:
        if error.status_code == 404:  # a thread or message it cannot see: that task is not found
            raise not_found(task) from None
        raise
    if view.member(call.agent.actor) is None or (first.actor != call.caller and not call.principal.admin):
        raise not_found(task)
    tasks = call.tasks(first.actor)
    await fold(call, thread_id, tasks)
    found = tasks.tasks.get(message_id)
    if found is None or found.deleted:  # a continuation, or not a message of the caller: not a task
        raise not_found(task)
    return tasks, found


async def _post(call: Call, thread_id: str, content: list[Any], metadata: dict[str, str]) -> MessageRecord:
    body = NewMessage(content=content, metadata=metadata)
    return await message_service.create_message(call.rt, call.principal, thread_id, body)


async def send(call: Call, sent: Sent) -> tuple[ThreadTasks, TaskView]:
    """Post the message into its thread: a new task, or the next message of the task it names."""
    metadata = {MESSAGE_ID: sent.message_id, **sent.metadata}
    if sent.task_id:
        tasks, view = await load(call, sent.task_id)
        if tasks.by_client_id(sent.message_id) is view:
            return tasks, view  # sent again
        if view.ended:
            raise ended(view)
        record = await _post(call, view.first.thread_id, sent.content, {**metadata, TASK: view.id})
        await fold(call, view.first.thread_id, tasks, until=record.seq)
        return tasks, view
    tasks = call.tasks()
    if sent.context_id:
        metadata[CONTEXT_ID] = sent.context_id
        thread_id = await contexts.thread_for(call.rt, call.principal, call.agent, sent.context_id, sent.extensions)
        await fold(call, thread_id, tasks)
        again = tasks.by_client_id(sent.message_id)
        if again is not None:
            return tasks, again
        record = await _post(call, thread_id, sent.content, metadata)
        await fold(call, thread_id, tasks, until=record.seq)
    else:  # a new context: its thread and the task's first message are one write
        first = NewMessage(content=sent.content, metadata=metadata)
        record, sent_before = await contexts.open_once(
            call.rt, call.principal, call.agent, sent.extensions, first, sent.message_id
        )
        if sent_before:  # the task as it stands
            await fold(call, record.thread_id, tasks)
    return tasks, tasks.start(record)


async def _until_interrupted(call: Call, tasks: ThreadTasks, view: TaskView) -> None:
    """The task folded from its thread's events after the fold's cursor until it is interrupted (ended, or
    waiting for the caller) or the thread ends. The thread's feed is read directly: one request that returns,
    bounded by `a2a_wait_seconds`, needs no stream (its pump task, queue, keep-alives and stream slot were a
    tenth of a SendMessage's CPU)."""
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


async def send_and_wait(call: Call, sent: Sent, *, wait: bool = True) -> TaskView:
    """The sent message's task once the agent answered (or it is interrupted, or `a2a_wait_seconds` are over:
    then still working); at once without `wait`."""
    tasks, view = await send(call, sent)
    if not wait or view.interrupted:
        return view
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(call.rt.settings.a2a_wait_seconds):
            await _until_interrupted(call, tasks, view)
    return view


async def follow(call: Call, tasks: ThreadTasks, view: TaskView) -> AsyncIterator[TaskView]:
    """The task after each change read from its thread's events after the fold's cursor, until it is
    interrupted (ended or waiting for the caller) or the thread ends."""
    if view.interrupted:
        return
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


async def subscribe(call: Call, task: str) -> tuple[ThreadTasks, TaskView]:
    """The task to follow (the fold it was read with goes on from there: nothing missed, nothing twice)."""
    tasks, view = await load(call, task)
    if view.ended:
        raise ended(view)
    return tasks, view


async def cancel(call: Call, task: str) -> TaskView:
    tasks, view = await load(call, task)
    if view.ended:
        raise ended(view, NOT_CANCELABLE)
    thread_id = view.first.thread_id
    record = await _post(call, thread_id, [CANCELED_TEXT], {TASK: view.id, STATE: "canceled"})
    await fold(call, thread_id, tasks, until=record.seq)  # what came first stays first
    return view


@dataclass(frozen=True)
class _Listed:
    """What orders and filters a task in a listing (its views are not kept while the threads are read)."""

    updated_at: int
    seq: int
    thread_id: str
    message_id: str


async def list_tasks(
    call: Call,
    *,
    context_id: str = "",
    state: str | None = None,
    updated_after: int | None = None,
    offset: int = 0,
    size: int = 50,
) -> TaskPage:
    """The caller's tasks with the agent, most recently updated first: of a context, or of the threads it
    shares with the agent (at most `MAX_LISTED_THREADS`, newest first); in `state` (a `TaskState` value) and
    updated at `updated_after` or later when given; `size` of them from `offset`."""
    if context_id:
        thread_id = await contexts.existing_thread(call.rt, call.principal, call.agent, context_id)
        threads = [] if thread_id is None else [thread_id]
    else:
        threads = await call.rt.store.a2a.shared_threads(call.caller, call.agent.actor, limit=MAX_LISTED_THREADS)
    listed: list[_Listed] = []
    for thread_id in threads:  # one thread's fold at a time: only what orders and filters its tasks is kept
        tasks = call.tasks()
        await fold(call, thread_id, tasks)
        listed.extend(
            _Listed(view.updated_at, view.first.seq, thread_id, view.first.id)
            for view in tasks.shown()
            if (state is None or view.state == state) and (updated_after is None or view.updated_at >= updated_after)
        )
    listed.sort(key=lambda t: (t.updated_at, t.seq), reverse=True)
    page = listed[offset : offset + size]
    folded: dict[str, ThreadTasks] = {}
    for item in page:  # the page's threads folded again, each once
        if item.thread_id not in folded:
            folded[item.thread_id] = call.tasks()
            await fold(call, item.thread_id, folded[item.thread_id])
    views = [folded[item.thread_id].tasks[item.message_id] for item in page]
    more = offset + size < len(listed)
    return TaskPage(views, len(listed), offset + size if more else None)
