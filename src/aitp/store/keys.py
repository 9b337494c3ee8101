"""API keys as stored: the record and the small store that keeps them (one implementation per backend)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class KeyRecord:
    id: str
    hash: str
    actor: str
    admin: bool
    created_at: int
    prefix: str
    scopes: list[str] = field(default_factory=list)
    expires_at: int | None = None  # unix seconds from which the key is refused; None: never


class KeyStore(abc.ABC):
    """Keys by id, found by the hash of their secret (`hash` is unique)."""

    @abc.abstractmethod
    async def create(self, key: KeyRecord) -> None: ...

    @abc.abstractmethod
    async def find(self, key_hash: str) -> KeyRecord | None: ...

    @abc.abstractmethod
    async def all(self) -> list[KeyRecord]:
        """Every key, by id."""

    @abc.abstractmethod
    async def delete(self, key_id: str) -> bool:
        """False if there was no such key."""

    @abc.abstractmethod
    async def expiries(self, key_ids: Sequence[str]) -> dict[str, int | None]:
        """The keys among `key_ids` still in the store (the others were revoked), each with its `expires_at`:
        one read."""

    @abc.abstractmethod
    async def has_admin(self) -> bool: ...

    @abc.abstractmethod
    async def purge_expired(self, before: int) -> int:
        """Delete the keys that expired before `before` (unix seconds; keys that never expire stay); returns
        how many. An indexed delete."""
