"""JSON input read strictly: only JSON that can be stored and sent back, else a 400 naming the field.

Python's `json` (FastAPI's reader) accepts lone surrogates (`"\\ud800"`), `NaN`/`Infinity` and integers
of any size. None of them survive the way out: orjson cannot render them, UTF-8 (SQLite text, BSON
strings) cannot encode a lone surrogate, BSON holds no integer beyond 64 bits and no key with a NUL
character; so they used to end as 500s deep in a service or a store. Request bodies and WebSocket frames
are parsed here with orjson instead (faster, and strict), which also refuses those integers and keys,
and only when a body is refused looks at it again to say which field is at fault.

That second look has a bounded cost, whatever the body: what is wrong, and where, comes from orjson's
error or from C-speed scans of the bytes; the field is named by a lenient parse and a walk of the value
only for bodies up to `EXPLAIN_MAX_BYTES`. A larger body is refused with `param` null and the fault's
position (line, column, byte) or, for an integer too large, its literal instead. A request's key is
checked before its body is read at all, so none of this is done for a request without a valid key.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from typing import Any

import orjson

from aitp.errors import InvalidRequest, param_path

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# The largest body whose faulty field is named (a lenient parse and a walk of the value: ~10 ms at
# worst for this size); beyond it a refusal gives the fault's position, and `param` is null.
EXPLAIN_MAX_BYTES = 64 << 10
# Bodies that may hold what orjson accepts but a store cannot: an integer outside the signed 64-bit
# range (written with at least 19 digits) or a NUL character (escaped in JSON text), maybe in a key.
# Found with C-speed byte scans, not a regular expression: `re` tries `\d{19}` at every offset, about
# 140 µs on a 4 KB body against 10 here. Only then is the body looked at closely (`_unstorable_literal`).
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_NUMBER = b"0" * 19
_ESCAPED_NUL = b"\\u0000"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Applied to a body without escaped backslashes and escaped quotes (`_unstorable_literal`), where every
# quote delimits a string: a string holding an escaped NUL, followed by `:` (a key; the search cannot
# match across the text between two strings, which holds no backslash), and, in the text outside strings,
# an integer literal of 20 or more digits, or of 19 from 92... up (the range is checked in Python).
_NUL_KEY = re.compile(rb'(?>"[^"]*\\u0000[^"]*")[ \t\r\n]*:')  # atomic: one try per string
_LONG_INTEGER = re.compile(rb"[\[,: \t\r\n](-?(?:[0-9]{20,}|9[2-9][0-9]{17}))(?![0-9.eE])")

NOT_UTF8 = "text must be valid UTF-8, without lone surrogates"
NOT_UTF8_KEY = "keys must be valid UTF-8, without lone surrogates"
NOT_FINITE = "numbers must be finite (no NaN or Infinity)"
NOT_INT64 = "integers must fit in 64 bits (-2^63 to 2^63-1)"
NUL_KEY = "keys must not contain NUL characters"

Problem = tuple[str, str]  # what is wrong, and where or what (said when the body is too large to name a field)


def parse_json(body: bytes) -> Any:
    """The body as a JSON value; InvalidRequest (`param` = the field at fault, when there is one) otherwise."""
    body = body.removeprefix(codecs.BOM_UTF8)  # RFC 8259 lets parsers ignore it; Python's json did
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _refusal(body, exc) from None
    # orjson keeps unsigned 64-bit integers and turns longer ones into floats: look at the literals.
    if _suspect(body) and (problem := _unstorable_literal(body)):
        raise _explain(body, problem)
    return value


def _suspect(body: bytes) -> bool:
    """Whether the body has a run of 19 or more digits, or an escaped NUL character."""
    return _ESCAPED_NUL in body or _LONG_NUMBER in body.translate(_DIGITS_AS_ZERO)


def _refusal(body: bytes, exc: orjson.JSONDecodeError) -> InvalidRequest:
    """Why orjson refused the body: not JSON at all, or JSON that Python reads but no store keeps."""
    try:
        text = body.decode()
    except UnicodeDecodeError as bad:
        return _explain(body, (NOT_UTF8, _position(body, bad.start)))
    if exc.msg == "depth limit exceeded":
        return _syntax_error("nested too deeply")
    reason = _lenient_reason(text, exc)
    if reason is None:
        return _syntax_error(f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})")
    return _explain(body, (reason, _position(body, len(text[: exc.pos].encode()))))


def _lenient_reason(text: str, exc: orjson.JSONDecodeError) -> str | None:
    """What Python's json would have read where orjson stopped (`exc.pos`, in characters), if anything."""
    if "surrogate" in exc.msg:
        return NOT_UTF8
    if "infinity" in exc.msg:  # 1e400
        return NOT_FINITE
    at = exc.pos
    if text.startswith(("NaN", "Infinity"), at) or (at > 0 and text.startswith("-Infinity", at - 1)):
        return NOT_FINITE
    return None


def _unstorable_literal(body: bytes) -> Problem | None:
    """A key with an escaped NUL, or an integer literal outside 64 bits, in a body orjson accepted.

    C-speed passes over the bytes (no Python step per value or string): once escaped backslashes and
    escaped quotes are removed, every quote left delimits a string, so the text outside strings is every
    other piece between quotes."""
    plain = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    if _ESCAPED_NUL in plain and _NUL_KEY.search(plain):
        return NUL_KEY, ""
    outside = b" " + b"".join(plain.split(b'"')[::2])  # (no number ever touches a string in JSON)
    for found in _LONG_INTEGER.finditer(outside):
        if not INT64_MIN <= int(literal := found.group(1)) <= INT64_MAX:
            text = literal.decode()
            return NOT_INT64, f"{text[:24]}{'…' if len(text) > 24 else ''}"
    return None


def _position(body: bytes, offset: int) -> str:
    line, column = body.count(b"\n", 0, offset) + 1, offset - body.rfind(b"\n", 0, offset)
    return f"at line {line} column {column}, byte {offset}"


def _explain(body: bytes, problem: Problem) -> InvalidRequest:
    """The refusal of a body with `problem`: naming the field when the body is small enough to look for it."""
    if len(body) <= EXPLAIN_MAX_BYTES:
        # Invalid UTF-8 bytes become lone surrogates here, so they are found inside the string that holds them.
        text = body.decode("utf-8", errors="surrogateescape")
        try:
            found = _first_problem(json.loads(text))
        except json.JSONDecodeError as exc:
            return _syntax_error(f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})")
        except RecursionError:
            return _syntax_error("nested too deeply")
        if found is not None:
            return _field_error(*found)
    reason, where = problem
    where = f" ({where})" if where else ""
    return InvalidRequest(f"Invalid request body: {reason}{where}.", param=None, code="invalid_value")


def _syntax_error(reason: str) -> InvalidRequest:
    return InvalidRequest(f"The request body is not valid JSON: {reason}.", code="invalid_json")


def _field_error(param: str | None, reason: str) -> InvalidRequest:
    where = f"Invalid '{param}'" if param else "Invalid request body"
    return InvalidRequest(f"{where}: {reason}.", param=param, code="invalid_value")


def _param(keys: list[Any], key: Any) -> str | None:
    """The param of the value under `key` in the container at `keys` (whose first key is the root's, None)."""
    return param_path("", [*keys[1:], key]) if keys else None


def _first_problem(value: Any) -> tuple[str | None, str] | None:
    """(param, reason) of the first value, in document order, that cannot be stored or rendered.

    One pass over the value, with an explicit stack (bodies may nest deeper than Python's recursion
    limit); the path is built only for the value at fault."""
    keys: list[Any] = []  # the path to the container being walked (the root's key is None)
    frames: list[Any] = [iter(((None, value),))]
    isfinite = math.isfinite
    while frames:
        for key, item in frames[-1]:
            kind = type(item)
            if kind is str:
                if _SURROGATE.search(item):
                    return _param(keys, key), NOT_UTF8
            elif kind is float:
                if not isfinite(item):
                    return _param(keys, key), NOT_FINITE
            elif kind is int:
                if not INT64_MIN <= item <= INT64_MAX:
                    return _param(keys, key), NOT_INT64
            elif kind is dict:
                if any(_SURROGATE.search(name) for name in item):
                    return _param(keys, key), NOT_UTF8_KEY
                if any("\x00" in name for name in item):
                    return _param(keys, key), NUL_KEY
                if item:
                    keys.append(key)
                    frames.append(iter(item.items()))
                    break
            elif kind is list:
                if item:
                    keys.append(key)
                    frames.append(enumerate(item))
                    break
        else:
            frames.pop()
            if keys:
                keys.pop()
    return None
