"""Idempotency records: what a POST sent with an `Idempotency-Key` did, and the small store that keeps them.
The claim rule is written here once, over three single-record atomic operations each backend provides."""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass
class IdempotencyRecord:
    """What a POST sent with an `Idempotency-Key` did, kept so a retry gets the same answer.

    (scope, key) is unique: scope is the caller (its key id), so callers never share keys. `status`
    and `body` are None while the first request runs (a reservation); `token` names that reservation,
    so only its owner completes or releases it, even after another request took an abandoned one over.
    Times are Unix seconds.
    """

    scope: str
    key: str
    fingerprint: str  # method, path and SHA-256 of the body: a reuse with another request is refused
    token: str
    created_at: float
    expires_at: float
    status: int | None = None
    body: str | None = None  # the response body (JSON text)

    @property
    def pending(self) -> bool:
        return self.status is None

    def reclaimable(self, now: float, pending_timeout: float) -> bool:
        """Expired, or a reservation whose request crashed without releasing it."""
        return self.expires_at <= now or (self.pending and self.created_at <= now - pending_timeout)


class IdempotencyStore(abc.ABC):
    # Claims also delete expired records, at most once per this many seconds per store: purging never
    # changes an answer (a claim treats an expired record as absent); it keeps the records few on backends
    # without a TTL monitor.
    PURGE_INTERVAL = 3600.0

    def __init__(self) -> None:
        self._purge_due = float("-inf")

    async def claim(self, claim: IdempotencyRecord, *, pending_timeout: float) -> IdempotencyRecord | None:
        """Reserve (claim.scope, claim.key) for a request (`claim` pending, `claim.created_at` is now).

        Returns None when the reservation is the caller's, else the record holding the key. Atomic: of
        concurrent claims of one key exactly one gets None. A held record that is expired, or still
        pending `pending_timeout` seconds after its creation, is replaced by `claim`."""
        if claim.created_at >= self._purge_due:
            self._purge_due = claim.created_at + self.PURGE_INTERVAL
            await self.purge(claim.created_at)
        # The unique (scope, key) decides who inserts first, and a takeover replaces only the exact
        # reservation it saw (by token), so two takeovers cannot both win.
        while True:  # each pass that fails saw another claim win, whose fresh record the next pass returns
            if await self._insert(claim):
                return None
            held = await self._get(claim.scope, claim.key)
            if held is None:
                continue  # released or purged meanwhile
            if not held.reclaimable(claim.created_at, pending_timeout):
                return held
            if await self._replace(held.token, claim):
                return None

    async def get(self, scope: str, key: str) -> IdempotencyRecord | None:
        """The record holding (scope, key), expired or not."""
        return await self._get(scope, key)

    @abc.abstractmethod
    async def complete(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        """Store the response of the reservation `token`; False if that reservation is gone."""

    @abc.abstractmethod
    async def release(self, scope: str, key: str, token: str) -> bool:
        """Drop the pending reservation `token` (its request failed), so a retry runs again."""

    @abc.abstractmethod
    async def purge(self, now: float) -> int:
        """Delete records expired at `now`; returns how many."""

    @abc.abstractmethod
    async def _insert(self, record: IdempotencyRecord) -> bool:
        """Insert `record` unless its (scope, key) is held; whether it was inserted."""

    @abc.abstractmethod
    async def _get(self, scope: str, key: str) -> IdempotencyRecord | None: ...

    @abc.abstractmethod
    async def _replace(self, token: str, record: IdempotencyRecord) -> bool:
        """Replace the record of (record.scope, record.key) if it is still the one named `token`."""
