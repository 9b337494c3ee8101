"""A task as A2A says it (`Task`, its status, its status updates), from the fold the task service reads
(`aitp.services.a2a_fold.TaskView`): the protobuf objects the SDK's dispatcher prints, and the JSON its
printer would write, written directly for SendMessage (`task_json`)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from a2a.types import Message, Task, TaskState, TaskStatus, TaskStatusUpdateEvent

from aitp.bindings.a2a.parts import a2a_message, a2a_message_json, notice_message, notice_message_json
from aitp.services.a2a_fold import SEPARATOR, TaskView
from aitp.store.base import MessageRecord

STATES = {name: TaskState.Value(name) for name in TaskState.keys()}  # the fold's states are A2A's names


@functools.lru_cache(maxsize=64)
def _timestamp(seconds: int) -> str:
    """A Timestamp of whole seconds as protobuf's JSON printer writes it (tasks of one second share it:
    formatting a datetime was as costly as printing the rest of the task)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def message(view: TaskView, record: MessageRecord) -> Message:
    return a2a_message(record, agent=view.agent, task_id=view.id, context_id=view.context_id)


def _notice_fields(view: TaskView) -> dict[str, Any]:
    """The service's message on the agent's behalf when its answer was refused: why the task failed."""
    refusal = view.refusal
    assert refusal is not None
    return {
        "message_id": f"{view.id}{SEPARATOR}refused{SEPARATOR}{refusal.seq}",
        "text": view.notice,
        "task_id": view.id,
        "context_id": view.context_id,
        "metadata": {
            "aitp_actor": refusal.agent,
            "aitp_code": "capability_not_supported",
            "aitp_capability": refusal.capability,
            "aitp_version": refusal.version,
            "aitp_type": refusal.type,
        },
    }


def status(view: TaskView) -> TaskStatus:
    printed = TaskStatus(state=STATES[view.state])
    printed.timestamp.FromSeconds(int(view.updated_at))
    if view.status_message is not None:
        printed.message.CopyFrom(message(view, view.status_message))
    elif view.refusal is not None:
        printed.message.CopyFrom(notice_message(**_notice_fields(view)))
    return printed


def task(view: TaskView, history_length: int | None = None) -> Task:
    return Task(
        id=view.id,
        context_id=view.context_id,
        status=status(view),
        history=[message(view, r) for r in view.shown_history(history_length)],
        metadata={"aitp_thread_id": view.first.thread_id},
    )


def task_json(view: TaskView, history_length: int | None = None) -> dict[str, Any]:
    """`task()` as protobuf's JSON printer (`MessageToDict`) writes it, printed directly (a third of
    SendMessage's own CPU went to building the Task and printing it)."""

    def printed(record: MessageRecord) -> dict[str, Any]:
        return a2a_message_json(record, agent=view.agent, task_id=view.id, context_id=view.context_id)

    state: dict[str, Any] = {"state": view.state.value}
    if view.status_message is not None:
        state["message"] = printed(view.status_message)
    elif view.refusal is not None:
        state["message"] = notice_message_json(**_notice_fields(view))
    state["timestamp"] = _timestamp(int(view.updated_at))
    result: dict[str, Any] = {"id": view.id, "contextId": view.context_id, "status": state}
    shown = view.shown_history(history_length)
    if shown:
        result["history"] = [printed(r) for r in shown]
    result["metadata"] = {"aitp_thread_id": view.first.thread_id}
    return result


def update(view: TaskView) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=view.id, context_id=view.context_id, status=status(view))
