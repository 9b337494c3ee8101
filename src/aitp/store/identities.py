"""Who an actor is, as this server knows it: its kind (local, domain, NEAR, a shop's customer), the proof that
made it so, and who may contact it. The record and the small store that keeps them (one implementation per backend).

An actor id this store does not hold is unknown to the server: threads, joins and keys naming it are refused
(`aitp.services.identities`). Stores written before identities existed get a local record, contactable by
anyone, for every actor already in a thread, holding a key or a profile, when they are first opened.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field

LOCAL = "local"  # made by this server's admin: its key is the only proof
DOMAIN = "domain"  # a host name whose keys are published at https://<host>/.well-known/aitp.json
NEAR = "near"  # a NEAR account: a NEP-413 message signed by its key
CUSTOMER = "customer"  # `<customer>@<shop>`: the shop vouches for it (a session it asked for), nothing proves it
VERIFIED_KINDS = frozenset({DOMAIN, NEAR})  # what proves itself: only these names are kept from being borrowed

ANYONE = "anyone"
VERIFIED_ONLY = "verified"
ALLOW_LIST = "allow_list"
NOBODY = "nobody"
CONTACT_POLICIES = (ANYONE, VERIFIED_ONLY, ALLOW_LIST, NOBODY)


@dataclass
class IdentityRecord:
    actor: str
    kind: str  # LOCAL, DOMAIN, NEAR or CUSTOMER
    created_at: int
    verified_at: int | None = None  # the last sign-in that proved it (domain, NEAR), the last session (customer)
    key_id: str | None = None  # the key that proof was made with: a JWK `kid`, or a NEAR public key
    contact_policy: str = VERIFIED_ONLY
    contact_allow: list[str] = field(default_factory=list)  # actor ids, for ALLOW_LIST
    name_key: str = ""  # the comparison key of its display name (aitp.identity.names), "" for none
    anonymous_visitors: bool = False  # a shop's: whether visitors not signed in get sessions as its customers
    embed_origins: list[str] = field(default_factory=list)  # a shop's: the sites that may frame its chat

    @property
    def verified(self) -> bool:
        return self.kind in VERIFIED_KINDS


class IdentityStore(abc.ABC):
    """Identities by actor id."""

    @abc.abstractmethod
    async def get(self, actor: str) -> IdentityRecord | None: ...

    @abc.abstractmethod
    async def many(self, actors: Sequence[str]) -> dict[str, IdentityRecord]:
        """Those of `actors` that are known (one read), by actor id."""

    @abc.abstractmethod
    async def add(self, identity: IdentityRecord) -> bool:
        """Insert `identity` unless its actor is known (then nothing changes); True when inserted."""

    @abc.abstractmethod
    async def proven(
        self, actor: str, kind: str, verified_at: int, key_id: str, *, new: IdentityRecord
    ) -> IdentityRecord:
        """Record a proof: set the actor's kind, `verified_at` and `key_id`, inserting `new` (with those set)
        when the actor is not known yet. Returns the record as stored."""

    @abc.abstractmethod
    async def vouched(self, identity: IdentityRecord) -> IdentityRecord:
        """Record an actor another vouches for (a shop's customer): insert `identity`, or give the known actor
        its kind, `verified_at`, `key_id` and contact policy (keeping when it was made and its name). Returns
        the record as stored."""

    @abc.abstractmethod
    async def set_contact(self, actor: str, policy: str, allow: Sequence[str]) -> IdentityRecord | None:
        """Replace the actor's contact policy; None when it is not known."""

    @abc.abstractmethod
    async def set_customer_settings(
        self, actor: str, anonymous_visitors: bool, embed_origins: Sequence[str]
    ) -> IdentityRecord | None:
        """Set whether the shop `actor` lets anonymous visitors in, and which sites may frame its chat; None when
        it is not known."""

    @abc.abstractmethod
    async def set_name_key(self, actor: str, name_key: str) -> None:
        """Record the comparison key of the actor's display name (the actor is known)."""

    @abc.abstractmethod
    async def verified_with_name(self, name_key: str, other_than: str) -> str | None:
        """A verified actor (`VERIFIED_KINDS`) other than `other_than` whose display name has `name_key` (an
        indexed read), or None. `name_key` is not empty."""
