"""Ending background tasks: the one way the service stops what it started (followers, workers, pumps)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)


async def cancel(tasks: Iterable[asyncio.Task[object] | None]) -> None:
    """Cancel every task given (None: none started), then wait until each has ended.

    A task that had failed is logged, not raised: shutting down goes on with what else it has to stop. The
    caller's own cancellation while it waits is not swallowed (`await task` under a suppressed
    CancelledError cannot tell it from the task's), so a caller being shut down itself still ends.
    """
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    if started:
        await asyncio.wait(started)
    for task in started:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s had failed", task.get_name(), exc_info=task.exception())
