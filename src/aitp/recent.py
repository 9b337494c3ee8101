"""Values read from the store, remembered for a short while so the next requests need not read them again.

Each value is kept `ttl` seconds after it was loaded, at most `max_size` of them (the least recently used
goes first). A load that finds nothing (None) is never kept. `forget` drops values at once; a load that
started before a `forget` does not keep what it read, which may be what was just forgotten.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """key -> value, for at most `ttl` seconds each and `max_size` keys in all."""

    def __init__(self, ttl: float, max_size: int) -> None:
        self.ttl = ttl
        self.max_size = max_size
        self._entries: OrderedDict[K, tuple[V, float]] = OrderedDict()
        self._generation = 0  # bumped by every forget

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: K, load: Callable[[], Awaitable[V | None]]) -> V | None:
        """The value of `key`: remembered, or `load()`ed (and remembered if found)."""
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None:
            if now < entry[1]:
                self._entries.move_to_end(key)
                return entry[0]
            del self._entries[key]
        generation = self._generation
        loaded = await load()
        if loaded is not None and generation == self._generation:
            self._remember(key, loaded, now)
        return loaded

    def _remember(self, key: K, value: V, loaded_at: float) -> None:
        if self.ttl <= 0:
            return
        self._entries[key] = (value, loaded_at + self.ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def put(self, key: K, value: V) -> None:
        """Remember `value` for `key` as if just loaded (what this process has just written)."""
        self._remember(key, value, time.monotonic())

    def peek(self, key: K) -> V | None:
        """The value of `key` if one is remembered (and not expired), without loading it."""
        entry = self._entries.get(key)
        if entry is None or time.monotonic() >= entry[1]:
            return None
        return entry[0]

    def forget(self, key: K) -> None:
        """Drop `key`'s value: its next `get` loads it again."""
        self._generation += 1
        self._entries.pop(key, None)

    def forget_where(self, drop: Callable[[V], bool]) -> None:
        """Drop every value for which `drop(value)` is true."""
        self._generation += 1
        for key in [k for k, (v, _) in self._entries.items() if drop(v)]:
            del self._entries[key]
