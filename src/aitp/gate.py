"""Who may call, and how often: an app's API keys resolved to principals, and its requests counted per key.

One `Gate` per app (`rt.state(Gate)`), holding this process's state for both: the principals of recently used
keys (`aitp.principals.PrincipalCache`) and a token bucket per key (`aitp.services.rate_limit`). Every
HTTP request, WebSocket connect and post over a WebSocket goes through `admit` once.
"""

from __future__ import annotations

from aitp.auth import authenticate_hash, hash_key
from aitp.principals import Principal, PrincipalCache
from aitp.runtime import Runtime
from aitp.services.rate_limit import RateLimiter, key_of


class Gate:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.principals = PrincipalCache()  # authenticated keys (this process)
        self.limiter = RateLimiter()  # requests per key (this process)

    async def admit(self, token: str) -> Principal:
        """The principal `token` is the key of (401 if none), counted as one request of that key (429 with
        `Retry-After` when over its rate; admin keys too)."""
        return await self.admit_hash(hash_key(token))

    async def admit_hash(self, key_hash: str) -> Principal:
        """As `admit`, for a key known by its hash (a socket opened with a one-time ticket)."""
        settings = self.rt.settings
        principal = await authenticate_hash(self.rt.store, key_hash, settings.admin_key, self.principals)
        self.limiter.check(key_of(principal), settings.rate_limit, settings.rate_burst)
        return principal
