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
from collections.abc import AsyncIterator, Iterable
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
    url = _without_root_dot(url, verb)
    # httpx resolves literal ".." but sends "%2e%2e" and "%2f" as they are, and servers may decode them
    raw_path = url.raw_path.split(b"?", 1)[0].lower()
    if b"%2f" in raw_path or b"%5c" in raw_path or any(_dot_segment(s) for s in url.path.split("/")):
        raise Unprocessable(
            f"URLs with encoded slashes or backslashes, or dot segments, cannot be {verb}.",
            param="url",
            code="invalid_url",
        )
    return url


def _without_root_dot(url: httpx.URL, verb: str) -> httpx.URL:
    """`url` with its host's trailing dot (the DNS root: "example.com." is "example.com") dropped, so that the
    allow and deny prefixes match it and an IP address written so ("127.0.0.1.") is seen as one, before any
    lookup; a host of empty labels only ("." or "h..") is no URL."""
    host = url.host
    if not host.endswith("."):
        return url
    if host.rstrip(".") != host[:-1] or not host[:-1]:
        raise Unprocessable(f"{host!r} is not a host name that can be {verb}.", param="url", code="invalid_url")
    return url.copy_with(host=host[:-1])


Origin = tuple[str, str, int]  # scheme, host (lower case, no root dot), port


def origin(url: httpx.URL) -> Origin:
    return url.scheme, url.host.lower().removesuffix("."), url.port or DEFAULT_PORTS.get(url.scheme, 0)


def is_allowed(url: httpx.URL, prefixes: Iterable[str]) -> bool:
    """True when `url` has the scheme, host and port of a prefix and a path under its path."""
    for prefix in prefixes:
        try:
            allowed = httpx.URL(prefix)
        except httpx.InvalidURL:
            continue
        if allowed.scheme not in DEFAULT_PORTS or origin(allowed) != origin(url):
            continue
        base = allowed.path
        # "https://h/forms" admits /forms and /forms/…, never /forms-evil
        if base.endswith("/") and url.path.startswith(base):
            return True
        if not base.endswith("/") and (url.path == base or url.path.startswith(base + "/")):
            return True
    return False


# IPv6 addresses that carry an IPv4 address a gateway or the host's stack may connect to instead: NAT64 (RFC
# 6052; the well-known prefix is global for `ipaddress`, so 64:ff9b::127.0.0.1 would pass as public) and the
# deprecated IPv4-compatible ::a.b.c.d (RFC 4291). 6to4 (2002::/16) and IPv4-mapped are read by `ipaddress`.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# the local-use NAT64 prefix (RFC 8215): where its IPv4 address sits depends on the operator's prefix length,
# and it is never public
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


def is_public(address: str) -> bool:
    """Whether an IP address is on the public internet: not loopback, private, link-local (cloud metadata
    services), shared (CGNAT), multicast, reserved or unspecified. An IPv6 address that carries an IPv4 one
    (IPv4-mapped, IPv4-compatible, NAT64, 6to4) is public only when that IPv4 address is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return False
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            # judged by the IPv4 address alone: Python versions disagree on the carrier prefixes themselves
            # (3.11.2 calls all of 2002::/16 not global, 3.11.7 global), the IPv4 address is what is reached
            return embedded.is_global and not embedded.is_multicast
    return ip.is_global and not ip.is_multicast


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _IPV4_COMPATIBLE:  # :: and ::1 read as 0.0.0.0 and 0.0.0.1: not public either
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


async def addresses(url: httpx.URL) -> list[str]:
    """The IP addresses `url`'s host stands for: itself when it is one, else what it resolves to now (none when
    it does not resolve)."""
    host = url.host
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    return await resolve(host, url.port or DEFAULT_PORTS[url.scheme])


async def resolve(host: str, port: int) -> list[str]:
    """What the system resolver makes of `host` now, each address once (none when it does not resolve). The
    only lookup the checks make: a connection pinned to its answer makes none of its own."""
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            found = await asyncio.get_running_loop().getaddrinfo(host, port)
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


class TooLarge(httpx.TransportError):
    """An answer longer than a `PinnedTransport` reads, or compressed (its size unknown until inflated)."""


class PinnedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that connects each request to the address checked for its origin (`pins`, filled from
    the checks: see `Pinned`), refuses an origin never checked, asks for answers uncompressed and reads at most
    `max_bytes` of each (a streamed one whole): what a remote end answers makes this process hold no more."""

    def __init__(self, pins: dict[Origin, str], max_bytes: int, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.pins = pins
        self.max_bytes = max_bytes
        self._inner = inner or httpx.AsyncHTTPTransport(verify=tls_context(), trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        address = self.pins.get(origin(request.url))
        if address is None:
            raise httpx.ConnectError(f"{request.url.host} is not a checked destination.", request=request)
        headers = request.headers.copy()
        headers.setdefault("host", request.url.netloc.decode("ascii"))
        headers["accept-encoding"] = "identity"
        url, extensions = request.url, dict(request.extensions)
        if address != url.host:
            if url.scheme == "https":  # TLS still checks the certificate of the name
                extensions["sni_hostname"] = url.raw_host.decode("ascii").removesuffix(".")
            url = url.copy_with(host=address)
        sent = httpx.Request(request.method, url, headers=headers, stream=request.stream, extensions=extensions)
        response = await self._inner.handle_async_request(sent)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        length = response.headers.get("content-length", "")
        if encoding not in ("", "identity") or (length.isdigit() and int(length) > self.max_bytes):
            await response.aclose()
            what = f"compressed ({encoding})" if encoding not in ("", "identity") else f"{length} bytes long"
            raise TooLarge(f"The answer is {what}; at most {self.max_bytes} plain bytes are read.", request=request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        stream = _Bounded(response.stream, self.max_bytes, request)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Bounded(httpx.AsyncByteStream):
    """An answer's body, refused (`TooLarge`) once longer than `max_bytes`: never held past that."""

    def __init__(self, stream: httpx.AsyncByteStream, max_bytes: int, request: httpx.Request) -> None:
        self._stream, self._max_bytes, self._request = stream, max_bytes, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._stream:
            read += len(chunk)
            if read > self._max_bytes:
                raise TooLarge(f"The answer is over {self._max_bytes} bytes.", request=self._request)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
