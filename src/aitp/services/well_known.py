"""Fetching a domain agent's key document (`/.well-known/aitp.json`, read by `aitp.identity.documents`) without
letting sign-ins probe the operator's network, and keeping it as long as its HTTP caching headers say.

Which URL: `https://host[:port]/.well-known/aitp.json`; plain http only when a prefix of `allow` admits the http
URL (a local agent in development). The host must resolve to public addresses only, unless `allow` admits the
URL; the request then goes to the address that was checked (pinned, as webhooks are: Host header and TLS name
kept), never to a second resolution. No redirects are followed, no cookies or proxy settings used; the body is
read up to `max_bytes` and the whole exchange, resolution included, must end within `timeout`.

A document is kept per URL (one per host, shared by the host's agents) for its `Cache-Control` max-age
(s-maxage first), else `Expires` minus `Date`, else `default_ttl`; never beyond `max_ttl`, and not at all with
no-store, no-cache or a max-age of 0. Failures are not kept: the next sign-in fetches again. Concurrent sign-ins
for one host share one fetch.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from aitp.identity import ProofRefused, PublishedKeys, parse_domain_actor, read_document, well_known_urls
from aitp.identity.actor_ids import DomainActor
from aitp.services.destinations import addresses, is_allowed, is_public, pinned, tls_context

DEFAULT_MAX_BYTES = 64 * 1024
MAX_ENTRIES = 10_000  # documents kept; past it the oldest kept is dropped


@dataclass(frozen=True)
class _Kept:
    keys: PublishedKeys
    until: float  # on the cache's clock


def _unreachable(message: str) -> ProofRefused:
    return ProofRefused("well_known_unreachable", message)


def address_class(address: str) -> str | None:
    """What kind of non-public address `address` is ("a loopback address"...), None for a public one."""
    if is_public(address):
        return None
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, test in (
        ("an unspecified", ip.is_unspecified),
        ("a loopback", ip.is_loopback),
        ("a link-local", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("a private", ip.is_private),
        ("a reserved", ip.is_reserved),
    ):
        if test:
            return f"{kind} address"
    return "a shared or otherwise non-public address"


def _http_time(value: str | None) -> float | None:
    parsed = email.utils.parsedate_tz(value) if value else None
    return float(email.utils.mktime_tz(parsed)) if parsed else None


def cache_seconds(headers: httpx.Headers, *, default_ttl: float, max_ttl: float, now: float) -> float:
    """How long a response may be kept by its caching headers (RFC 9111), in seconds; 0: not at all. `now`:
    wall-clock time, for an answer without a Date."""
    directives: dict[str, str] = {}
    for value in headers.get_list("cache-control"):
        for part in value.split(","):
            name, _, argument = part.partition("=")
            directives.setdefault(name.strip().lower(), argument.strip().strip('"'))
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    for name in ("s-maxage", "max-age"):
        if name in directives:
            argument = directives[name]
            # an unreadable max-age makes the answer stale at once (RFC 9111 §4.2.1)
            return min(float(argument), max_ttl) if argument.isdigit() else 0.0
    if "expires" in headers:
        expires = _http_time(headers.get("expires"))
        if expires is None:  # an invalid Expires means already expired (RFC 9111 §5.3)
            return 0.0
        date = _http_time(headers.get("date"))
        return max(0.0, min(expires - (now if date is None else date), max_ttl))
    return min(default_ttl, max_ttl)


def _strict_json(body: bytes) -> Any:
    """JSON as RFC 8259 says it: UTF-8, no NaN or Infinity, no key twice in one object."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise ValueError(f"the key {key!r} appears twice in one object")
            obj[key] = value
        return obj

    return json.loads(body.decode("utf-8"), parse_constant=no_constant, object_pairs_hook=no_duplicates)


class WellKnownCache:
    """The key documents of domain agents, fetched under the policy above and kept; one per process."""

    def __init__(
        self,
        allow: tuple[str, ...] = (),
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = 5.0,
        default_ttl: float = 300.0,
        max_ttl: float = 86_400.0,
        clock: Callable[[], float] = time.monotonic,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.allow = tuple(allow)
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.default_ttl = default_ttl
        self.max_ttl = max_ttl
        self._clock = clock
        self._transport = transport
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._fetching: dict[str, asyncio.Task[PublishedKeys]] = {}

    def url_for(self, actor: DomainActor) -> str:
        """The https URL of the actor's key document; the http one when `allow` admits it."""
        https_url, http_url = well_known_urls(actor)
        return http_url if is_allowed(httpx.URL(http_url), self.allow) else https_url

    async def keys(self, actor_id: str) -> dict[str, jwt.PyJWK]:
        """The keys (by kid) published for the domain agent `actor_id`; a `ProofRefused` when they cannot be
        had (`invalid_actor_id`, `well_known_unreachable`, `well_known_too_large`, `well_known_invalid`)."""
        actor = parse_domain_actor(actor_id)
        return (await self._published(self.url_for(actor))).for_actor(actor)

    def forget(self, actor_id: str) -> None:
        """Drop what is kept for the actor's host: the next call fetches again."""
        for url in well_known_urls(parse_domain_actor(actor_id)):
            self._kept.pop(url, None)

    async def _published(self, url: str) -> PublishedKeys:
        kept = self._kept.get(url)
        if kept is not None:
            if kept.until > self._clock():
                return kept.keys
            del self._kept[url]
        task = self._fetching.get(url)
        if task is None or task.get_loop() is not asyncio.get_running_loop():  # (a loop that ended left it)
            task = asyncio.ensure_future(self._fetch_and_keep(url))
            self._fetching[url] = task
            task.add_done_callback(lambda done: self._fetched(url, done))
        # shielded: a caller that gives up does not cancel the fetch the others wait for
        return await asyncio.shield(task)

    def _fetched(self, url: str, task: asyncio.Task[PublishedKeys]) -> None:
        if self._fetching.get(url) is task:
            del self._fetching[url]
        if not task.cancelled():
            task.exception()  # retrieved, so that a failure nobody awaited any more is not reported as lost

    async def _fetch_and_keep(self, url: str) -> PublishedKeys:
        keys, seconds = await self._fetch(httpx.URL(url))
        if seconds > 0:
            self._kept.pop(url, None)
            self._kept[url] = _Kept(keys, self._clock() + seconds)
            while len(self._kept) > MAX_ENTRIES:
                self._kept.popitem(last=False)
        return keys

    async def _fetch(self, url: httpx.URL) -> tuple[PublishedKeys, float]:
        admitted = is_allowed(url, self.allow)
        if url.scheme != "https" and not admitted:
            raise _unreachable(f"{url} is plain http, which this service fetches only from allowed URLs.")
        try:
            async with asyncio.timeout(self.timeout):
                found = await addresses(url)
                if not found:
                    raise _unreachable(f"{url.host} does not resolve.")
                refused = next((kind for kind in map(address_class, found) if kind is not None), None)
                if refused is not None and not admitted:
                    raise _unreachable(f"{url.host} resolves to {refused}, which this service does not fetch from.")
                async with httpx.AsyncClient(
                    transport=self._transport,
                    verify=tls_context(),
                    follow_redirects=False,
                    trust_env=False,  # no proxies or .netrc credentials from this process's environment
                    timeout=self.timeout,
                    headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                ) as client:
                    return await self._get(client, url, found)
        except TimeoutError as error:
            raise _unreachable(f"{url} did not answer within {self.timeout:g} s.") from error
        except httpx.HTTPError as error:
            raise _unreachable(f"Fetching {url} failed ({type(error).__name__}).") from error

    async def _get(self, client: httpx.AsyncClient, url: httpx.URL, found: list[str]) -> tuple[PublishedKeys, float]:
        """GET from the first checked address that accepts a connection."""
        failed: httpx.ConnectError | None = None
        for address in found:
            target = pinned(url, address)
            try:
                async with client.stream("GET", target.url, headers=target.headers, extensions=target.extensions) as r:
                    return await self._read(r, url)
            except httpx.ConnectError as error:
                failed = error
        raise _unreachable(f"No address of {url.host} accepted a connection.") from failed

    async def _read(self, response: httpx.Response, url: httpx.URL) -> tuple[PublishedKeys, float]:
        status = response.status_code
        if 300 <= status < 400:
            raise _unreachable(f"{url} answered HTTP {status}, a redirect; redirects are not followed.")
        if status != 200:
            raise _unreachable(f"{url} answered HTTP {status}.")
        too_large = ProofRefused("well_known_too_large", f"The key document at {url} is over {self.max_bytes} bytes.")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise too_large
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                raise too_large  # and read no further
        try:
            document = _strict_json(bytes(body))
        except (ValueError, RecursionError) as error:
            raise ProofRefused("well_known_invalid", f"The key document at {url} is not valid JSON.") from error
        seconds = cache_seconds(response.headers, default_ttl=self.default_ttl, max_ttl=self.max_ttl, now=time.time())
        return read_document(document), seconds
