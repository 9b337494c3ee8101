"""AITP refusals as A2A errors: the same refusal (its AITP `code` and `param` in the error's data) however
the message arrived. Read from the core error's status and code only."""

from __future__ import annotations

from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from aitp.errors import APIError
from aitp.services.a2a_fold import NOT_FOUND
from aitp.services.a2a_tasks import ENDED, NOT_CANCELABLE

# refusals that say the recipient cannot take this kind of content
CONTENT_REFUSALS = frozenset({"capability_not_supported", "unknown_capability"})
# the task service's own refusals, each A2A's error for it (its message as the service wrote it)
TASK_REFUSALS: dict[str, type[A2AError]] = {
    NOT_FOUND: TaskNotFoundError,
    ENDED: UnsupportedOperationError,
    NOT_CANCELABLE: TaskNotCancelableError,
}


def a2a_error(error: APIError, *, task: str | None = None) -> A2AError:
    """`error` as the A2A error a client can act on; `task`: the task the request named (a thread it cannot
    see is then that task not found)."""
    refusal = TASK_REFUSALS.get(error.code or "")
    if refusal is not None:
        return refusal(message=error.message)
    data = {"aitp_code": error.code, "param": error.param, "status": error.status_code}
    if error.status_code == 404 and task is not None:
        return TaskNotFoundError(message=f"No task found with id {task!r}.", data=data)
    if error.code in CONTENT_REFUSALS:
        return ContentTypeNotSupportedError(message=error.message, data=data)
    if error.status_code in (413, 429):
        return InvalidRequestError(message=error.message, data=data)
    if 400 <= error.status_code < 500:
        return InvalidParamsError(message=error.message, data=data)
    return InternalError(message=error.message, data=data)
