"""A2A tasks over a thread: a task is one exchange, read from the thread's messages.

A task starts with a message of the caller (its id names the task with the thread's: `task_id`) and goes on
with the agent's replies. The agent's message ends it (`completed`), unless it asks something
(`request_decision`, `request_data`: `input-required`), in which case the caller's answer, sent with the
task's id (`metadata.a2a_task`), continues it. A caller's message with `metadata.a2a_state = canceled`
cancels it. Other traffic in the thread (other tasks, other actors) is not the task's: an agent's message
belongs to the task of the caller's latest message, or to the task its `metadata.a2a_task` names.

Nothing about tasks is stored beside the thread: any instance reads the same state from the same log, and
a stream of a task resumes from the thread's event log without a gap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from a2a.types import Message, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from a2a.utils.errors import TaskNotFoundError

from aitp.bindings.a2a.parts import a2a_message, a2a_message_json
from aitp.store.base import MessageRecord

TASK = "a2a_task"  # metadata of a message that continues (or cancels) a task: the task's id
STATE = "a2a_state"  # metadata of the caller's message that cancels a task: "canceled"
MESSAGE_ID = "a2a_message_id"  # the A2A client's messageId of a message it sent
CONTEXT_ID = "a2a_context_id"  # the A2A client's contextId, when it chose one
REQUESTS = frozenset({"request_decision", "request_data"})  # capability messages that ask the caller
WORKING, COMPLETED, CANCELED = (
    TaskState.TASK_STATE_WORKING,
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
)
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
ENDED = frozenset({COMPLETED, CANCELED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED})
SEPARATOR = "."
STATE_NAMES = {value: name for name, value in TaskState.items()}  # TaskState.Name, without its lookup per call


@functools.lru_cache(maxsize=64)
def _timestamp(seconds: int) -> str:
    """A Timestamp of whole seconds as protobuf's JSON printer writes it (tasks of one second share it:
    formatting a datetime was as costly as printing the rest of the task)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def task_id(thread_id: str, message_id: str) -> str:
    return f"{thread_id}{SEPARATOR}{message_id}"


def parse_task_id(value: str) -> tuple[str, str]:
    """(thread id, first message id) of a task id; TaskNotFoundError for anything else."""
    thread_id, sep, message_id = value.partition(SEPARATOR)
    if not sep or not thread_id.startswith("thread_") or not message_id.startswith("msg_"):
        raise TaskNotFoundError(message=f"No task found with id {value!r}.")
    return thread_id, message_id


def _asks(record: MessageRecord) -> bool:
    return any(summary is not None and summary.get("type") in REQUESTS for summary in record.aitp or ())


@dataclass
class TaskView:
    """A task's state, folded from its first message and the thread's messages after it, in order."""

    first: MessageRecord
    caller: str
    agent: str
    state: TaskState = WORKING
    history: list[MessageRecord] = field(default_factory=list)
    status_message: MessageRecord | None = None
    updated_at: int = 0
    _current: bool = True  # whether the caller's latest message is this task's

    def __post_init__(self) -> None:
        self.history = [self.first]
        self.updated_at = self.first.created_at

    @property
    def id(self) -> str:
        return task_id(self.first.thread_id, self.first.id)

    @property
    def context_id(self) -> str:
        return self.first.metadata.get(CONTEXT_ID) or self.first.thread_id

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def interrupted(self) -> bool:
        """Ended, or waiting for the caller: where a stream of the task stops."""
        return self.ended or self.state == INPUT_REQUIRED

    def apply(self, record: MessageRecord) -> bool:
        """Fold in a message of the thread that came after the task's first; whether it changed the task."""
        if self.ended or record.seq <= self.first.seq:
            return False
        named = record.metadata.get(TASK)
        if record.actor == self.caller:
            self._current = named == self.id
            if not self._current:
                return False
            self.history.append(record)
            self.updated_at = record.created_at
            self.state = CANCELED if record.metadata.get(STATE) == "canceled" else WORKING
            self.status_message = None
            return True
        if record.actor != self.agent or (named != self.id if named else not self._current):
            return False
        self.history.append(record)
        self.updated_at = record.created_at
        self.status_message = record
        self.state = INPUT_REQUIRED if _asks(record) else COMPLETED
        return True

    def message(self, record: MessageRecord) -> Message:
        return a2a_message(record, agent=self.agent, task_id=self.id, context_id=self.context_id)

    def status(self) -> TaskStatus:
        status = TaskStatus(state=self.state)
        status.timestamp.FromSeconds(int(self.updated_at))
        if self.status_message is not None:
            status.message.CopyFrom(self.message(self.status_message))
        return status

    def _shown(self, history_length: int | None) -> list[MessageRecord]:
        if history_length is None:
            return self.history
        return self.history[-history_length:] if history_length else []

    def task(self, history_length: int | None = None) -> Task:
        return Task(
            id=self.id,
            context_id=self.context_id,
            status=self.status(),
            history=[self.message(r) for r in self._shown(history_length)],
            metadata={"aitp_thread_id": self.first.thread_id},
        )

    def task_json(self, history_length: int | None = None) -> dict[str, Any]:
        """`task()` as protobuf's JSON printer (`MessageToDict`) writes it, printed directly (a third of
        SendMessage's own CPU went to building the Task and printing it)."""

        def message(record: MessageRecord) -> dict[str, Any]:
            return a2a_message_json(record, agent=self.agent, task_id=self.id, context_id=self.context_id)

        status: dict[str, Any] = {"state": STATE_NAMES[self.state]}
        if self.status_message is not None:
            status["message"] = message(self.status_message)
        status["timestamp"] = _timestamp(int(self.updated_at))
        task: dict[str, Any] = {"id": self.id, "contextId": self.context_id, "status": status}
        shown = self._shown(history_length)
        if shown:
            task["history"] = [message(r) for r in shown]
        task["metadata"] = {"aitp_thread_id": self.first.thread_id}
        return task

    def update(self) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(task_id=self.id, context_id=self.context_id, status=self.status())
