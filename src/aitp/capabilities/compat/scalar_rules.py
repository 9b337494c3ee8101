"""Comparison rules for `type`, `enum`/`const`, numbers (minimum, maximum, exclusive bounds, multipleOf) and
strings (minLength, maxLength, pattern).
"""

from __future__ import annotations

from collections.abc import Iterator

from aitp.capabilities.compat.bounds import (
    _count_bounds,
    _is_multiple,
    _length_if,
    _normalize_bound,
    _tighter,
    _tightest,
    _within,
)
from aitp.capabilities.compat.breaks import BOUNDS_TIGHTENED, ENUM_NARROWED, PATTERN_CHANGED, TYPE_NARROWED, Break
from aitp.capabilities.compat.budget import _spend
from aitp.capabilities.compat.old_side import _OldInfo
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.rules import _Rules
from aitp.capabilities.compat.values import _is_number, _normal, _search, _show, _type_names, _types_of, _value_type


class _ScalarRules(_Rules):
    """The keywords about a value itself: its type, the values listed, number and string bounds and pattern."""

    # -- type, enum, const -------------------------------------------------------------------------------------

    def _types(self, info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        for part in new:
            allowed = _types_of(part.get("type"))
            if allowed is None:
                continue
            if info.values is not None:
                for value in info.values:
                    if _value_type(value) not in allowed:
                        yield Break(part.pointer, TYPE_NARROWED, f"type no longer allows {_show(value)}")
            elif missing := info.types - allowed:
                yield Break(part.pointer, TYPE_NARROWED, f"type no longer allows {_type_names(missing)}")

    def _enums(self, info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        domain = info.values
        if domain is None and info.types <= {"null", "boolean"}:
            domain = [v for t, v in (("null", None), ("boolean", False), ("boolean", True)) if t in info.types]
        for part in new:
            for keyword in ("enum", "const"):
                if not part.has(keyword):
                    continue
                allowed = [part.get("const")] if keyword == "const" else part.get("enum")
                if not isinstance(allowed, list):
                    continue
                if domain is None:
                    shown = _show(allowed[0]) if keyword == "const" and allowed else _show(allowed)
                    yield Break(part.pointer, ENUM_NARROWED, f"{keyword} {shown} added where any value was allowed")
                    continue
                _spend(len(allowed) + len(domain))
                accepted = {_normal(a) for a in allowed}
                for value in domain:
                    if _normal(value) not in accepted:
                        yield Break(part.pointer, ENUM_NARROWED, f"{keyword} no longer allows {_show(value)}")

    # -- numbers -------------------------------------------------------------------------------------------------

    def _numbers(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if _is_number(v)]
        integers_only = not info.accepts("fraction")
        for lower, keywords in ((True, ("minimum", "exclusiveMinimum")), (False, ("maximum", "exclusiveMaximum"))):
            old_bound = _tightest(old, keywords, lower, integers_only)
            for part in new:
                for keyword in keywords:
                    limit = part.get(keyword)
                    if not _is_number(limit):
                        continue
                    exclusive = keyword.startswith("exclusive")
                    if values is not None:
                        for value in values:
                            if not _within(value, limit, exclusive, lower):
                                yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {limit} rejects {value}")
                        continue
                    bound = _normalize_bound(limit, exclusive, lower, integers_only)
                    if old_bound is None:
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} added ({limit})")
                    elif _tighter(bound, old_bound[0], lower):
                        verb = "raised" if lower else "lowered"
                        was = old_bound[1] if old_bound[2] == keyword else f"{old_bound[2]} {old_bound[1]}"
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {verb} from {was} to {limit}")
        olds = [m for p in old if _is_number(m := p.get("multipleOf")) and m > 0]
        for part in new:
            step = part.get("multipleOf")
            if not _is_number(step) or step <= 0:
                continue
            if values is not None:
                for value in values:
                    if not _is_multiple(value, step):
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf {step} rejects {value}")
            elif any(_is_multiple(o, step) for o in olds) or (integers_only and _is_multiple(1, step)):
                continue
            elif olds:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf changed from {olds[0]} to {step}")
            else:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf added ({step})")

    # -- strings -------------------------------------------------------------------------------------------------

    def _strings(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if isinstance(v, str)]
        measure = _length_if(str)
        yield from _count_bounds(old, new, "minLength", True, values, measure)
        yield from _count_bounds(old, new, "maxLength", False, values, measure)
        old_patterns = [p.get("pattern") for p in old if isinstance(p.get("pattern"), str)]
        for part in new:
            pattern = part.get("pattern")
            if not isinstance(pattern, str) or pattern in old_patterns:
                continue
            if values is not None:
                for value in values:
                    if _search(pattern, value) is not True:
                        yield Break(part.pointer, PATTERN_CHANGED, f"pattern {pattern!r} rejects {_show(value)}")
            elif old_patterns:
                yield Break(part.pointer, PATTERN_CHANGED, f"pattern changed from {old_patterns[0]!r} to {pattern!r}")
            else:
                yield Break(part.pointer, PATTERN_CHANGED, f"pattern {pattern!r} added")
