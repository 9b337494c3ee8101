"""Ending background tasks: the one way the service stops what it started (followers, workers, pumps)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)

# A cancellation can be lost: on Python 3.11, `asyncio.wait_for` returns the inner result when the inner
# future completes in the same loop iteration as the cancel (pymongo awaits its socket writes, connection
# set-ups and pool waits with it), and a loop that swallowed it goes on forever. A task still running after
# this long is cancelled again.
RECANCEL_AFTER = 1.0


async def cancel(tasks: Iterable[asyncio.Task[object] | None]) -> None:
    """Cancel every task given (None: none started), then wait until each has ended.

    A task that had failed is logged, not raised: shutting down goes on with what else it has to stop. The
    caller's own cancellation while it waits is not swallowed (`await task` under a suppressed
    CancelledError cannot tell it from the task's), so a caller being shut down itself still ends.
    """
    started = [task for task in tasks if task is not None]
    pending = set(started)
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_AFTER)
        for task in pending:
            log.warning("background task %s went on after being cancelled; cancelling it again", task.get_name())
    for task in started:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s had failed", task.get_name(), exc_info=task.exception())
