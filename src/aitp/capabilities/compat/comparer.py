"""The walk: two conjunctions compared keyword family by keyword family (the rules), an old anyOf/oneOf split
branch by branch first, each pair of conjunctions compared once (memoised; a pair met again while it is being
compared is assumed compatible), at most MAX_COMPARISONS conjunctions per call.
"""

from __future__ import annotations

from aitp.capabilities.compat.array_rules import _ArrayRules
from aitp.capabilities.compat.breaks import CONSTRAINT_ADDED, Break
from aitp.capabilities.compat.budget import MAX_COMPARISONS, _spend, _TooComplex
from aitp.capabilities.compat.logic_rules import _LogicRules
from aitp.capabilities.compat.object_rules import _ObjectRules
from aitp.capabilities.compat.old_side import _old_info
from aitp.capabilities.compat.parts import _flatten, _Label, _Part
from aitp.capabilities.compat.scalar_rules import _ScalarRules
from aitp.capabilities.compat.subschemas import _summary
from aitp.capabilities.compat.values import _NUMERIC


class _Comparer(_ScalarRules, _ArrayRules, _ObjectRules, _LogicRules):
    """One `breaking_changes` call's comparison: the rules of every keyword family, and the walk over them."""

    def __init__(self) -> None:
        self._budget = MAX_COMPARISONS
        self._memo: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Break]] = {}
        self._active: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()

    def compare(self, old: list[_Part], new: list[_Part]) -> list[Break]:
        """Breaks for the conjunction `new` against the conjunction `old` (both flattened here)."""
        old, new = _flatten(old), _flatten(new)
        key = (tuple(sorted(p.key for p in old)), tuple(sorted(p.key for p in new)))
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return []  # recursion: assume compatible; a real break shows up at this pair's first comparison
        self._active.add(key)
        try:
            found = [*self._exclusive(old, new), *self._expand(old, new, (), frozenset())]
            result = list(dict.fromkeys(found))
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def _expand(
        self, old: list[_Part], new: list[_Part], labels: tuple[_Label, ...], done: frozenset[str]
    ) -> list[Break]:
        """Split the old side at its first anyOf/oneOf: each old branch must be accepted on its own."""
        for index, part in enumerate(old):
            for keyword in ("anyOf", "oneOf"):
                branches = part.get(keyword)
                if not isinstance(branches, list):
                    continue
                rest = old[:index] + [part.without(keyword)] + old[index + 1 :]
                split = f"{part.base}|{keyword}"
                if not branches or split in done:
                    return self._expand(rest, new, labels, done)  # invalid or split already: drop it, stay lenient
                found: list[Break] = []
                for number in range(len(branches)):
                    # _flatten keeps the stripped node: a branch referring back to it cannot bring the anyOf back
                    branch = part.child(keyword, number)
                    merged = _flatten(rest + [branch])
                    label = _Label(keyword, branch.pointer, number, _summary(_flatten([branch])))
                    found += self._expand(merged, new, (*labels, label), done | {split})
                return found
        return self._compare_conjunction(old, new, labels)

    def _compare_conjunction(self, old: list[_Part], new: list[_Part], labels: tuple[_Label, ...]) -> list[Break]:
        self._budget -= 1
        if self._budget < 0:
            raise _TooComplex
        _spend(len(old) + len(new))
        if any(p.node is False for p in old):
            return []  # the old side accepts nothing
        info = _old_info(old)
        found: list[Break] = []
        for part in new:
            if part.node is False:
                found.append(Break(part.pointer, CONSTRAINT_ADDED, "schema is false: it now rejects every value"))
        found += self._types(info, new)
        found += self._enums(info, new)
        if info.accepts(*_NUMERIC):
            found += self._numbers(old, info, new)
        if info.accepts("string"):
            found += self._strings(old, info, new)
        if info.accepts("array"):
            found += self._arrays(old, info, new)
        if info.accepts("object"):
            found += self._objects(old, info, new)
        found += self._negations(old, new)
        found += self._conditionals(old, new)
        found += self._disjunctions(old, info, new, labels)
        found += self._unknown(old, new)
        return found
