"""What a service function needs: the store and the settings (the registry and hub join later)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from aitp.config import Settings
from aitp.store.base import Store


@dataclass
class Runtime:
    store: Store
    settings: Settings


def now() -> int:
    """Unix seconds, the unit of every `created_at` on the wire."""
    return int(time.time())
