"""Open live streams (WebSocket and SSE) per API key, held in this process.

A key may hold at most `AITP_MAX_STREAMS_PER_KEY` streams at once on one instance; one more is refused
with 429 `too_many_connections` (which a binding may say otherwise: a WebSocket close code). Closing a stream
frees its slot. The streams themselves are kept by key, so that revoking a key ends them
(`aitp.services.revocation`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aitp.errors import RateLimited
from aitp.events.stream import EventStream
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services.rate_limit import key_of


@dataclass
class _Held:
    stored: bool  # a key in the store (revocable), not the environment's admin key
    streams: set[EventStream] = field(default_factory=set)


class StreamSlots:
    """The streams each key holds open."""

    def __init__(self) -> None:
        self._open: dict[str, _Held] = {}

    def count(self, key: str) -> int:
        held = self._open.get(key)
        return 0 if held is None else len(held.streams)

    @contextmanager
    def hold(self, principal: Principal, limit: int, stream: EventStream) -> Iterator[None]:
        """Hold one of the principal's key's slots with `stream` while the block runs; 429 if the key already
        holds `limit` (0: no limit)."""
        key = key_of(principal)
        held = self._open.get(key)
        if held is not None and 0 < limit <= len(held.streams):
            raise RateLimited(
                f"This API key already has {len(held.streams)} live streams open (at most {limit}); close one first.",
                code="too_many_connections",
            )
        if held is None:
            held = self._open[key] = _Held(stored=principal.key_id is not None)
        held.streams.add(stream)
        try:
            yield
        finally:
            held.streams.discard(stream)
            if not held.streams and self._open.get(key) is held:
                del self._open[key]

    def stored_keys(self) -> list[str]:
        """Ids of the store's keys that hold streams open here."""
        return [key for key, held in self._open.items() if held.stored]

    def revoke(self, key: str, reason: str) -> int:
        """End every stream `key` holds, its key revoked (`EventStream.end`); how many there were."""
        held = self._open.get(key)
        if held is None:
            return 0
        for stream in list(held.streams):
            stream.end(reason, revoked=True)
        return len(held.streams)


def stream_slots(rt: Runtime) -> StreamSlots:
    """The app's open streams by key (`rt.state(stream_slots)`)."""
    return StreamSlots()
