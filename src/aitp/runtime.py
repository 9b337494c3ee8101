"""What a service function needs: the store, the capability registry, the settings and the event hub.

Modules that keep process state for an app (caches of what the store holds, counters) keep it in the
runtime under their own builder (`Runtime.state`): the runtime names none of them, each is defined and
sized where it is used, and every app in a process has its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aitp.capabilities.registry import Registry
from aitp.config import Settings
from aitp.events.hub import Hub
from aitp.store.base import Store

T = TypeVar("T")


@dataclass(eq=False)
class Runtime:
    store: Store
    registry: Registry
    settings: Settings
    hub: Hub
    _state: dict[Callable[[Runtime], Any], Any] = field(default_factory=dict, init=False, repr=False)

    def state(self, build: Callable[[Runtime], T]) -> T:
        """What `build(self)` made for this runtime, made on its first use (e.g. `access.thread_views`)."""
        try:
            return self._state[build]
        except KeyError:
            made = self._state[build] = build(self)
            return made


def now() -> int:
    """Unix seconds, the unit of every `created_at` on the wire."""
    return int(time.time())
