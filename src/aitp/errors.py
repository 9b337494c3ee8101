"""The core's refusals: what went wrong (`code`, `message`), which input was at fault (`param`), and the HTTP
status that classes it. Only that: each binding renders them its own way (the OpenAI faces as the
`{"error": {...}}` envelope, `aitp.bindings.http.errors`; A2A as JSON-RPC errors), and a message says what is
wrong, never which URL of which face to call instead."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class APIError(Exception):
    """A request refused (or to retry later). `status_code` classes it (HTTP's classes, which every face maps
    from); `headers` are what an HTTP answer adds (e.g. `Retry-After`); `details` what a face may show beside
    the four fields."""

    status_code: int = 400
    default_code: str | None = None
    headers: dict[str, str] | None = None  # extra response headers, e.g. Retry-After
    retry_after: int | None = None  # seconds: when a retry may succeed (429, 503)

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code if code is not None else self.default_code

    def details(self) -> dict[str, Any]:
        """Fields of this refusal beyond status, code, param and message (none here)."""
        return {}


class InvalidRequest(APIError):
    status_code = 400
    default_code = "invalid_request"


class Unauthenticated(APIError):
    status_code = 401
    default_code = "invalid_api_key"


class PermissionDenied(APIError):
    status_code = 403
    default_code = "permission_denied"


class NotFound(APIError):
    status_code = 404
    default_code = "not_found"


class Conflict(APIError):
    status_code = 409
    default_code = "conflict"


class PayloadTooLarge(APIError):
    status_code = 413
    default_code = "payload_too_large"


class Unprocessable(APIError):
    status_code = 422
    default_code = "unprocessable"


class RateLimited(APIError):
    """429: too many requests (or open streams) for one key; `retry_after` says when to try again."""

    status_code = 429
    default_code = "rate_limit_exceeded"

    def __init__(
        self, message: str, *, retry_after: int | None = None, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, param=param, code=code)
        self.retry_after = retry_after
        if retry_after is not None:
            self.headers = {"Retry-After": str(retry_after)}


class RequestTimeout(APIError):
    """408: the request head did not arrive in time (answered by the HTTP protocol, before the app)."""

    status_code = 408
    default_code = "request_timeout"


class RequestHeaderFieldsTooLarge(APIError):
    """431: the request head (request line and header fields) is larger, or has more fields, than accepted."""

    status_code = 431
    default_code = "request_header_fields_too_large"


class ServiceUnavailable(APIError):
    """503: the server takes no more connections now; `retry_after` says when to try again."""

    status_code = 503
    default_code = "connection_limit_reached"
    retry_after = 1
    headers = {"Retry-After": "1"}


SCALAR_TAGS = {"str", "int", "float", "bool", "dict", "list", "none"}


def _is_union_tag(part: object) -> bool:
    """pydantic puts the union member tried (`str`, `list[...]`, `CreateMessageRequest`) into `loc`."""
    return isinstance(part, str) and (part in SCALAR_TAGS or "[" in part or part[:1].isupper())


def param_of(loc: tuple[Any, ...]) -> str | None:
    """('body', 'messages', 0, 'CreateMessageRequest', 'role') → 'messages[0].role'."""
    text = ""
    for part in loc:
        if part in ("body", "query", "path", "header") and not text or _is_union_tag(part):
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$-]+")


def param_path(prefix: str, path: Iterable[str | int]) -> str:
    """The one `param` style: a field name, then `[i]` per array index and `.key` per object key, e.g.
    `content[0].request_decision.options[2].id` (a key with other characters than letters, digits, `_`,
    `$` and `-` is written `["a.b"]`, JSON-quoted, so a param reads back to one place)."""
    text = prefix
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def pointer_param(prefix: str, pointer: str, document: Any) -> str:
    """`param_path` of a JSON pointer into `document`: a segment is an index where `document` holds an array
    there, else a key (validators report some object keys as numbers, pointers cannot tell)."""
    path: list[str | int] = []
    node = document
    for raw in pointer.split("/")[1:] if pointer else ():
        segment = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and segment.isdigit():
            path.append(int(segment))
            node = node[int(segment)] if int(segment) < len(node) else None
        else:
            path.append(segment)
            node = node.get(segment) if isinstance(node, dict) else None
    return param_path(prefix, path)


def most_specific_error(errors: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    # For `str | Model` unions, the "not a string" error is noise when the Model branch has a real one.
    informative = [e for e in errors if not any(p in SCALAR_TAGS for p in e.get("loc", ()))]
    return (informative or errors)[0]


def thread_not_found(thread_id: str) -> NotFound:
    # Same answer for "missing" and "not a member" so thread ids do not leak.
    return NotFound(f"No thread found with id '{thread_id}'.", param="thread_id", code="thread_not_found")


def message_not_found(message_id: str, param: str = "message_id") -> NotFound:
    return NotFound(f"No message found with id '{message_id}'.", param=param, code="message_not_found")
