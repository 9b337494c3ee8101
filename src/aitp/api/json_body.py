"""Request bodies read strictly: only JSON that can be stored and sent back, else a 400 naming the field.

FastAPI reads bodies with Python's `json`, which accepts lone surrogates (`"\\ud800"`), `NaN`/`Infinity`
and integers of any size. None of them survive the way out: orjson cannot render them, UTF-8 (SQLite
text, BSON strings) cannot encode a lone surrogate, BSON holds no integer beyond 64 bits and no key
with a NUL character; so they used to end as 500s deep in a service or a store. Routes here parse with
orjson instead (faster, and strict), also refuse those integers and keys, and only when a body is
refused read it again leniently to say which field is at fault.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from aitp.errors import InvalidRequest

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Bodies that may hold what orjson accepts but a store cannot: an integer outside the signed 64-bit
# range (written with at least 19 digits) or a NUL character (escaped in JSON text), maybe in a key.
# Found with C-speed byte scans, not a regular expression: `re` tries `\d{19}` at every offset, about
# 140 µs on a 4 KB body against 10 here.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_NUMBER = b"0" * 19
_ESCAPED_NUL = b"\\u0000"
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json(body: bytes) -> Any:
    """The body as a JSON value; InvalidRequest (`param` = the field at fault, when there is one) otherwise."""
    body = body.removeprefix(codecs.BOM_UTF8)  # RFC 8259 lets parsers ignore it; Python's json did
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise (_explain(body) or _syntax_error(exc.msg)) from None
    # orjson keeps unsigned 64-bit integers and turns longer ones into floats: look at the literals.
    if _suspect(body) and (error := _explain(body)):
        raise error
    return value


def _suspect(body: bytes) -> bool:
    """Whether the body has a run of 19 or more digits, or an escaped NUL character."""
    return _ESCAPED_NUL in body or _LONG_NUMBER in body.translate(_DIGITS_AS_ZERO)


def _explain(body: bytes) -> InvalidRequest | None:
    """What a lenient reading of the body finds wrong with it, if anything."""
    # Invalid UTF-8 bytes become lone surrogates here, so they are found inside the string that holds them.
    text = body.decode("utf-8", errors="surrogateescape")
    try:
        problem = _first_problem(json.loads(text))
    except json.JSONDecodeError as exc:
        return _syntax_error(f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})")
    except RecursionError:
        return _syntax_error("nested too deeply")
    return _field_error(*problem) if problem is not None else None


def _syntax_error(reason: str) -> InvalidRequest:
    return InvalidRequest(f"The request body is not valid JSON: {reason}.", code="invalid_json")


def _field_error(param: str | None, reason: str) -> InvalidRequest:
    where = f"Invalid '{param}'" if param else "Invalid request body"
    return InvalidRequest(f"{where}: {reason}.", param=param, code="invalid_value")


def _join(param: str | None, key: str | int) -> str:
    if isinstance(key, int):
        return f"{param or ''}[{key}]"
    return f"{param}.{key}" if param else key


def _first_problem(value: Any) -> tuple[str | None, str] | None:
    """(param, reason) of the first value, in document order, that cannot be stored or rendered."""
    # An explicit stack: bodies may nest deeper than Python's recursion limit.
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        param, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return param, "text must be valid UTF-8, without lone surrogates"
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                return param, "integers must fit in 64 bits (-2^63 to 2^63-1)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return param, "numbers must be finite (no NaN or Infinity)"
        elif isinstance(item, dict):
            if any(_SURROGATE.search(key) for key in item):
                return param, "keys must be valid UTF-8, without lone surrogates"
            if any("\x00" in key for key in item):
                return param, "keys must not contain NUL characters"
            stack.extend((_join(param, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((_join(param, i), child) for i, child in reversed(list(enumerate(item))))
    return None


def declares_json(content_type: str | None) -> bool:
    """FastAPI's rule: `application/json` or `application/*+json` bodies are read as JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


class StrictJSONRequest(Request):
    """A request whose JSON body has been read with `parse_json`; FastAPI gets that value from `json()`."""

    _value: Any = None

    async def read_json(self) -> None:
        body = await self.body()
        if body:
            self._value = parse_json(body)

    async def json(self) -> Any:
        return self._value


class StrictJSONRoute(APIRoute):
    """An APIRoute whose JSON body goes through `parse_json` before FastAPI validates it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        if self.body_field is None:
            return handle

        async def handler(request: Request) -> Response:
            if not declares_json(request.headers.get("content-type")):
                return await handle(request)
            strict = StrictJSONRequest(request.scope, request.receive)
            # Refusals are raised here, outside FastAPI's body reading, which would turn them into a bare 400.
            await strict.read_json()
            return await handle(strict)

        return handler
