"""Cursor paging shared by every list: `limit+1` fetched so `has_more` is exact."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

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


def log_page(
    records: list[EventRecord],
    limit: int,
    after: int,
    render_event: Callable[[EventRecord], dict[str, Any]],
    cursor: tuple[str, str],
) -> dict[str, Any]:
    """A page of an event log read with `limit + 1` records; `cursor` = (page field, event field) of the
    position to resume after, e.g. ("last_seq", "seq")."""
    items = [render_event(r) for r in records[:limit]]
    page_field, event_field = cursor
    return {
        "object": "list",
        "data": items,
        page_field: items[-1][event_field] if items else after,
        "has_more": len(records) > limit,
    }
