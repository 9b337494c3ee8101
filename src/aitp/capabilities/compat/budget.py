"""The work one `breaking_changes` call may spend (MAX_COMPARISONS, MAX_STEPS), and what it learns on the way.

Every part charges its elementary steps here (`_spend`); past the bound `_TooComplex` ends the comparison.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any


class _TooComplex(Exception):
    """The comparison needed more than MAX_COMPARISONS conjunctions (anyOf/oneOf combinations multiply)."""


MAX_COMPARISONS = 10_000  # the shipped schemas need about a hundred; this bounds the worst case to seconds
MAX_STEPS = 1_000_000  # elementary steps per call (a few µs each): the shipped schemas need a few thousand


class _Work:
    """What one `breaking_changes` call may still spend, and what it has learnt (patterns, branch lists)."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.patterns: dict[str, Any] = {}  # pattern -> compiled validator (None: does not compile)
        # list[Any] stands for list[_Part]: compat.parts imports this module, and imports go one way
        self.branches: dict[tuple[str, str], list[Any]] = {}  # (part key, keyword) -> its branch parts


_work: ContextVar[_Work | None] = ContextVar("aitp_compat_work", default=None)


def _spend(count: int = 1) -> None:
    work = _work.get()
    if work is None:
        return
    work.steps -= count
    if work.steps < 0:
        raise _TooComplex
