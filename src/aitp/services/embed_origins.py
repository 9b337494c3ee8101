"""Which websites may frame a shop's chat (web/embed.html): the shop's own, and no one else's.

The chat a shop embeds takes its customer's key from the page that frames it (web/embed.js). Any page could frame
it and hand it a key: its own session of the shop, to read what the customer then writes, or a look-alike
shop's, shown in the brand the customer trusts. So the server tells the browser which sites may frame a shop's
chat (`Content-Security-Policy: frame-ancestors`): the origins the shop listed (`embed_origins` in its customer
session settings) or, for a domain shop that listed none, its own host over https. A shop of another kind that
listed none is framed by no one.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from aitp.errors import InvalidRequest
from aitp.identity.actor_ids import is_domain, parse_domain_actor
from aitp.runtime import Runtime
from aitp.store.identities import IdentityRecord

MAX_ORIGINS = 20
MAX_ORIGIN = 253 + 20  # a host name, the scheme and a port


def checked(values: Sequence[str], param: str = "embed_origins") -> list[str]:
    """Each value as an origin (`https://shop.example`, `http://localhost:8080`: scheme, host, port, nothing
    else), lower case, each once; 400 naming the item otherwise."""
    if len(values) > MAX_ORIGINS:
        raise InvalidRequest(f"At most {MAX_ORIGINS} origins may frame a shop's chat.", param=param)
    origins: list[str] = []
    for index, value in enumerate(values):
        origin = _origin(value)
        if origin is None:
            raise InvalidRequest(
                "Each embed origin is a scheme (https or http), a host and maybe a port, with nothing after it: "
                f"e.g. 'https://sunnysocks.example', not '{value[:100]}'.",
                param=f"{param}[{index}]",
                code="invalid_origin",
            )
        if origin not in origins:
            origins.append(origin)
    return origins


def _origin(value: str) -> str | None:
    if not isinstance(value, str) or len(value) > MAX_ORIGIN or not value.isprintable() or " " in value:
        return None
    try:
        parts = urlsplit(value.strip().lower())
        port = parts.port  # reading it checks it
    except ValueError:
        return None
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or "*" in parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}" if port is None or parts.netloc.endswith(f":{port}") else None


def allowed(identity: IdentityRecord) -> list[str]:
    """The origins that may frame the shop's chat: those it listed, else a domain shop's own host over https."""
    if identity.embed_origins:
        return list(identity.embed_origins)
    if is_domain(identity.actor):
        host = parse_domain_actor(identity.actor)
        return [f"https://{host.host}" + (f":{host.port}" if host.port is not None else "")]
    return []


async def frame_ancestors(rt: Runtime, shop: str | None) -> list[str]:
    """The origins that may frame the chat of `shop` (none for a shop this server does not know)."""
    if not shop:
        return []
    identity = await rt.store.identities.get(shop)
    return [] if identity is None else allowed(identity)
