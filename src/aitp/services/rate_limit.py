"""Per-key request rate limit: a token bucket per API key, counted in this process.

Each key may send `rate` requests per second sustained and `burst` at once. Every instance keeps its own
buckets (nothing is shared through the store), so behind a load balancer over N instances a key may reach
N times the configured rate. The clock is injectable so tests drive time instead of sleeping.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from aitp.errors import RateLimited
from aitp.principals import Principal

Clock = Callable[[], float]

# Buckets of keys idle long enough to be full again carry no information; past this many buckets they
# are dropped, so memory stays bounded by the keys active in the last few seconds.
PRUNE_ABOVE = 10_000


@dataclass
class TokenBucket:
    """`tokens` available at `updated` (a clock reading); refills at `rate` per second up to `burst`."""

    tokens: float
    updated: float

    def take(self, now: float, rate: float, burst: int) -> float:
        """Spend one token: 0.0 if there was one, else the seconds until there will be (nothing spent)."""
        self.tokens = min(float(burst), self.tokens + (now - self.updated) * rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate

    def full_at(self, rate: float, burst: int) -> float:
        return self.updated + (burst - self.tokens) / rate


def key_of(principal: Principal) -> str:
    """What a limit counts against: the API key (the environment's admin key has no id of its own)."""
    return principal.key_id or f"{principal.actor}:env-admin-key"


class RateLimiter:
    """Token buckets by key. `rate` and `burst` are passed on every call, so changed settings apply at once."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def check(self, key: str, rate: float, burst: int, *, limit: str | None = None, code: str | None = None) -> None:
        """Count one request of `key`; raise 429 (`code`, else `rate_limit_exceeded`) with `Retry-After` if
        over. A `rate` (per second) of 0 (or less) means no limit. `limit` says what the limit is, for the
        refusal (default: the per-key request rate)."""
        if rate <= 0:
            return
        burst = max(burst, 1)
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= PRUNE_ABOVE:
                self._prune(now, rate, burst)
            bucket = self._buckets[key] = TokenBucket(tokens=float(burst), updated=now)
        wait = bucket.take(now, rate, burst)
        if wait > 0:
            retry_after = max(1, math.ceil(wait))
            if limit is None:
                limit = f"this API key: {rate:g} requests per second (bursts of {burst})"
            raise RateLimited(
                f"Rate limit reached for {limit}. Retry after {retry_after} s.", retry_after=retry_after, code=code
            )

    def _prune(self, now: float, rate: float, burst: int) -> None:
        self._buckets = {k: b for k, b in self._buckets.items() if b.full_at(rate, burst) > now}
