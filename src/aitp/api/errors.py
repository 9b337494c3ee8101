"""Every error leaves as the OpenAI envelope `{"error": {message, type, param, code}}`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from aitp.api.responses import FastJSONResponse
from aitp.errors import APIError, InvalidRequest, most_specific_error, param_of
from aitp.models import ErrorResponse

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

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in {
        400: "Invalid request; `error.param` names the field.",
        401: "Missing or wrong API key.",
        403: "The key may not do this.",
        404: "No such object (or not visible to this key).",
    }.items()
}


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
        message = f"Missing required parameter: '{param}'."
    return InvalidRequest(message, param=param, code=_CODES.get(first["type"], "invalid_value"))


def _respond(error: APIError) -> FastJSONResponse:
    return FastJSONResponse(error.envelope(), status_code=error.status_code)


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
        return FastJSONResponse(error.envelope(), status_code=exc.status_code, headers=getattr(exc, "headers", None))

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
