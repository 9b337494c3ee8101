"""Which kind of actor an id names, read from the id alone.

- A NEAR account: an implicit account (64 lowercase hex digits: its ed25519 public key) or a named account
  ending in `.near` or `.testnet`. It proves itself with a NEP-413 signed message.
- A domain agent: `host[:port][/path]`, e.g. `shop.example.com` or `example.com/sales/eu`. It proves itself
  with a JWS signed by a key published at `https://host[:port]/.well-known/aitp.json`.
- A shop's customer: `<customer>@<shop>`, the shop's own id for a customer it signed in on its website (1 to 64
  letters, digits, '.', '_' or '-', starting with a letter or digit), then the shop's actor id (no '@'). The shop
  vouches for it: its keys are the short-lived sessions the shop asks for.
- Anything else is a local actor: it has no proof of its own (an admin hands out its keys).

Ids are case-sensitive strings compared as they are, so a domain id is accepted only in its one canonical
spelling: lower case, no trailing dot, no empty or dot segments. `Example.com` is refused rather than read as
`example.com`, so that two spellings never name one actor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from aitp.identity.refusals import ProofRefused

_NEAR_IMPLICIT = re.compile(r"[0-9a-f]{64}")
# the account id grammar of nearcore (near-account-id): lowercase alphanumerics separated by - or _, parts by .
_NEAR_NAMED = re.compile(r"(([a-z\d]+[\-_])*[a-z\d]+\.)*([a-z\d]+[\-_])*[a-z\d]+")
NEAR_SUFFIXES = (".near", ".testnet")

_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_PORT = re.compile(r"[1-9][0-9]{0,4}")  # no leading zeros: one spelling per port
_CUSTOMER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_CUSTOMER_ID = 256  # the whole `<customer>@<shop>`: the longest actor id a key or an allow list takes
MAX_HOST = 253
MAX_SEGMENTS = 8
MAX_ID = MAX_HOST + 6 + MAX_SEGMENTS * 65  # host, :port, and the longest path: longer is read no further


@dataclass(frozen=True)
class DomainActor:
    """A domain agent id, read: `path` is "" for the host's own agent, else like "/sales/eu"."""

    host: str
    port: int | None
    path: str

    @property
    def id(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.host}{port}{self.path}"


@dataclass(frozen=True)
class CustomerActor:
    """A shop's customer id, read: `customer` is the shop's own id for it, `shop` the shop's actor id."""

    customer: str
    shop: str

    @property
    def id(self) -> str:
        return f"{self.customer}@{self.shop}"


def is_near_implicit(actor_id: str) -> bool:
    return _NEAR_IMPLICIT.fullmatch(actor_id) is not None


def is_near_named(actor_id: str) -> bool:
    return 2 <= len(actor_id) <= 64 and actor_id.endswith(NEAR_SUFFIXES) and _NEAR_NAMED.fullmatch(actor_id) is not None


def is_near(actor_id: str) -> bool:
    return is_near_implicit(actor_id) or is_near_named(actor_id)


def _domain_refusal(actor_id: str) -> str | DomainActor:
    """The id read as a domain agent id, or why it is not one."""
    if len(actor_id) > MAX_ID:
        return f"it is longer than {MAX_ID} characters"
    if is_near(actor_id):
        return "it is a NEAR account id"
    if actor_id != actor_id.lower():
        return "ids are case-sensitive and domain agent ids are written in lower case"
    authority, slash, path = actor_id.partition("/")
    host, colon, port_text = authority.partition(":")
    if host != "localhost":
        labels = host.split(".")
        if len(host) > MAX_HOST or len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
            return "the host is not a DNS name of at least two labels (or localhost)"
        if labels[-1].isdigit():
            # an IPv4 address has the shape of a name: a top-level label is never all digits
            return "the host is an IP address, not a DNS name"
    port = None
    if colon:
        if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
            return "the port is not a number from 1 to 65535"
        port = int(port_text)
    if slash:
        segments = path.split("/")
        if len(segments) > MAX_SEGMENTS or not all(_SEGMENT.fullmatch(segment) for segment in segments):
            return (
                f"the path is not 1 to {MAX_SEGMENTS} segments of lowercase letters, digits, '.', '_' or '-' "
                "(no empty segment, no trailing slash)"
            )
    return DomainActor(host, port, "/" + path if slash else "")


def is_domain(actor_id: str) -> bool:
    return isinstance(_domain_refusal(actor_id), DomainActor)


def _customer_refusal(actor_id: str) -> str | CustomerActor:
    """The id read as a shop's customer id, or why it is not one."""
    customer, at, shop = actor_id.partition("@")
    if not at:
        return "it has no '@' between the customer and the shop"
    if len(actor_id) > MAX_CUSTOMER_ID:
        return f"it is longer than {MAX_CUSTOMER_ID} characters"
    if _CUSTOMER.fullmatch(customer) is None:
        return (
            "the customer (before '@') is not 1 to 64 letters, digits, '.', '_' or '-' starting with a letter or digit"
        )
    if not shop or "@" in shop or not shop.isprintable() or shop != shop.strip():
        return "the shop (after '@') is not an actor id: empty, a second '@', a control character or spaces around it"
    return CustomerActor(customer, shop)


def customer_of(actor_id: str) -> CustomerActor | None:
    """The id read as a shop's customer (`<customer>@<shop>`), or None when it is not one. Cheap: no '@', no
    regular expression."""
    if "@" not in actor_id:
        return None
    read = _customer_refusal(actor_id)
    return read if isinstance(read, CustomerActor) else None


def is_customer(actor_id: str) -> bool:
    return customer_of(actor_id) is not None


def parse_customer_actor(actor_id: str) -> CustomerActor:
    """The parts of a shop's customer id; `invalid_actor_id` saying what is wrong otherwise."""
    read = _customer_refusal(actor_id)
    if isinstance(read, str):
        shown = actor_id if len(actor_id) <= 80 else actor_id[:80] + "..."
        raise ProofRefused("invalid_actor_id", f"{shown!r} is not a customer id (<customer>@<shop>): {read}.")
    return read


def within_shop(actor_id: str, shop: str) -> bool:
    """Whether `actor_id` is the shop itself or, for a domain shop, one of its agents (`<shop>/...`)."""
    return actor_id == shop or (actor_id.startswith(shop + "/") and is_domain(shop) and is_domain(actor_id))


def kind_of(actor_id: str) -> Literal["domain", "near", "customer", "local"]:
    """How an actor with this id proves who it is (see the module's docstring)."""
    if is_near(actor_id):
        return "near"
    if is_domain(actor_id):
        return "domain"
    if is_customer(actor_id):
        return "customer"
    return "local"


def parse_domain_actor(actor_id: str) -> DomainActor:
    """The parts of a domain agent id; `invalid_actor_id` saying what is wrong otherwise."""
    read = _domain_refusal(actor_id)
    if isinstance(read, str):
        shown = actor_id if len(actor_id) <= 80 else actor_id[:80] + "..."
        raise ProofRefused("invalid_actor_id", f"{shown!r} is not a domain agent id: {read}.")
    return read


def well_known_urls(actor: DomainActor) -> tuple[str, str]:
    """Where the actor's keys are published: over https, and the same over http (which only a service's own
    allow-list may admit: the service decides)."""
    authority = actor.host if actor.port is None else f"{actor.host}:{actor.port}"
    return f"https://{authority}/.well-known/aitp.json", f"http://{authority}/.well-known/aitp.json"
