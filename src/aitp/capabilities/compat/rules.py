"""The base of the keyword rules: what a rule may ask of the walk, to compare two conjunctions below its own.

The rules by keyword (scalar_rules, array_rules, object_rules, logic_rules) each define a `_Rules` mixin, and
comparer._Comparer, which is all of them, implements `compare`.
"""

from __future__ import annotations

from aitp.capabilities.compat.breaks import Break
from aitp.capabilities.compat.parts import _Part


class _Rules:
    """Recursion for the rules: `compare` is comparer._Comparer.compare."""

    def compare(self, old: list[_Part], new: list[_Part]) -> list[Break]:
        """Breaks for the conjunction `new` against the conjunction `old` (both flattened here)."""
        raise NotImplementedError

    def accepts_all(self, old: list[_Part], new: list[_Part]) -> bool:
        return not self.compare(old, new)
