"""JSON-RPC params the SDK's dispatcher would read wrong: it parses them with `ignore_unknown_fields`, which
also drops an enum name it does not know, so ListTasks with `"status": "TASK_STATE_BOGUS"` listed every task.
Such a request is refused here, -32602 naming the field, before the dispatcher sees it."""

from __future__ import annotations

from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.types import TaskState
from a2a.utils.errors import InvalidParamsError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

STATES = frozenset(TaskState.keys())


def _status_refusal(body: Any) -> InvalidParamsError | None:
    if not isinstance(body, dict) or body.get("method") != "ListTasks" or not isinstance(body.get("params"), dict):
        return None
    status = body["params"].get("status")
    if isinstance(status, str) and status not in STATES:
        return InvalidParamsError(message=f"Unknown status {status[:64]!r}.", data={"param": "status"})
    return None


async def refusal(request: Request) -> Response | None:
    """The answer to a request whose params the dispatcher would misread, else None."""
    body = await request.json()  # as `intake.read` parsed it
    error = _status_refusal(body)
    if error is None:
        return None
    request_id = body.get("id")
    return JSONResponse(build_error_response(request_id if isinstance(request_id, str | int) else None, error))
