"""Customer sessions: a shop lets the customers already signed in on its own website talk to it here.

The shop's backend asks for a session for one of its customers (its own customer id, e.g. "4821"), and gets a
short-lived key of the actor `<customer>@<shop>`. The shop vouches for that actor: it is a customer identity
(`aitp.store.identities.CUSTOMER`) whom only the shop may bring into a thread, and who talks with the shop only
(and, for a domain shop, the shop's agents under it). What the customer may not do is refused where the rule
lives (`services.identities.check_contacts`, `refuse_customer` on the settings a customer has none of).

A shop may also let visitors who are not signed in talk to it (`anonymous_visitors`, its opt-in): anyone asks,
without a key, for a session of a new `anon-<random>@<shop>`, counted per client address. When the visitor
signs in on the shop's website, the shop's session for the customer names the visitor's key (`upgrade_from`)
and the visitor's threads move to the customer.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass

from aitp.auth import hash_key
from aitp.errors import Conflict, InvalidRequest, NotFound, PermissionDenied
from aitp.gate import Gate
from aitp.identity.actor_ids import CustomerActor, customer_of
from aitp.principals import ADMIN_ACTOR, CUSTOMER_SESSION, Principal
from aitp.runtime import Runtime, now
from aitp.services import actors, identities, keys, profiles, threads
from aitp.services.connections import stream_slots
from aitp.services.embed_origins import checked as checked_origins
from aitp.services.keys import CreatedKey
from aitp.services.rate_limit import RateLimiter
from aitp.services.requests import ActorDeclaration, CapabilityDeclarationInput, ThreadChanges
from aitp.store.identities import CUSTOMER, IdentityRecord
from aitp.store.records import ActorRecord, ThreadRecord

DEFAULT_EXPIRES_IN = 3600  # seconds: about a visit to the shop's website
MIN_EXPIRES_IN = 60
MAX_EXPIRES_IN = 86_400  # a day: the shop's page asks again for a longer stay, while its own sign-in holds
ANONYMOUS = "anon-"  # the customer ids of anonymous visitors begin so; a shop's own ids may not
ANONYMOUS_PER_HOUR = 30  # anonymous sessions per client address (a page load may ask for one)
ANONYMOUS_BURST = 10
MOVE_PAGE = 100  # threads read at a time when a visitor's threads move to the customer
# who moves a visitor's threads: the server itself, on the shop's word and the visitor's key
_SERVER = Principal(actor=ADMIN_ACTOR, admin=True)


@dataclass(frozen=True)
class CustomerSession:
    actor: str  # `<customer>@<shop>`
    shop: str
    key: CreatedKey  # its secret shown once; refused from `key.record.expires_at`

    @property
    def expires_at(self) -> int:
        expires_at = self.key.record.expires_at
        assert expires_at is not None  # a session's key always ends
        return expires_at


async def create_session(
    rt: Runtime,
    principal: Principal,
    *,
    customer: str,
    shop: str | None = None,
    display_name: str | None = None,
    expires_in: int | None = None,
    upgrade_from: str | None = None,
) -> CustomerSession:
    """A new key for the shop's customer `customer`, valid `expires_in` seconds (60 to 86,400; 3,600 when
    None). The shop is the caller; an admin names it (`shop`). A `display_name` becomes the customer's
    profile name (409 `display_name_taken` when it reads as a verified actor's name); without one the
    customer's profile is left as it is. `upgrade_from`: the key of one of the shop's anonymous visitors, whose
    threads move to the customer (and whose key ends). A customer's key may not ask (403
    `customer_session_not_allowed`)."""
    identities.refuse_customer(
        principal, "ask for customer sessions (its shop does)", code="customer_session_not_allowed"
    )
    shop = await _shop(rt, principal, shop)
    actor = f"{customer}@{shop}"
    read = customer_of(actor)
    if read is None or read.customer != customer or customer.startswith(ANONYMOUS):
        raise InvalidRequest(
            "'customer' must be the shop's own id for its customer: 1 to 64 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit (e.g. '4821'), not '{ANONYMOUS}...' (anonymous visitors' ids).",
            param="customer",
            code="invalid_customer",
        )
    lifetime = _lifetime(expires_in)
    visitor = None if upgrade_from is None else await _visitor(rt, upgrade_from, shop)
    name = await profiles.checked_name(rt, actor, display_name)  # refused before anything is written
    session = await _mint(rt, read, lifetime)
    if name is not None:
        await profiles.set_name(rt, actor, name)
    if visitor is not None:
        await _move_threads(rt, visitor.actor, actor)
        await keys.revoke_key(rt.store, visitor.id, rt.state(Gate).principals, rt.state(stream_slots))
    return session


async def create_anonymous(rt: Runtime, shop: str, address: str | None) -> CustomerSession:
    """A session for a visitor of `shop` who is not signed in (no key needed): a new customer
    `anon-<random>@<shop>` for `DEFAULT_EXPIRES_IN` seconds, when the shop lets anonymous visitors in (403
    `anonymous_visitors_not_allowed` otherwise, an unknown shop included). Counted per client address (429
    `too_many_anonymous_sessions`)."""
    rt.state(anonymous_limiter).check(
        _counted_as(address),
        ANONYMOUS_PER_HOUR / 3600,
        ANONYMOUS_BURST,
        limit=f"anonymous sessions from one address: {ANONYMOUS_PER_HOUR} per hour",
        code="too_many_anonymous_sessions",
    )
    read = customer_of(f"{ANONYMOUS}x@{shop}")
    identity = None if read is None else await rt.store.identities.get(shop)
    if read is None or identity is None or not identity.anonymous_visitors:
        raise PermissionDenied(
            f"'{shop[:100]}' does not let visitors who are not signed in talk to it here.",
            param="shop",
            code="anonymous_visitors_not_allowed",
        )
    visitor = CustomerActor(ANONYMOUS + secrets.token_hex(8), shop)
    return await _mint(rt, visitor, DEFAULT_EXPIRES_IN)


def _counted_as(address: str | None) -> str:
    """Whom an anonymous session counts against: the client's address, an IPv6 client's /64 (one host may hold
    all of it), or one shared count for requests with no address (a Unix socket, a proxy that hides it)."""
    if address is None:
        return "no address"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)


def anonymous_limiter(rt: Runtime) -> RateLimiter:
    """Anonymous sessions per client address (`rt.state(anonymous_limiter)`), counted in this process."""
    return RateLimiter()


async def settings_of(rt: Runtime, principal: Principal, shop: str | None) -> IdentityRecord:
    """The shop's customer session settings (its own, or an admin's naming it)."""
    shop = await _shop(rt, principal, shop)
    return await identities.identity_of(rt, shop)


async def set_settings(
    rt: Runtime,
    principal: Principal,
    shop: str | None,
    *,
    anonymous: bool | None = None,
    embed_origins: list[str] | None = None,
) -> IdentityRecord:
    """Change the shop's customer session settings (a setting left None stays as it is): whether visitors who
    are not signed in get sessions as its customers, and which sites may frame its chat (`embed_origins`; the
    shop itself or an admin; not a customer: 403)."""
    identities.refuse_customer(principal, "change a shop's customer sessions")
    shop = await _shop(rt, principal, shop)
    origins = None if embed_origins is None else checked_origins(embed_origins)
    current = await identities.identity_of(rt, shop)
    stored = await rt.store.identities.set_customer_settings(
        shop,
        current.anonymous_visitors if anonymous is None else anonymous,
        current.embed_origins if origins is None else origins,
    )
    if stored is None:
        raise NotFound(f"No actor '{shop}' is known to this server.", param="shop", code="actor_not_found")
    return stored


def _lifetime(expires_in: int | None) -> int:
    lifetime = DEFAULT_EXPIRES_IN if expires_in is None else expires_in
    if not MIN_EXPIRES_IN <= lifetime <= MAX_EXPIRES_IN:
        raise InvalidRequest(
            f"'expires_in' must be between {MIN_EXPIRES_IN} and {MAX_EXPIRES_IN} seconds.", param="expires_in"
        )
    return lifetime


async def _mint(rt: Runtime, customer: CustomerActor, lifetime: int) -> CustomerSession:
    """The customer's identity, vouched for by its shop now, and a key of it for `lifetime` seconds (scoped
    `CUSTOMER_SESSION`: what holds it to its shop). An actor of that id that is not a customer (a local actor an
    admin named `bob@acme` before customers existed) is not the shop's to take: 409 `actor_exists`."""
    known = await rt.store.identities.get(customer.id)
    if known is not None and known.kind != CUSTOMER:
        raise Conflict(
            f"'{customer.id}' is an actor of this server already, not a customer of '{customer.shop}': choose "
            "another customer id.",
            param="customer",
            code="actor_exists",
        )
    await rt.store.identities.vouched(identities.customer(customer.id, customer.shop, now()))
    key = await keys.create_key(rt.store, customer.id, lifetime=lifetime, known=True, scopes=[CUSTOMER_SESSION])
    return CustomerSession(customer.id, customer.shop, key)


@dataclass(frozen=True)
class _Visitor:
    actor: str
    id: str  # its key's


async def _visitor(rt: Runtime, key: str, shop: str) -> _Visitor:
    """The anonymous visitor of `shop` whose key is `key` (expired or not: the visitor signed in since), or
    400 `invalid_upgrade_from`."""
    record = await rt.store.keys.find(hash_key(key))
    read = None if record is None else customer_of(record.actor)
    if (
        record is None
        or CUSTOMER_SESSION not in record.scopes
        or read is None
        or read.shop != shop
        or not read.customer.startswith(ANONYMOUS)
    ):
        raise InvalidRequest(
            f"'upgrade_from' is not the key of an anonymous visitor of '{shop}' (it may have been upgraded already).",
            param="upgrade_from",
            code="invalid_upgrade_from",
        )
    return _Visitor(record.actor, record.id)


async def _move_threads(rt: Runtime, visitor: str, customer: str) -> None:
    """Each thread of `visitor` becomes the customer's: the customer joins with the visitor's capabilities (and
    speaks as a person where the visitor did), then the visitor leaves. What the visitor wrote stays its own."""
    after: str | None = None
    while True:
        page = await rt.store.list_threads(visitor, limit=MOVE_PAGE, order="asc", after=after)
        for thread in page:
            await _move_thread(rt, thread, visitor, customer)
        if len(page) < MOVE_PAGE:
            return
        after = page[-1].id


async def _move_thread(rt: Runtime, thread: ThreadRecord, visitor: str, customer: str) -> None:
    members = {actor.id: actor for actor in await rt.store.list_actors(thread.id)}
    if visitor not in members:
        return
    if visitor == thread.creator or visitor in thread.persons:
        persons = [*thread.persons, customer]
        await threads.modify_thread(rt, _SERVER, thread.id, ThreadChanges(turns={"persons": persons}), _no_metadata)
    capabilities: list[CapabilityDeclarationInput] = [*members[visitor].capabilities]  # stored, read back as is
    declared = ActorDeclaration(id=customer, capabilities=capabilities)
    await actors.put_actor(rt, _SERVER, thread.id, declared)
    await actors.remove_actor(rt, _SERVER, thread.id, visitor)


def _no_metadata(thread: ThreadRecord, members: list[ActorRecord]) -> dict[str, str]:
    return {}  # the move changes no metadata: nothing to show


async def _shop(rt: Runtime, principal: Principal, requested: str | None) -> str:
    """The shop a session is asked for: the caller's own actor, or the one an admin names (known to this
    server, and able to have customers)."""
    if not principal.admin:
        if requested is not None and requested != principal.actor:
            raise PermissionDenied(
                "A key asks for sessions of its own actor's customers only (leave out 'shop').", param="shop"
            )
        shop = principal.actor
    elif requested is None:
        raise InvalidRequest("An admin key names the shop whose customer the session is for.", param="shop")
    else:
        shop = requested
    if customer_of(f"x@{shop}") is None:
        raise InvalidRequest(
            f"'{shop[:100]}' cannot have customers: a shop's id has no '@', no control characters and no spaces "
            "around it.",
            param="shop",
            code="invalid_actor_id",
        )
    if principal.admin and await rt.store.identities.get(shop) is None:
        raise NotFound(f"No actor '{shop}' is known to this server.", param="shop", code="actor_not_found")
    return shop
