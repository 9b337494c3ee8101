"""What a service function needs: the store, the capability registry, the settings and the event hub."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aitp.capabilities.registry import Registry
from aitp.config import Settings
from aitp.events.hub import Hub
from aitp.principals import PrincipalCache
from aitp.recent import Recent
from aitp.services.connections import StreamSlots
from aitp.services.rate_limit import RateLimiter
from aitp.store.base import Store

if TYPE_CHECKING:
    from aitp.services.access import ThreadView

# How long a thread's actors, read for posting a message, may be reused. A change to the thread's record
# or actors made through this process forgets them at once; any write to the thread by another process,
# when the event tailer sees it. (The append rechecks the author's membership in its own transaction.)
VIEW_TTL = 1.0
MAX_VIEWS = 10_000


def _views() -> Recent[str, ThreadView]:
    return Recent(VIEW_TTL, MAX_VIEWS)


@dataclass
class Runtime:
    store: Store
    registry: Registry
    settings: Settings
    hub: Hub
    registry_synced_at: float = float("-inf")  # time.monotonic() of the last registry sync with the store
    rate_limiter: RateLimiter = field(default_factory=RateLimiter)  # requests per key (this process)
    stream_slots: StreamSlots = field(default_factory=StreamSlots)  # open live streams per key (this process)
    principals: PrincipalCache = field(default_factory=PrincipalCache)  # authenticated keys (this process)
    views: Recent[str, ThreadView] = field(default_factory=_views)  # threads with their actors (this process)

    def __post_init__(self) -> None:
        self.hub.add_listener(self.views.forget)


def now() -> int:
    """Unix seconds, the unit of every `created_at` on the wire."""
    return int(time.time())
