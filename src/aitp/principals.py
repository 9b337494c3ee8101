"""Recently authenticated keys, so a request does not read the store to learn who it acts as.

A key found in the store is remembered for `PRINCIPAL_TTL` seconds; then the next request with it reads
the store again. That is the bound on how long a key revoked by *another* process sharing the store
(`aitp keys revoke`, another instance) keeps working here. A key revoked through this process's API is
forgotten at once (`forget_key`). Keys the store does not know are never remembered, and the number of
remembered keys is bounded (least recently used goes first), so a flood of keys costs no memory.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from aitp.auth import Principal

PRINCIPAL_TTL = 1.0  # seconds: how long a key revoked elsewhere may still be accepted here
MAX_PRINCIPALS = 10_000


class PrincipalCache:
    """key hash -> principal, for at most `ttl` seconds each and `max_size` keys in all."""

    def __init__(self, ttl: float = PRINCIPAL_TTL, max_size: int = MAX_PRINCIPALS) -> None:
        self.ttl = ttl
        self.max_size = max_size
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        # Bumped by every `forget_key`: a lookup that started before a revocation must not store its
        # (possibly pre-revocation) answer after it.
        self._generation = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key_hash: str, load: Callable[[], Awaitable[Principal | None]]) -> Principal | None:
        """The principal of `key_hash`: remembered, or `load()`ed (and remembered if found)."""
        entry = self._entries.get(key_hash)
        now = time.monotonic()
        if entry is not None:
            remembered, expires_at = entry
            if now < expires_at:
                self._entries.move_to_end(key_hash)
                return remembered
            del self._entries[key_hash]
        generation = self._generation
        loaded = await load()
        if loaded is not None and generation == self._generation and self.ttl > 0:
            self._entries[key_hash] = (loaded, now + self.ttl)
            self._entries.move_to_end(key_hash)
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)
        return loaded

    def forget_key(self, key_id: str) -> None:
        """Stop accepting `key_id` from memory (it was revoked): its next use reads the store."""
        self._generation += 1
        for key_hash in [h for h, (p, _) in self._entries.items() if p.key_id == key_id]:
            del self._entries[key_hash]
