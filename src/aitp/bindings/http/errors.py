"""The core's refusals over HTTP: every error leaves as the OpenAI envelope `{"error": {message, type, param,
code}}`, its `type` derived from the status (the core knows no OpenAI type), with the refusal's `details`
beside the four fields (`unsupported_by`)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from aitp.bindings.http.models import ErrorResponse
from aitp.bindings.http.responses import FastJSONResponse
from aitp.errors import APIError, InvalidRequest, most_specific_error, param_of

log = logging.getLogger("aitp")


# OpenAI's error `type` of each status; any other 4xx is an `invalid_request_error`, a 5xx a `server_error`.
_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def error_type(status: int) -> str:
    """The OpenAI `type` of an error answered with `status`."""
    return _TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")


def envelope(error: APIError) -> dict[str, Any]:
    """`error` as the OpenAI envelope (the body every HTTP refusal carries, and a WebSocket error frame's `error`)."""
    body = {"message": error.message, "type": error_type(error.status_code), "param": error.param, "code": error.code}
    return {"error": {**body, **error.details()}}


def respond(error: APIError) -> FastJSONResponse:
    return FastJSONResponse(envelope(error), status_code=error.status_code, headers=error.headers)


_CODES = {
    "missing": "missing_required_parameter",
    "extra_forbidden": "unknown_parameter",
    "json_invalid": "invalid_json",
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


def _framework_error(request: Request, exc: StarletteHTTPException) -> APIError:
    """What the framework refused itself (no route at this URL, not this method) as a core refusal."""
    error = APIError(str(exc.detail), code={404: "unknown_url", 405: "method_not_allowed"}.get(exc.status_code))
    error.status_code = exc.status_code
    if exc.status_code == 404:
        error.message = f"Unknown request URL: {request.method} {request.url.path}."
    return error


def install(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def on_api_error(request: Request, exc: APIError) -> FastJSONResponse:
        return respond(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> FastJSONResponse:
        return respond(validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> FastJSONResponse:
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405 and (allowed := allowed_methods(request)):
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return FastJSONResponse(envelope(_framework_error(request, exc)), status_code=exc.status_code, headers=headers)

    @app.exception_handler(ClientDisconnect)
    async def on_client_gone(request: Request, exc: ClientDisconnect) -> FastJSONResponse:
        # The client left (or the connection was refused by the server) while its body was being read:
        # nobody reads this answer, and it is no server error to log.
        error = InvalidRequest(
            "The connection closed before the whole request body arrived.", code="client_disconnected"
        )
        return respond(error)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> FastJSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        error = APIError("The server had an error while processing your request.", code="internal_error")
        error.status_code = 500
        return FastJSONResponse(envelope(error), status_code=500)
