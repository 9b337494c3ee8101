"""Who a request acts as (`Principal`), and the recently authenticated keys (`PrincipalCache`), so a
request does not read the store to learn who it acts as.

A key found in the store is remembered for `PRINCIPAL_TTL` seconds; then the next request with it reads
the store again. That is the bound on how long a key revoked by *another* process sharing the store
(`aitp keys revoke`, another instance) keeps working here. A key revoked through this process's API is
forgotten at once (`forget_key`). Keys the store does not know are never remembered, and the number of
remembered keys is bounded (least recently used goes first), so a flood of keys costs no memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aitp.identity.actor_ids import CustomerActor, customer_of
from aitp.recent import Recent

ADMIN_ACTOR = "admin"  # the actor of the environment's admin key (AITP_ADMIN_KEY)
CAPABILITIES_WRITE = "capabilities:write"  # the scope that may register capabilities
# the scope of a key a shop asked for its customer (`services.customer_sessions`): what marks a customer is its
# key, never its id's shape alone (a local actor named `ada@corp.example` by an admin stays local)
CUSTOMER_SESSION = "customer_session"
PRINCIPAL_TTL = 1.0  # seconds: how long a key revoked elsewhere may still be accepted here
MAX_PRINCIPALS = 10_000


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: an actor id, with admin rights or not."""

    actor: str
    admin: bool = False
    key_id: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)

    def can(self, scope: str) -> bool:
        return self.admin or scope in self.scopes

    @property
    def customer(self) -> CustomerActor | None:
        """The shop and customer id of a customer session's key (`<customer>@<shop>`); None for any other key."""
        if self.admin or CUSTOMER_SESSION not in self.scopes:
            return None
        return customer_of(self.actor)


class PrincipalCache:
    """key hash -> principal, for at most `ttl` seconds each and `max_size` keys in all."""

    def __init__(self, ttl: float = PRINCIPAL_TTL, max_size: int = MAX_PRINCIPALS) -> None:
        self._recent: Recent[str, Principal] = Recent(ttl, max_size)

    def __len__(self) -> int:
        return len(self._recent)

    async def get(self, key_hash: str, load: Callable[[], Awaitable[Principal | None]]) -> Principal | None:
        """The principal of `key_hash`: remembered, or `load()`ed (and remembered if found)."""
        return await self._recent.get(key_hash, load)

    def forget_key(self, key_id: str) -> None:
        """Stop accepting `key_id` from memory (it was revoked): its next use reads the store."""
        self._recent.forget_where(lambda principal: principal.key_id == key_id)
