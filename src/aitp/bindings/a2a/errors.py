"""AITP refusals as A2A errors: the same refusal (its AITP `code` and `param` in the error's data) however
the message arrived."""

from __future__ import annotations

from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotFoundError,
)

from aitp.errors import APIError, NotFound

# refusals that say the recipient cannot take this kind of content
CONTENT_REFUSALS = frozenset({"capability_not_supported", "unknown_capability"})


def a2a_error(error: APIError, *, task: str | None = None) -> A2AError:
    """`error` as the A2A error a client can act on; `task`: the task the request named (a thread it cannot
    see is then that task not found)."""
    data = {"aitp_code": error.code, "param": error.param, "status": error.status_code}
    if isinstance(error, NotFound) and task is not None:
        return TaskNotFoundError(message=f"No task found with id {task!r}.", data=data)
    if error.code in CONTENT_REFUSALS:
        return ContentTypeNotSupportedError(message=error.message, data=data)
    if error.status_code in (413, 429):
        return InvalidRequestError(message=error.message, data=data)
    if 400 <= error.status_code < 500:
        return InvalidParamsError(message=error.message, data=data)
    return InternalError(message=error.message, data=data)
