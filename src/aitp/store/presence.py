"""What says an actor can be reached now, as stored: the instances where its inbox is followed live, and the
outcome of the last call this service made to it (an A2A agent's). One implementation per backend.

An instance with an actor's inbox stream open keeps a beat for it (`beat`, refreshed well within its expiry,
never per event), and takes it away when its last stream of that actor closes (`leave`); a beat of an
instance that died ends by itself. Rows past their expiry count for nothing and are dropped as new beats
come (MongoDB: by a TTL index as well).
"""

from __future__ import annotations

import abc
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class CallRecord:
    """The outcome of the last call this service made to `actor` through `via` (e.g. "a2a"), at `at`."""

    actor: str
    via: str
    ok: bool
    at: float


class PresenceStore(abc.ABC):
    @abc.abstractmethod
    async def beat(self, instance: str, actors: Collection[str], expires_at: float) -> None:
        """`instance` has an inbox stream of each of `actors` open, until `expires_at` (Unix seconds) unless
        beaten again; beats expired before now are dropped."""

    @abc.abstractmethod
    async def leave(self, instance: str, actor: str) -> None:
        """`instance` has no inbox stream of `actor` open any more."""

    @abc.abstractmethod
    async def followed(self, actor: str, now: float) -> bool:
        """Whether some instance has an inbox stream of `actor` open (a beat not expired at `now`)."""

    @abc.abstractmethod
    async def note_call(self, call: CallRecord) -> None:
        """Keep `call` as the last of its actor through its channel (replacing the one before)."""

    @abc.abstractmethod
    async def last_call(self, actor: str, via: str) -> CallRecord | None: ...
