"""Every error leaves as the OpenAI envelope `{"error": {message, type, param, code}}`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from aitp.bindings.openai_threads import close_codes
from aitp.bindings.openai_threads.models import ErrorResponse
from aitp.bindings.openai_threads.responses import FastJSONResponse
from aitp.errors import APIError, InvalidRequest, most_specific_error, param_of

log = logging.getLogger("aitp")

_CODES = {
    "missing": "missing_required_parameter",
    "extra_forbidden": "unknown_parameter",
    "json_invalid": "invalid_json",
}
_STATUS_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    429: "rate_limit_error",
}

ERROR_MEANINGS: dict[int, str] = {
    400: "Invalid request; `error.param` names the field.",
    401: "Missing or wrong API key.",
    403: "The key may not do this.",
    404: "No such object (or not visible to this key).",
    409: "Conflicts with what is stored (e.g. already answered, version already published), or the request's"
    " `Idempotency-Key` is still in use.",
    413: "The request body is larger than the server accepts.",
    422: "Well-formed but refused: a capability message or schema that does not validate, or an `Idempotency-Key`"
    " already used for another request.",
    429: "Too many requests (or open streams) for this key; `Retry-After` says when to try again.",
}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of these error statuses: each the error envelope, with what it means there."""
    return {
        status: {
            "model": ErrorResponse,
            "description": ERROR_MEANINGS[status],
            **({"headers": _RETRY_AFTER} if status == 429 else {}),
        }
        for status in statuses
    }


# Every keyed route: no or a wrong key, too many requests.
KEYED = (401, 429)
# Every POST with a JSON body: bad JSON or fields, a body over the limit, `Idempotency-Key` refusals.
BODY = (400, 409, 413, 422)
# For routers that do not list each route's errors.
ERROR_RESPONSES = error_responses(400, 401, 403, 404, 429)


def validation_error(exc: RequestValidationError) -> InvalidRequest:
    first = most_specific_error(list(exc.errors()))
    loc = tuple(first.get("loc", ()))
    if first["type"] == "json_invalid":
        return InvalidRequest(
            f"The request body is not valid JSON: {first.get('ctx', {}).get('error', first['msg'])}.",
            code="invalid_json",
        )
    param = param_of(loc)
    message = f"Invalid '{param}': {first['msg']}." if param else f"{first['msg']}."
    if first["type"] == "extra_forbidden":
        message = f"Unrecognized request argument supplied: {param}."
    if first["type"] == "missing":
        if param is None:  # the body itself (a JSON `null` where the route takes an object)
            return InvalidRequest("The request body is missing: this route takes a JSON object.", code="missing_body")
        message = f"Missing required parameter: '{param}'."
    return InvalidRequest(message, param=param, code=_CODES.get(first["type"], "invalid_value"))


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at the request's path: Starlette's 405 names only the first route's,
    and FastAPI makes one route per method."""
    routes = request.app.router.routes
    return [m for m in METHODS if any(r.matches({**request.scope, "method": m})[0] == Match.FULL for r in routes)]


def _respond(error: APIError) -> FastJSONResponse:
    return FastJSONResponse(error.envelope(), status_code=error.status_code, headers=error.headers)


def refusal(error: APIError, scope: Scope) -> ASGIApp:
    """The answer to a request refused before any route runs (`aitp.context`): the envelope over HTTP; a
    WebSocket is accepted, then closed with the refusal's code (4401, or 4429 when over a limit) and its
    message as the reason, so the client can tell why."""
    if scope["type"] != "websocket":
        return _respond(error)

    async def close(scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        await websocket.accept()
        await websocket.close(close_codes.refused(error, close_codes.CLOSE_UNAUTHENTICATED), reason=error.message[:120])

    return close


def install(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def on_api_error(request: Request, exc: APIError) -> FastJSONResponse:
        return _respond(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> FastJSONResponse:
        return _respond(validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> FastJSONResponse:
        error = APIError(str(exc.detail))
        error.status_code = exc.status_code
        error.type = _STATUS_TYPES.get(exc.status_code, "invalid_request_error")
        error.code = {404: "unknown_url", 405: "method_not_allowed"}.get(exc.status_code)
        if exc.status_code == 404:
            error.message = f"Unknown request URL: {request.method} {request.url.path}."
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405 and (allowed := allowed_methods(request)):
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return FastJSONResponse(error.envelope(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(ClientDisconnect)
    async def on_client_gone(request: Request, exc: ClientDisconnect) -> FastJSONResponse:
        # The client left (or the connection was refused, see LimitedHttpProtocol) while its body was being
        # read: nobody reads this answer, and it is no server error to log.
        error = InvalidRequest(
            "The connection closed before the whole request body arrived.", code="client_disconnected"
        )
        return _respond(error)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> FastJSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        body = {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "param": None,
                "code": "internal_error",
            }
        }
        return FastJSONResponse(body, status_code=500)
