"""One-time codes as stored: short-lived secrets a key hands out so that it need not travel itself (a
WebSocket ticket, a sign-in link). Only the hash of a code is stored; redeeming one deletes it."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field


@dataclass
class CodeRecord:
    """A code's hash and what it stands for: the key that made it (by that key's hash: what the code
    authenticates as, checked again when redeemed, so a revoked key's codes redeem to nothing)."""

    hash: str
    purpose: str  # "websocket" or "sign_in": a code redeems only for its purpose
    key_hash: str
    actor: str
    admin: bool
    created_at: float
    expires_at: float
    scopes: list[str] = field(default_factory=list)


class CodeStore(abc.ABC):
    @abc.abstractmethod
    async def create(self, code: CodeRecord) -> None: ...

    @abc.abstractmethod
    async def redeem(self, code_hash: str, purpose: str, now: float) -> CodeRecord | None:
        """Delete the code `code_hash` of `purpose` and return it, if it exists and has not expired at `now`.
        Atomic: of concurrent redemptions of one code at most one gets it."""

    @abc.abstractmethod
    async def find(self, code_hash: str, purpose: str, now: float) -> bool:
        """Whether the code `code_hash` of `purpose` exists and has not expired at `now` (nothing changes)."""

    @abc.abstractmethod
    async def purge(self, now: float) -> int:
        """Delete the codes expired at `now`; returns how many."""
