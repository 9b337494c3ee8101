"""The entry point: `breaking_changes(old, new)`, one comparison of two documents with its work bounded."""

from __future__ import annotations

from typing import Any

from aitp.capabilities.compat.breaks import CONSTRAINT_ADDED, Break
from aitp.capabilities.compat.budget import MAX_STEPS, _TooComplex, _Work, _work
from aitp.capabilities.compat.comparer import _Comparer
from aitp.capabilities.compat.parts import _Part


def breaking_changes(old: dict[str, Any] | bool, new: dict[str, Any] | bool) -> list[Break]:
    """Every change that makes `new` reject a value `old` accepted; [] when `new` is backward compatible."""
    token = _work.set(_Work(MAX_STEPS))
    try:
        found = _Comparer().compare([_Part.root("o", old)], [_Part.root("n", new)])
    except (_TooComplex, RecursionError):
        # schemas come from whoever registers them: bound the work, and answer "not shown compatible"
        message = "schemas too complex or too deeply nested to compare; compatibility cannot be shown"
        return [Break("", CONSTRAINT_ADDED, message)]
    finally:
        _work.reset(token)
    return list(dict.fromkeys(found))
