"""Who is who: which actors this server knows, what proves each one, and who may contact whom.

Every actor a thread names must be known here (`aitp.store.identities`): a local actor made by the admin (a
key, or a thread an admin created naming it), a domain or NEAR actor that signed in (`services.sign_in`), or a
shop's customer (`<customer>@<shop>`) the shop asked a session for (`services.customer_sessions`). Each has a
contact policy, checked whenever someone else brings it into a thread: at the thread's creation (every face:
Threads, AITP-T01, Conversations, A2A) and when it is added to one. Admins keep full power.

A customer is read from its id alone (no store read): it talks only with its shop (and, for a domain shop, the
shop's agents under it), only its shop may bring it into a thread, and it has no settings of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aitp.errors import InvalidRequest, NotFound, PermissionDenied
from aitp.identity.actor_ids import customer_of, within_shop
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services.access import own_or_admin
from aitp.services.rate_limit import RateLimiter
from aitp.store.identities import (
    ALLOW_LIST,
    ANYONE,
    CONTACT_POLICIES,
    CUSTOMER,
    LOCAL,
    NOBODY,
    VERIFIED_ONLY,
    IdentityRecord,
)

MAX_ALLOW = 1000  # actor ids in an allow list

_REFUSALS = {
    VERIFIED_ONLY: "accepts contact from verified actors only (domain or NEAR), and '{caller}' is not verified",
    ALLOW_LIST: "accepts contact only from the actors it allows, and '{caller}' is not one of them",
    NOBODY: "accepts contact from nobody",
}


@dataclass(frozen=True)
class Named:
    """An actor a request names, and the field that names it (for refusals)."""

    actor: str
    param: str


def local(actor: str, contact_policy: str) -> IdentityRecord:
    """The identity an admin makes by naming an actor (or making it a key): a local actor, contactable as
    `contact_policy` says, whatever its id looks like (only a shop's session makes a customer)."""
    return IdentityRecord(actor, LOCAL, now(), contact_policy=contact_policy)


def customer(actor: str, shop: str, vouched_at: int | None) -> IdentityRecord:
    """A shop's customer (`actor` is `<customer>@<shop>`): only its shop may bring it into a thread."""
    return IdentityRecord(
        actor, CUSTOMER, now(), verified_at=vouched_at, contact_policy=ALLOW_LIST, contact_allow=[shop]
    )


def refuse_customer(
    principal: Principal, what: str, code: str = "customer_not_allowed", param: str | None = None
) -> None:
    """403 `code` when the caller is a shop's customer (not an admin key): its shop speaks for it, so it may not
    `what` (set a profile, a contact policy, webhooks, A2A settings; make a key that outlives its session)."""
    read = principal.customer
    if read is not None:
        raise PermissionDenied(
            f"'{principal.actor}' is a customer of '{read.shop}' signed in by it: a customer may not {what}.",
            param=param,
            code=code,
        )


async def admit(rt: Runtime, principal: Principal, actor: str) -> None:
    """An admin naming an actor this server does not know (in a thread, its profile, its contact policy or its
    A2A settings) makes it a local actor, as an admin's key for it would; anyone else's naming changes nothing."""
    if principal.admin:
        await rt.store.identities.add(local(actor, rt.settings.contact_policy))


def may_contact(target: IdentityRecord, caller: IdentityRecord | None) -> bool:
    """Whether `target`'s contact policy lets `caller` bring it into a thread. A shop's own customers always
    reach it (and its agents under it): it vouched for them when it asked for their session."""
    if caller is not None and caller.kind == CUSTOMER:
        read = customer_of(caller.actor)
        if read is not None and within_shop(target.actor, read.shop):
            return True
    policy = target.contact_policy
    if policy == ANYONE:
        return True
    if caller is None or policy == NOBODY:
        return False
    if policy == VERIFIED_ONLY:
        return caller.verified
    return caller.actor in target.contact_allow


async def check_contacts(rt: Runtime, principal: Principal, named: Sequence[Named]) -> None:
    """Refuse a thread or a join that names an actor this server does not know (400 `unknown_actor`) or whose
    contact policy refuses the caller (403 `contact_refused`), naming the field; a customer naming anyone but
    its shop (or the shop's agents under it) is refused first (403 `outside_customer_session`). An admin may
    name anyone: an actor it names that is not known becomes a local actor (as an admin's key makes one)."""
    others = {n.actor: n for n in named if n.actor != principal.actor}
    if not others:
        return
    _check_customer_contacts(principal, others.values())
    if principal.admin:
        for actor in others:
            await admit(rt, principal, actor)
        return
    known = await rt.store.identities.many([*others, principal.actor])
    caller = known.get(principal.actor)
    for actor, name in others.items():
        target = known.get(actor)
        if target is None:
            raise InvalidRequest(
                f"No actor '{actor}' is known to this server: a local actor gets a key from the admin, a domain "
                "or NEAR actor signs in (proving its name) before it can be named.",
                param=name.param,
                code="unknown_actor",
            )
        if not may_contact(target, caller):
            reason = _REFUSALS[target.contact_policy].format(caller=principal.actor)
            raise PermissionDenied(f"Actor '{actor}' {reason}.", param=name.param, code="contact_refused")


def _check_customer_contacts(principal: Principal, named: Iterable[Named]) -> None:
    """A customer's session is with its shop: 403 `outside_customer_session` for any other actor it names."""
    read = principal.customer
    if read is None:
        return
    for name in named:
        if not within_shop(name.actor, read.shop):
            raise PermissionDenied(
                f"'{principal.actor}' is a customer of '{read.shop}' and talks with it only (and its agents under "
                f"it), not with '{name.actor}'.",
                param=name.param,
                code="outside_customer_session",
            )


def thread_limiter(rt: Runtime) -> RateLimiter:
    """New threads per creator (`rt.state(thread_limiter)`), counted in this process."""
    return RateLimiter()


def count_new_thread(rt: Runtime, principal: Principal) -> None:
    """Count a thread the caller opens: 429 `too_many_threads` past `new_threads_per_hour` (admins: no limit)."""
    per_hour = rt.settings.new_threads_per_hour
    if principal.admin or per_hour <= 0:
        return
    rt.state(thread_limiter).check(
        principal.actor,
        per_hour / 3600,
        per_hour,
        limit=f"new threads by '{principal.actor}': {per_hour} per hour",
        code="too_many_threads",
    )


async def identity_of(rt: Runtime, actor: str) -> IdentityRecord:
    """The actor's identity, or 404 `actor_not_found`."""
    identity = await rt.store.identities.get(actor)
    if identity is None:
        raise NotFound(f"No actor '{actor}' is known to this server.", param="actor_id", code="actor_not_found")
    return identity


def shows_profile(principal: Principal, identity: IdentityRecord) -> bool:
    """Whether the caller sees the actor's profile from its identity alone (a verified actor's is public; a
    local actor's only to itself and admins, and through the threads it shares with others)."""
    return identity.verified or principal.admin or principal.actor == identity.actor


def shows_policy(principal: Principal, identity: IdentityRecord) -> bool:
    """A contact policy (its allow list above all) is the actor's own business, and its admin's."""
    return principal.admin or principal.actor == identity.actor


async def own_policy(rt: Runtime, principal: Principal, actor: str) -> IdentityRecord:
    """The actor's identity, to read its contact policy: only the actor itself, or an admin, may (403)."""
    own_or_admin(principal, actor, "read its contact policy", "actor_id")
    return await identity_of(rt, actor)


async def set_contact_policy(
    rt: Runtime, principal: Principal, actor: str, policy: str, allow: Sequence[str] | None
) -> IdentityRecord:
    """Replace the actor's contact policy: only the actor itself, or an admin, may (not a customer: its shop
    alone may contact it)."""
    refuse_customer(principal, "set its contact policy (only its shop may bring it into a thread)", param="policy")
    own_or_admin(principal, actor, "set its contact policy")
    if policy not in CONTACT_POLICIES:
        raise InvalidRequest(f"'policy' must be one of {', '.join(CONTACT_POLICIES)}.", param="policy")
    listed = list(dict.fromkeys(allow or []))
    if listed and policy != ALLOW_LIST:
        raise InvalidRequest("'allow' is only for the allow_list policy.", param="allow")
    if len(listed) > MAX_ALLOW:
        raise InvalidRequest(f"'allow' may list at most {MAX_ALLOW} actors.", param="allow", code="too_many_actors")
    for i, item in enumerate(listed):
        if not item or len(item) > 256:
            raise InvalidRequest("Each allowed actor must be an actor id of 1 to 256 characters.", param=f"allow[{i}]")
    await admit(rt, principal, actor)
    stored = await rt.store.identities.set_contact(actor, policy, listed)
    if stored is None:
        raise NotFound(f"No actor '{actor}' is known to this server.", param="actor", code="actor_not_found")
    return stored


def verification_of(identity: IdentityRecord | None, actor: str) -> dict[str, object]:
    """What proves who `actor` is, as every face shows it: `kind` (domain, near, customer or local), the
    verified `identifier`, when (`verified_at`) and with which key (`key_id`); a local actor's is its id alone;
    a customer's is the shop that vouches for it (`vouched_by`) and when it last asked a session for it."""
    if identity is not None and identity.kind == CUSTOMER:
        read = customer_of(identity.actor)
        return {
            "kind": CUSTOMER,
            "identifier": identity.actor,
            "verified_at": identity.verified_at,
            "key_id": None,
            "vouched_by": None if read is None else read.shop,
        }
    if identity is None or not identity.verified:
        return {"kind": LOCAL, "identifier": actor, "verified_at": None, "key_id": None}
    return {
        "kind": identity.kind,
        "identifier": identity.actor,
        "verified_at": identity.verified_at,
        "key_id": identity.key_id,
    }
