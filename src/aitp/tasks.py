"""Ending background tasks: the one way the service stops what it started (followers, workers, pumps)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable


async def cancel(tasks: Iterable[asyncio.Task[object] | None]) -> None:
    """Cancel every task given (None: none started), then wait until each has ended."""
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    for task in started:
        with contextlib.suppress(asyncio.CancelledError):
            await task
