"""WebSocket close codes of the Threads binding's live streams (documented in docs/live-events.md), and which one
each way a stream or a connect ends takes. The core's streams end with a reason (`aitp.events.stream.End`,
`Overflow`) or a refusal (`APIError`); only this binding knows the codes."""

from __future__ import annotations

from aitp.errors import APIError
from aitp.events.stream import End, Overflow

CLOSE_NORMAL = 1000  # the thread was deleted, or the subscriber removed from it
CLOSE_UNAUTHENTICATED = 4401  # bad or missing key, or the key was revoked while the socket was open
CLOSE_NOT_FOUND = 4403  # not a member (or no such thread): the same answer, as over HTTP
CLOSE_SLOW_CONSUMER = 4008
CLOSE_TOO_MANY_REQUESTS = 4429  # too many open streams, or too many requests, for the key


def refused(error: APIError, default: int) -> int:
    """The close code for a refused connect: 4429 for a 429, else `default`."""
    return CLOSE_TOO_MANY_REQUESTS if error.status_code == 429 else default


def ended(item: End | Overflow) -> int:
    """The close code for a stream's last item."""
    if isinstance(item, Overflow):
        return CLOSE_SLOW_CONSUMER
    return CLOSE_UNAUTHENTICATED if item.revoked else CLOSE_NORMAL
