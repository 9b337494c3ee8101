"""One exception per HTTP status class, parsed from the server's OpenAI error envelope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx


class AitpError(Exception):
    """The server refused a request: `status` plus the envelope's `message`, `type`, `param` and `code`.

    `param` names the offending field (`messages[0].content`, or the part and the path into its payload
    such as `content[0].request_decision.options[0]` for an invalid capability message); `code` is the stable,
    machine-readable reason (`thread_not_found`, `invalid_capability_message`, ...). `unsupported_by`
    (`capability_not_supported` only) names the thread's actors that cannot read the capability message.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        unsupported_by: list[str] | None = None,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.code = code
        self.param = param
        self.unsupported_by = unsupported_by
        self.response = response

    def __str__(self) -> str:
        where = f" (param: {self.param})" if self.param else ""
        return f"{self.status} {self.code or self.type or 'error'}: {self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, param={self.param!r})"


class BadRequest(AitpError):
    """400: malformed or invalid input."""


class Unauthenticated(AitpError):
    """401: missing, malformed, unknown or revoked API key."""


class PermissionDenied(AitpError):
    """403: the key may not do this (e.g. an admin route, or acting as another actor)."""


class NotFound(AitpError):
    """404: no such object, or one this key may not see (threads of which it is not a member)."""


class Conflict(AitpError):
    """409: e.g. a request already answered, a duplicate request id, a published version."""


class PayloadTooLarge(AitpError):
    """413: the request body is over the server's limit."""


class Unprocessable(AitpError):
    """422: well-formed but refused, e.g. an invalid or unsupported capability message."""


class RateLimited(AitpError):
    """429: slow down."""


class ServerError(AitpError):
    """5xx: the server failed; the request may be retried."""


_BY_STATUS: dict[int, type[AitpError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: RateLimited,
}


def error_class(status: int) -> type[AitpError]:
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, AitpError)


def _envelope(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def unsupported_by(error: Mapping[str, Any]) -> list[str] | None:
    """The envelope's `unsupported_by` (actors that cannot read a capability message), if it has one."""
    value = error.get("unsupported_by")
    return [a for a in value if isinstance(a, str)] if isinstance(value, list) else None


def error_from_response(response: httpx.Response) -> AitpError:
    """The exception for a non-2xx response; bodies that are not the envelope (a proxy's HTML page) still map."""
    error = _envelope(response)
    cls = error_class(response.status_code)
    if error is None:
        message = response.text.strip()[:500] or response.reason_phrase or f"HTTP {response.status_code}"
        return cls(message, status=response.status_code, response=response)
    return cls(
        _text(error.get("message")) or f"HTTP {response.status_code}",
        status=response.status_code,
        type=_text(error.get("type")),
        code=_text(error.get("code")),
        param=_text(error.get("param")),
        unsupported_by=unsupported_by(error),
        response=response,
    )
