"""What the old side of a comparison is known to accept (`_OldInfo`): its types and, when they are finite, its
values, keeping only the values its other keywords do not reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aitp.capabilities.compat.bounds import _is_multiple, _within
from aitp.capabilities.compat.budget import _spend
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.values import (
    _ALL_TYPES,
    _is_count,
    _is_number,
    _normal,
    _search,
    _strings_in,
    _types_of,
    _value_type,
)


@dataclass(frozen=True)
class _OldInfo:
    """What the old conjunction is known to accept, as far as the keyword checks need it."""

    types: frozenset[str]  # expanded type names (see _ALL_TYPES)
    values: list[Any] | None  # the only values accepted (enum/const), None when not finite

    def accepts(self, *types: str) -> bool:
        return bool(self.types & set(types))


def _old_info(old: list[_Part]) -> _OldInfo:
    types = set(_ALL_TYPES)
    values: list[Any] | None = None
    for part in old:
        allowed = _types_of(part.get("type"))
        if allowed is not None:
            types &= allowed
        for keyword in ("enum", "const"):
            if not part.has(keyword):
                continue
            listed = [part.get("const")] if keyword == "const" else part.get("enum")
            if not isinstance(listed, list):
                continue
            _spend(len(listed))
            if values is None:
                values = list(listed)
            else:
                kept = {_normal(x) for x in listed}
                values = [v for v in values if _normal(v) in kept]
    if values is not None:
        # keep only the values the old side really accepts: a value it rejects anyway must not count as a break
        _spend(len(values) * len(old))
        values = [v for v in values if _value_type(v) in types and not any(_rejects(p, v) for p in old)]
        types = {_value_type(v) for v in values}
    return _OldInfo(frozenset(types), values)


def _rejects(part: _Part, value: Any) -> bool:
    """Whether one of the part's value-level keywords surely rejects `value` (structure is not looked at)."""
    node = part.node
    if not isinstance(node, dict):
        return node is False
    if _is_number(value):
        for keyword, lower in (
            ("minimum", True),
            ("exclusiveMinimum", True),
            ("maximum", False),
            ("exclusiveMaximum", False),
        ):
            limit = node.get(keyword)
            if _is_number(limit) and not _within(value, limit, keyword.startswith("exclusive"), lower):
                return True
        step = node.get("multipleOf")
        if _is_number(step) and step > 0 and not _is_multiple(value, step):
            return True
    sized = {str: ("minLength", "maxLength"), list: ("minItems", "maxItems"), dict: ("minProperties", "maxProperties")}
    for kind, (least, most) in sized.items():
        if isinstance(value, kind):
            low, high = node.get(least), node.get(most)
            if (_is_count(low) and len(value) < low) or (_is_count(high) and len(value) > high):
                return True
    if isinstance(value, str) and isinstance(node.get("pattern"), str) and _search(node["pattern"], value) is False:
        return True
    if isinstance(value, dict) and any(name not in value for name in _strings_in(node.get("required"))):
        return True
    return False
