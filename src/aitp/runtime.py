"""What a service function needs: the store, the capability registry, the settings and the event hub."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aitp.capabilities.registry import Registry
from aitp.config import Settings
from aitp.events.hub import Hub
from aitp.principals import PrincipalCache
from aitp.services.connections import StreamSlots
from aitp.services.rate_limit import RateLimiter
from aitp.store.base import Store


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


def now() -> int:
    """Unix seconds, the unit of every `created_at` on the wire."""
    return int(time.time())
