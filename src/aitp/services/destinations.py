"""Where this service may send a request of its own: the URL as a browser reads it, and the operator's
allow/deny policy. Shared by the JSON fetches of the UI (`services.fetch`, allow-list only) and webhook
deliveries (`services.webhooks`: public addresses by default, private ones only when allowed), so that
neither can be used to probe the operator's network.

A URL is read as a browser reads it (WHATWG: backslashes are slashes, tabs and newlines dropped), then
matched against prefixes exactly: same scheme, host and port, and a path under the prefix's path
(segment-aligned), without dot segments in any spelling.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import certifi
import httpx

from aitp.errors import Unprocessable

DEFAULT_PORTS = {"http": 80, "https": 443}
RESOLVE_TIMEOUT = 5.0  # seconds to resolve a destination's host name

# WHATWG URL parsing (what browsers, and so the UI, make of a URL) before reading it: C0 controls and spaces
# trimmed at both ends, every tab and newline removed, and for http(s) a backslash is a slash up to the query.
# httpx (RFC 3986) would send a backslash as it is, and servers that take it for a slash would then resolve a
# "..\" segment that no check here saw; "\@host" would even be read as user info before another host.
_TRIMMED = "".join(chr(c) for c in range(0x21))
_DROPPED = str.maketrans("", "", "\t\n\r")


def normalize_url(raw: str) -> str:
    """`raw` as a browser reads an http(s) URL (or a reference relative to one): see above."""
    text = raw.strip(_TRIMMED).translate(_DROPPED)
    end = min((at for at in (text.find("?"), text.find("#")) if at >= 0), default=len(text))
    return text[:end].replace("\\", "/") + text[end:]


def _dot_segment(segment: str) -> bool:
    """A "." or ".." segment, also as servers may read one: with path parameters ("..;x": Tomcat and Spring
    drop them), or with more dots and trailing spaces ("...", ".. ": Windows trims them)."""
    name = segment.split(";", 1)[0]
    return bool(name) and not name.rstrip(". ")


def parse_url(raw: str, verb: str = "fetched") -> httpx.URL:
    """An absolute http(s) URL, read as a browser reads it, without credentials or dot segments, else 422
    `invalid_url` (saying what cannot be `verb`: "fetched", "delivered to")."""
    try:
        url = httpx.URL(normalize_url(raw))
    except httpx.InvalidURL as error:
        raise Unprocessable(f"Not a valid URL: {error}.", param="url", code="invalid_url") from error
    if url.scheme not in DEFAULT_PORTS or not url.host:
        raise Unprocessable(f"Only absolute http and https URLs can be {verb}.", param="url", code="invalid_url")
    if url.userinfo:
        raise Unprocessable(f"URLs with credentials cannot be {verb}.", param="url", code="invalid_url")
    # httpx resolves literal ".." but sends "%2e%2e" and "%2f" as they are, and servers may decode them
    raw_path = url.raw_path.split(b"?", 1)[0].lower()
    if b"%2f" in raw_path or b"%5c" in raw_path or any(_dot_segment(s) for s in url.path.split("/")):
        raise Unprocessable(
            f"URLs with encoded slashes or backslashes, or dot segments, cannot be {verb}.",
            param="url",
            code="invalid_url",
        )
    return url


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host.lower(), url.port or DEFAULT_PORTS[url.scheme]


def is_allowed(url: httpx.URL, prefixes: Iterable[str]) -> bool:
    """True when `url` has the scheme, host and port of a prefix and a path under its path."""
    for prefix in prefixes:
        try:
            allowed = httpx.URL(prefix)
        except httpx.InvalidURL:
            continue
        if allowed.scheme not in DEFAULT_PORTS or _origin(allowed) != _origin(url):
            continue
        base = allowed.path
        # "https://h/forms" admits /forms and /forms/…, never /forms-evil
        if base.endswith("/") and url.path.startswith(base):
            return True
        if not base.endswith("/") and (url.path == base or url.path.startswith(base + "/")):
            return True
    return False


def is_public(address: str) -> bool:
    """Whether an IP address is on the public internet: not loopback, private, link-local (cloud metadata
    services), shared (CGNAT), multicast, reserved or unspecified; an IPv4-mapped IPv6 address as its IPv4."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def addresses(url: httpx.URL) -> list[str]:
    """The IP addresses `url`'s host stands for: itself when it is one, else what it resolves to now (none when
    it does not resolve)."""
    host = url.host
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            found = await asyncio.get_running_loop().getaddrinfo(host, url.port or DEFAULT_PORTS[url.scheme])
    except (OSError, TimeoutError, UnicodeError):
        return []
    return list(dict.fromkeys(str(sockaddr[0]) for family, *_, sockaddr in found if family in FAMILIES))


FAMILIES = (socket.AF_INET, socket.AF_INET6)


async def private_address(url: httpx.URL) -> str | None:
    """An address `url`'s host resolves to that is not public (the first found), or None when all are public.
    A host that does not resolve answers None: there is nothing to reach (the request fails on its own)."""
    return next((address for address in await addresses(url) if not is_public(address)), None)


@dataclass(frozen=True)
class Pinned:
    """A request to the address that was checked, not to the host name: resolving the name again when
    connecting could give another address (DNS rebinding: public when checked, private when used).
    `headers` and `extensions` keep the name where the receiver and TLS need it (Host, SNI and the
    certificate's name)."""

    url: httpx.URL
    headers: dict[str, str]
    extensions: dict[str, Any]


def pinned(url: httpx.URL, address: str) -> Pinned:
    if address == url.host:
        return Pinned(url, {}, {})
    host = url.netloc.decode("ascii")  # with the port when the URL has one, as a Host header carries it
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return Pinned(url.copy_with(host=address), {"host": host}, extensions)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of this service's own requests, made once: each `httpx.AsyncClient` made without one
    loads the CA bundle again, 20-30 ms of CPU on the event loop (bench/sign_in.py)."""
    return ssl.create_default_context(cafile=certifi.where())
