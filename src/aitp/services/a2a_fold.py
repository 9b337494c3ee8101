"""A2A tasks over a thread: a task is one exchange, read from the thread's event log (the rules of tasks, in
plain types: the A2A face renders them, `aitp.bindings.a2a.tasks`).

A task starts with a message of the caller that names no task (its id names the task with the thread's:
`task_id`) and goes on with the agent's replies. The agent's message ends it (`completed`), unless it asks
something (`request_decision`, `request_data`: `input-required`), in which case the caller's answer, sent
with the task's id (`metadata.a2a_task`), continues it. A caller's message with `metadata.a2a_state =
canceled` cancels it. When the agent's answer is refused because the caller did not declare a capability
it uses (the thread's `thread.message.refused` event, naming the agent and the caller among
`unsupported_by`), the task ends `failed`, its status message naming the capability and how to declare it.

Which task an agent's message (or refused message) answers, first rule that applies:
1. the task its `metadata.a2a_task` names (none, if that task is not the caller's or has ended);
2. the task of the message it replies to: `metadata.reply_to` or `metadata.a2a_reply_to` (what A2A
   deliveries write) naming a message of the caller;
3. the task whose caller's message holds the request it answers (a `decision` naming the caller's
   `request_decision`, a `data` its `request_data`, a payment its quote, ...);
4. otherwise the oldest task still waiting for the agent (first in, first out: the caller's message that
   made it wait is the oldest): a plain AITP agent handles its inbox in order and answers in that order.
An agent's message whose `metadata.to` names others and not the caller is none of the caller's tasks. A
refused message goes by rule 2 (its refusal event keeps the `reply_to` it had), else by rule 4.

Nothing about tasks is stored beside the thread: any instance reads the same state from the same log
(`ThreadTasks`, folding the thread's events from its start: which task an answer goes to depends on the
tasks before it), and a stream of a task resumes from the log without a gap. A message deleted since
leaves its task's history; where the task went stays what the log said.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from aitp.capabilities.correlate import ANSWERS, REQUESTS
from aitp.errors import NotFound
from aitp.events import payloads
from aitp.services import addressing
from aitp.services.messages import replied_to
from aitp.store.base import EventRecord, MessageRecord

TASK = "a2a_task"  # metadata of a message that continues (or cancels, or answers) a task: the task's id
STATE = "a2a_state"  # metadata of the caller's message that cancels a task: "canceled"
MESSAGE_ID = "a2a_message_id"  # the A2A client's messageId of a message it sent
CONTEXT_ID = "a2a_context_id"  # the A2A client's contextId, when it chose one
REQUESTS_TYPES = frozenset({"request_decision", "request_data"})  # capability messages that ask the caller
CREATED, DELETED, REFUSED = "thread.message.created", "thread.message.deleted", "thread.message.refused"


class TaskState(enum.StrEnum):
    """Where a task stands; each value is the A2A `TaskState` name it is on the wire."""

    WORKING = "TASK_STATE_WORKING"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    COMPLETED = "TASK_STATE_COMPLETED"
    CANCELED = "TASK_STATE_CANCELED"
    FAILED = "TASK_STATE_FAILED"
    REJECTED = "TASK_STATE_REJECTED"


WORKING, COMPLETED, CANCELED, FAILED = TaskState.WORKING, TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED
INPUT_REQUIRED = TaskState.INPUT_REQUIRED
ENDED = frozenset({COMPLETED, CANCELED, FAILED, TaskState.REJECTED})
SEPARATOR = "."
NOT_FOUND = "task_not_found"  # the code of a refusal naming a task the caller has not (or that is not)

Describe = Callable[["Refusal"], str]  # the text of a refusal's status message (`a2a_tasks.Call.describe`)


def not_found(task: str) -> NotFound:
    return NotFound(f"No task found with id {task!r}.", code=NOT_FOUND)


def task_id(thread_id: str, message_id: str) -> str:
    return f"{thread_id}{SEPARATOR}{message_id}"


def parse_task_id(value: str) -> tuple[str, str]:
    """(thread id, first message id) of a task id; `not_found` for anything else."""
    thread_id, sep, message_id = value.partition(SEPARATOR)
    if not sep or not thread_id.startswith("thread_") or not message_id.startswith("msg_"):
        raise not_found(value)
    return thread_id, message_id


def _asks(record: MessageRecord) -> bool:
    return any(summary is not None and summary.get("type") in REQUESTS_TYPES for summary in record.aitp or ())


def _capability_bodies(record: MessageRecord) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(capability id, message type, body under the type) of each validated capability part."""
    for index, summary in enumerate(record.aitp or ()):
        if summary is None or not summary.get("capability"):
            continue
        try:
            body = orjson.loads(record.content[index]["text"]["value"]).get(summary["type"])
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            continue
        if isinstance(body, dict):
            yield summary["capability"], summary["type"], body


def _keys_asked(record: MessageRecord) -> Iterator[tuple[str, str]]:
    """What others may answer in a message: its requests (kind, id), and the answers it gives as the slots
    later answers name (a payment's quote, answered by its confirmation)."""
    for capability, kind, body in _capability_bodies(record):
        request = REQUESTS.get(capability, {}).get(kind)
        if request is not None and request.id_key in body:
            yield kind, str(body[request.id_key])
        answer = ANSWERS.get(capability, {}).get(kind)
        if answer is not None and body.get(answer.key) is not None:
            yield answer.slot, str(body[answer.key])


def _keys_answered(record: MessageRecord) -> Iterator[tuple[str, str]]:
    """The requests (or answer slots) a message answers: (kind, id)."""
    for capability, kind, body in _capability_bodies(record):
        answer = ANSWERS.get(capability, {}).get(kind)
        if answer is not None and body.get(answer.key) is not None:
            yield answer.request, str(body[answer.key])


@dataclass(frozen=True)
class Refusal:
    """The agent's message the service refused because the caller cannot read a capability it holds."""

    seq: int
    created_at: int
    agent: str
    capability: str  # its id, e.g. aitp-02-decisions
    version: str
    type: str  # the refused part's message type, e.g. request_decision
    unsupported_by: tuple[str, ...]
    reply_to: str = ""  # the message the refused answer answered, when it said

    @classmethod
    def of(cls, record: EventRecord) -> Refusal:
        data = record.data
        return cls(
            seq=record.seq,
            created_at=record.created_at,
            agent=str(data.get("actor", "")),
            capability=str(data.get("capability", "")),
            version=str(data.get("version", "")),
            type=str(data.get("type", "")),
            unsupported_by=tuple(data.get("unsupported_by") or ()),
            reply_to=str(data.get("reply_to") or ""),
        )


@dataclass
class TaskView:
    """A task's state, folded from its first message and the thread's events after it, in order."""

    first: MessageRecord
    caller: str
    agent: str
    state: TaskState = WORKING
    history: list[MessageRecord] = field(default_factory=list)
    status_message: MessageRecord | None = None
    refusal: Refusal | None = None  # why it failed, when the agent's answer was refused
    notice: str = ""  # the refusal's text, for the client
    updated_at: int = 0
    deleted: bool = False  # its first message was deleted since: not shown

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

    def continued(self, record: MessageRecord) -> None:
        """The caller's next message of the task."""
        self.history.append(record)
        self.updated_at = record.created_at
        self.state = CANCELED if record.metadata.get(STATE) == "canceled" else WORKING
        self.status_message = None

    def answered(self, record: MessageRecord) -> None:
        """The agent's message for the task."""
        self.history.append(record)
        self.updated_at = record.created_at
        self.status_message = record
        self.state = INPUT_REQUIRED if _asks(record) else COMPLETED

    def failed(self, refusal: Refusal, notice: str) -> None:
        self.refusal, self.notice = refusal, notice
        self.updated_at = refusal.created_at
        self.status_message = None
        self.state = FAILED

    def shown_history(self, history_length: int | None) -> list[MessageRecord]:
        """The last `history_length` messages of its history (None: all of it)."""
        if history_length is None:
            return self.history
        return self.history[-history_length:] if history_length else []

    def drop(self, message_id: str) -> None:
        """A message of the task deleted since: out of its history (and its status)."""
        if message_id == self.first.id:
            self.deleted = True
        self.history = [r for r in self.history if r.id != message_id]
        if self.status_message is not None and self.status_message.id == message_id:
            self.status_message = None


def message_of(record: EventRecord) -> MessageRecord | None:
    """The message a `thread.message.created` event holds, its seq set; None for any other event (and for
    events written before the log held neutral records)."""
    if record.type != CREATED or payloads.written_before(record.data):
        return None
    message = payloads.message_of(record.data)
    message.seq = record.seq  # the payload is written before the store gives the event its seq
    return message


class ThreadTasks:
    """The caller's tasks with the agent in one thread, folded from the thread's events in order (the rules
    in the module's docstring). `describe` writes the status text of a task failed by a refusal."""

    def __init__(self, caller: str, agent: str, describe: Describe) -> None:
        self.caller = caller
        self.agent = agent
        self.describe = describe
        self.tasks: dict[str, TaskView] = {}  # by first message id, oldest first
        self.cursor = 0  # the seq of the last event folded
        self._waiting: dict[str, TaskView] = {}  # waiting for the agent, oldest wait first
        self._of_message: dict[str, TaskView] = {}  # message id -> its task
        self._of_client_id: dict[str, TaskView] = {}  # the caller's A2A messageId -> its task
        self._of_request: dict[tuple[str, str], TaskView] = {}  # what the caller asked -> its task

    def start(self, record: MessageRecord) -> TaskView:
        """A task the caller's message `record` starts (folded already or not)."""
        folded = self.tasks.get(record.id)
        if folded is None:
            self.apply(record)
            folded = self.tasks[record.id]
        return folded

    def by_client_id(self, message_id: str) -> TaskView | None:
        """The task of the caller's message the A2A client sent with this messageId, if any."""
        return self._of_client_id.get(message_id) if message_id else None

    def apply_event(self, record: EventRecord) -> TaskView | None:
        """Fold in the thread's next event; the task it changed, if any."""
        if record.seq <= self.cursor:
            return None
        self.cursor = record.seq
        if record.type == CREATED:
            message = message_of(record)
            return None if message is None else self.apply(message)
        if record.type == REFUSED:
            return self._refused(Refusal.of(record))
        if record.type == DELETED:
            task = self._of_message.get(str(record.data.get("id")))
            if task is not None:
                task.drop(str(record.data.get("id")))
        return None

    def apply(self, record: MessageRecord) -> TaskView | None:
        """Fold in a message of the thread (in order); the task it changed, if any."""
        self.cursor = max(self.cursor, record.seq)
        if record.actor == self.caller:
            return self._from_caller(record)
        if record.actor == self.agent:
            return self._from_agent(record)
        return None

    def _from_caller(self, record: MessageRecord) -> TaskView | None:
        named = record.metadata.get(TASK)
        if named:
            task = self._named(named)
            if task is None:
                return None
            was_waiting = task.state == WORKING
            task.continued(record)
            if task.ended:
                self._waiting.pop(task.first.id, None)
            elif not was_waiting:
                self._waiting[task.first.id] = task  # waits again, after the tasks already waiting
        else:
            task = self.tasks[record.id] = self._waiting[record.id] = TaskView(record, self.caller, self.agent)
        self._of_message[record.id] = task
        client_id = record.metadata.get(MESSAGE_ID)
        if client_id:
            self._of_client_id.setdefault(client_id, task)
        for key in _keys_asked(record):
            self._of_request[key] = task
        return task

    def _named(self, value: str) -> TaskView | None:
        """The caller's task a message names, unless it ended."""
        thread_id, _, first = value.partition(SEPARATOR)
        task = self.tasks.get(first)
        if task is None or task.first.thread_id != thread_id or task.ended:
            return None
        return task

    def _from_agent(self, record: MessageRecord) -> TaskView | None:
        to = addressing.recipients(record.metadata)
        if to is not None and self.caller not in to:
            return None  # for other actors of the thread
        task = self._answered_task(record)
        if task is None:
            return None
        task.answered(record)
        self._of_message[record.id] = task
        if task.state != WORKING:
            self._waiting.pop(task.first.id, None)
        return task

    def _answered_task(self, record: MessageRecord) -> TaskView | None:
        metadata = record.metadata
        named = metadata.get(TASK)
        if named:
            return self._named(named)
        replied = self._of_message.get(replied_to(metadata) or "")
        if replied is not None:
            return None if replied.ended else replied
        if record.aitp:
            for answered in _keys_answered(record):
                asked = self._of_request.get(answered)
                if asked is not None:
                    return None if asked.ended else asked
        return self._oldest_waiting()

    def _oldest_waiting(self) -> TaskView | None:
        return next(iter(self._waiting.values()), None)

    def _refused(self, refusal: Refusal) -> TaskView | None:
        """The agent's answer refused because the caller cannot read it: the task it was for fails."""
        if refusal.agent != self.agent or self.caller not in refusal.unsupported_by:
            return None
        replied = self._of_message.get(refusal.reply_to)
        task = replied if replied is not None and not replied.ended else self._oldest_waiting()
        if task is None:
            return None
        task.failed(refusal, self.describe(refusal))
        self._waiting.pop(task.first.id, None)
        return task

    def shown(self) -> list[TaskView]:
        """The tasks a reader is shown (not those whose first message was deleted since), oldest first."""
        return [task for task in self.tasks.values() if not task.deleted]
