"""Cursor paging shared by every list: `limit+1` fetched so `has_more` is exact."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from aitp.store.base import EventRecord, Order

T = TypeVar("T")
C = TypeVar("C")


async def cursor_page(
    fetch: Callable[[Order, C | None, C | None, int], Awaitable[list[T]]],
    *,
    limit: int,
    order: Order,
    after: C | None,
    before: C | None,
) -> tuple[list[T], bool]:
    """One page and whether more items lie beyond it.

    `fetch(order, after, before, n)` returns up to n items in `order` strictly after `after` and
    strictly before `before`. With only `before`, the page is the `limit` items nearest that cursor
    (OpenAI semantics), still returned in the requested order.
    """
    if before is not None and after is None:
        reverse: Order = "desc" if order == "asc" else "asc"
        items = await fetch(reverse, before, None, limit + 1)
        return list(reversed(items[:limit])), len(items) > limit
    items = await fetch(order, after, before, limit + 1)
    return items[:limit], len(items) > limit


@dataclass(frozen=True)
class LogPage:
    """Events of a log after a cursor, oldest first, and whether more follow (a binding renders it)."""

    records: list[EventRecord]
    has_more: bool


def log_page(records: list[EventRecord], limit: int) -> LogPage:
    """The page of an event log read with `limit + 1` records."""
    return LogPage(records[:limit], len(records) > limit)
