"""JSON values as the rules see them: type names, equality by hashing, keyword values read defensively, and
regex matching in the registry's dialect (each pattern compiled once per call).

"fraction" stands for the non-integer numbers, so a `type` is a set of names and set arithmetic works.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any, TypeGuard

import jsonschema_rs

from aitp.capabilities.compat.budget import _spend, _work

# "fraction" stands for the non-integer numbers, so "number" = {"integer", "fraction"} and set arithmetic works
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "integer", "fraction"})
_NUMERIC = frozenset({"integer", "fraction"})


def _types_of(declared: Any) -> frozenset[str] | None:
    """Expanded type names allowed by a `type` value; None when it does not restrict (absent or malformed)."""
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else None
    if names is None:
        return None
    out: set[str] = set()
    for name in names:
        if name == "number":
            out |= _NUMERIC
        elif name in _ALL_TYPES and name != "fraction":
            out.add(name)
    return frozenset(out)


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "fraction"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_names(types: Iterable[str]) -> str:
    present = set(types)
    if _NUMERIC <= present:
        present = (present - _NUMERIC) | {"number"}
    elif "fraction" in present:
        present = (present - {"fraction"}) | {"non-integer number"}
    return ", ".join(repr(t) for t in sorted(present))


def _normal(value: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, but true != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_normal(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _normal(v)) for k, v in value.items()))
    return ("other", repr(value))


def _json_equal(a: Any, b: Any) -> bool:
    return bool(_normal(a) == _normal(b))


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> TypeGuard[int | float]:
    return _is_number(value) and value >= 0 and float(value).is_integer()


def _strings_in(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, default=str)


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when the pattern does not compile."""
    work = _work.get()
    _spend(1 + len(text) // 64)
    if work is None:
        validator = _pattern_validator(pattern)
    elif pattern in work.patterns:
        validator = work.patterns[pattern]
    else:
        _spend(10 + len(pattern))  # compiling costs more than matching
        validator = work.patterns[pattern] = _pattern_validator(pattern)
    return None if validator is None else bool(validator.is_valid(text))


@functools.lru_cache(maxsize=1024)
def _pattern_validator(pattern: str) -> Any:
    """The registry's engine (jsonschema_rs with the linear-time `regex` crate), not Python's `re`: the dialect
    messages are validated with, and no catastrophic backtracking on a pattern someone registered."""
    try:
        return jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=jsonschema_rs.RegexOptions())
    except (ValueError, TypeError):
        return None
