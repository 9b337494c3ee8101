"""What a service function needs: the store, the capability registry, the settings and the event hub."""

from __future__ import annotations

import time
from dataclasses import dataclass

from aitp.capabilities.registry import Registry
from aitp.config import Settings
from aitp.events.hub import Hub
from aitp.store.base import Store


@dataclass
class Runtime:
    store: Store
    registry: Registry
    settings: Settings
    hub: Hub
    registry_synced_at: float = float("-inf")  # time.monotonic() of the last registry sync with the store


def now() -> int:
    """Unix seconds, the unit of every `created_at` on the wire."""
    return int(time.time())
