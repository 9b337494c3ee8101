"""Comparison rules for arrays: minItems/maxItems, uniqueItems, prefixItems/items position by position, contains
(with minContains/maxContains) and unevaluatedItems.
"""

from __future__ import annotations

from collections.abc import Iterator

from aitp.capabilities.compat.bounds import _count_bounds, _length_if
from aitp.capabilities.compat.breaks import BOUNDS_TIGHTENED, CONSTRAINT_ADDED, Break
from aitp.capabilities.compat.old_side import _OldInfo
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.rules import _Rules
from aitp.capabilities.compat.subschemas import _item_parts
from aitp.capabilities.compat.values import _is_count, _normal, _show


class _ArrayRules(_Rules):
    """The array keywords; positions and `contains` recurse into the walk."""

    # -- arrays --------------------------------------------------------------------------------------------------

    def _arrays(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if isinstance(v, list)]
        measure = _length_if(list)
        yield from _count_bounds(old, new, "minItems", True, values, measure)
        yield from _count_bounds(old, new, "maxItems", False, values, measure)
        if any(p.get("uniqueItems") is True for p in new) and not any(p.get("uniqueItems") is True for p in old):
            old_max = [m for p in old if _is_count(m := p.get("maxItems"))]
            holder = next(p for p in new if p.get("uniqueItems") is True)
            if values is not None:
                for value in values:
                    if len({_normal(v) for v in value}) != len(value):
                        yield Break(holder.pointer, BOUNDS_TIGHTENED, f"uniqueItems rejects {_show(value)}")
            elif not (old_max and min(old_max) <= 1):
                yield Break(holder.pointer, BOUNDS_TIGHTENED, "uniqueItems added")

        # positions covered by some prefixItems, then the tail that only `items` covers
        width = max((len(p.get("prefixItems")) for p in old + new if isinstance(p.get("prefixItems"), list)), default=0)
        for index in [*range(width), None]:
            new_items = _item_parts(new, index)
            if new_items:
                yield from self.compare(_item_parts(old, index), new_items)

        for part in new:
            if not part.has("contains"):
                continue
            yield from self._contains(old, part)

        if not any(p.has("items") for p in new):
            olds = [p.child("unevaluatedItems") for p in old if p.has("unevaluatedItems")]
            for part in new:
                if not part.has("unevaluatedItems"):
                    continue
                target = [part.child("unevaluatedItems")]
                if olds:
                    yield from self.compare(olds, target)
                elif not self.accepts_all([], target):
                    yield Break(part.pointer, CONSTRAINT_ADDED, "unevaluatedItems added")

    def _contains(self, old: list[_Part], part: _Part) -> Iterator[Break]:
        least, most = part.get("minContains"), part.get("maxContains")
        least = least if _is_count(least) else 1
        most = most if _is_count(most) else None
        if least == 0 and most is None:
            return
        wanted = part.child("contains")
        for candidate in (p for p in old if p.has("contains")):
            had = candidate.child("contains")
            if not self.accepts_all([had], [wanted]):
                continue  # an element the old `contains` counted might not count for the new one
            had_least = candidate.get("minContains")
            had_least = had_least if _is_count(had_least) else 1
            if least > had_least:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"minContains raised from {had_least} to {least}")
            if most is not None:
                had_most = candidate.get("maxContains")
                if not (_is_count(had_most) and had_most <= most and self.accepts_all([wanted], [had])):
                    yield Break(part.pointer, BOUNDS_TIGHTENED, f"maxContains {most} added or lowered")
            return
        yield Break(part.pointer, CONSTRAINT_ADDED, "contains added or changed")
