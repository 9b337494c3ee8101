"""Open live streams (WebSocket and SSE) per API key, counted in this process.

A key may hold at most `AITP_MAX_STREAMS_PER_KEY` streams at once on one instance; one more is refused
with 429 `too_many_connections` (a WebSocket is closed with `CLOSE_TOO_MANY_REQUESTS`). Closing a stream
frees its slot.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aitp.errors import APIError, RateLimited

CLOSE_TOO_MANY_REQUESTS = 4429  # WebSocket close code: too many open streams, or too many requests, for the key


def close_code(error: APIError, default: int) -> int:
    """The WebSocket close code for a refusal: 4429 for a 429, else `default`."""
    return CLOSE_TOO_MANY_REQUESTS if error.status_code == 429 else default


class StreamSlots:
    """How many streams each key holds open."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def count(self, key: str) -> int:
        return self._open.get(key, 0)

    @contextmanager
    def hold(self, key: str, limit: int) -> Iterator[None]:
        """Hold one slot of `key` while the block runs; 429 if `key` already holds `limit` (0: no limit)."""
        held = self._open.get(key, 0)
        if 0 < limit <= held:
            raise RateLimited(
                f"This API key already has {held} live streams open (at most {limit}); close one first.",
                code="too_many_connections",
            )
        self._open[key] = held + 1
        try:
            yield
        finally:
            remaining = self._open[key] - 1
            if remaining:
                self._open[key] = remaining
            else:
                del self._open[key]
