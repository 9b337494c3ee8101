"""Bounds: the size bounds compared (minLength/maxLength, minItems/maxItems, minProperties/maxProperties), and
the arithmetic of minimum/maximum (normalised for integers, so `> 0` and `>= 1` compare equal) and multipleOf.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from aitp.capabilities.compat.breaks import BOUNDS_TIGHTENED, Break
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.values import _is_count, _is_number, _show


def _count_bounds(
    old: list[_Part],
    new: list[_Part],
    keyword: str,
    lower: bool,
    values: list[Any] | None,
    measure: Callable[[Any], int | None],
) -> Iterator[Break]:
    """minLength/maxLength, minItems/maxItems, minProperties/maxProperties."""
    olds = [b for p in old if _is_count(b := p.get(keyword))]
    for part in new:
        limit = part.get(keyword)
        if not _is_count(limit):
            continue
        if values is not None:
            for value in values:
                size = measure(value)
                if size is not None and (size < limit if lower else size > limit):
                    yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {limit} rejects {_show(value)}")
            continue
        if lower:
            was = max(olds, default=0)
            if limit > was:
                text = f"{keyword} raised from {was} to {limit}" if olds else f"{keyword} added ({limit})"
                yield Break(part.pointer, BOUNDS_TIGHTENED, text)
        elif not olds:
            yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} added ({limit})")
        elif limit < min(olds):
            yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} lowered from {min(olds)} to {limit}")


def _length_if(kind: type[str] | type[list[Any]] | type[dict[str, Any]]) -> Callable[[Any], int | None]:
    """Length of values of one JSON type (strings: code points, as JSON Schema counts them)."""

    def measure(value: Any) -> int | None:
        return len(value) if isinstance(value, kind) else None

    return measure


def _tightest(
    parts: list[_Part], keywords: tuple[str, str], lower: bool, integers_only: bool
) -> tuple[tuple[float, bool], Any, str] | None:
    """The old side's effective bound as (normalized bound, published value, keyword), None when unbounded."""
    best: tuple[tuple[float, bool], Any, str] | None = None
    for part in parts:
        for keyword in keywords:
            limit = part.get(keyword)
            if not _is_number(limit):
                continue
            bound = _normalize_bound(limit, keyword.startswith("exclusive"), lower, integers_only)
            if best is None or _tighter(bound, best[0], lower):
                best = (bound, limit, keyword)
    return best


def _normalize_bound(limit: float, exclusive: bool, lower: bool, integers_only: bool) -> tuple[float, bool]:
    """(value, exclusive); for integer-only values an inclusive integer, so `> 0` and `>= 1` compare equal."""
    if not integers_only or not math.isfinite(limit):
        return (limit, exclusive)
    if lower:
        return (math.floor(limit) + 1 if exclusive and limit == math.floor(limit) else math.ceil(limit), False)
    return (math.ceil(limit) - 1 if exclusive and limit == math.ceil(limit) else math.floor(limit), False)


def _tighter(bound: tuple[float, bool], than: tuple[float, bool], lower: bool) -> bool:
    (value, exclusive), (other, other_exclusive) = bound, than
    if value != other:
        return value > other if lower else value < other
    return exclusive and not other_exclusive


def _within(value: float, limit: float, exclusive: bool, lower: bool) -> bool:
    if lower:
        return value > limit if exclusive else value >= limit
    return value < limit if exclusive else value <= limit


def _is_multiple(value: float, step: float) -> bool:
    try:
        return Decimal(str(value)) % Decimal(str(step)) == 0
    except (InvalidOperation, ArithmeticError):
        return False
