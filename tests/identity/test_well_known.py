"""Fetching `/.well-known/aitp.json` (aitp.services.well_known): from a real loopback server, with a fake clock.

Specification: https to public addresses only, unless the allow-list admits the URL (then plain http too); the
checked address is the one connected to; no redirects; a body over the limit is refused without reading on; the
whole exchange is bounded by the timeout; documents are kept by their caching headers, failures never, and
concurrent calls for one host share one fetch.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import threading
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from aitp.identity import ProofRefused, document_for, generate_keypair
from aitp.services import well_known
from aitp.services.well_known import WellKnownCache, address_class, cache_seconds

FIRST = generate_keypair(kid="first")
SECOND = generate_keypair("p256", kid="second")
SALES = generate_keypair(kid="sales")
PATH = "/.well-known/aitp.json"


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunked: bool = False  # sent in chunks without a Content-Length
    delay: float = 0.0


def document(*pairs: Any, headers: dict[str, str] | None = None, **agents: Any) -> Answer:
    body = json.dumps(document_for([p.public_jwk for p in pairs], {f"/{k}": [v.public_jwk] for k, v in agents.items()}))
    return Answer(200, {"content-type": "application/json", **(headers or {})}, body.encode())


class Site:
    """A loopback HTTP/1.1 server answering every GET with `answer`, remembering what it was asked."""

    def __init__(self) -> None:
        self.answer = Answer(404)
        self.gets: list[tuple[str, dict[str, str]]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                site.gets.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                answer = site.answer
                time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                try:
                    if answer.chunked:
                        self.send_header("transfer-encoding", "chunked")
                        self.end_headers()
                        for start in range(0, len(answer.body), 1024):
                            chunk = answer.body[start : start + 1024]
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("content-length", str(len(answer.body)))
                        self.end_headers()
                        self.wfile.write(answer.body)
                except OSError:
                    pass  # the client stopped reading: what a refused body should do

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.actor = f"localhost:{self.port}"
        self.allow = (f"http://localhost:{self.port}/",)


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()
    thread = threading.Thread(target=served.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def cache_for(site: Site, clock: Clock, **options: Any) -> WellKnownCache:
    return WellKnownCache(site.allow, clock=clock, **options)


async def refused(call: Awaitable[Any], code: str) -> str:
    with pytest.raises(ProofRefused) as error:
        await call
    assert error.value.code == code, error.value.message
    return error.value.message


async def test_a_document_is_fetched_then_kept(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST, SECOND)
    cache = cache_for(site, clock)
    keys = await cache.keys(site.actor)
    assert set(keys) == {"first", "second"} and keys["second"].algorithm_name == "ES256"
    assert set(await cache.keys(site.actor)) == {"first", "second"}
    assert len(site.gets) == 1
    path, headers = site.gets[0]
    assert path == PATH
    assert headers["host"] == site.actor  # the name kept though the address was connected to
    assert "cookie" not in headers


async def test_a_removed_key_is_kept_until_max_age_passes(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST, SECOND, headers={"cache-control": "public, max-age=60"})
    cache = cache_for(site, clock)
    assert set(await cache.keys(site.actor)) == {"first", "second"}
    site.answer = document(FIRST, headers={"cache-control": "max-age=60"})
    clock.now += 59
    assert set(await cache.keys(site.actor)) == {"first", "second"}
    clock.now += 2
    assert set(await cache.keys(site.actor)) == {"first"}
    assert len(site.gets) == 2


async def test_max_age_is_capped(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST, headers={"cache-control": "max-age=31536000"})
    cache = cache_for(site, clock, max_ttl=100)
    await cache.keys(site.actor)
    clock.now += 99
    await cache.keys(site.actor)
    assert len(site.gets) == 1
    clock.now += 2
    await cache.keys(site.actor)
    assert len(site.gets) == 2


async def test_without_caching_headers_the_default_ttl_applies(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    cache = cache_for(site, clock, default_ttl=30)
    await cache.keys(site.actor)
    clock.now += 29
    await cache.keys(site.actor)
    clock.now += 2
    await cache.keys(site.actor)
    assert len(site.gets) == 2


@pytest.mark.parametrize("cache_control", ["no-store", "no-cache", "max-age=0", "private, no-store, max-age=600"])
async def test_a_document_that_may_not_be_kept_is_fetched_each_time(
    site: Site, clock: Clock, cache_control: str
) -> None:
    site.answer = document(FIRST, headers={"cache-control": cache_control})
    cache = cache_for(site, clock)
    await cache.keys(site.actor)
    await cache.keys(site.actor)
    assert len(site.gets) == 2


def test_caching_headers_are_read_as_rfc_9111_says() -> None:
    def seconds(**headers: str) -> float:
        named = httpx.Headers({k.replace("_", "-"): v for k, v in headers.items()})
        return cache_seconds(named, default_ttl=300, max_ttl=86_400, now=1_700_000_000)

    date = email.utils.formatdate(1_700_000_000, usegmt=True)
    assert seconds() == 300
    assert seconds(cache_control="max-age=120") == 120
    assert seconds(cache_control="max-age=120, s-maxage=30") == 30
    assert seconds(cache_control='max-age="45"') == 45
    assert seconds(cache_control="max-age=soon") == 0
    assert seconds(cache_control="max-age=999999") == 86_400
    assert seconds(cache_control="No-Store") == 0
    assert seconds(expires=email.utils.formatdate(1_700_000_090, usegmt=True), date=date) == 90
    assert seconds(expires=email.utils.formatdate(1_700_000_090, usegmt=True)) == 90  # no Date: now
    assert seconds(expires=email.utils.formatdate(1_699_999_000, usegmt=True), date=date) == 0
    assert seconds(expires="0", date=date) == 0
    assert seconds(cache_control="max-age=10", expires=email.utils.formatdate(1_700_009_000, usegmt=True)) == 10


async def test_documents_are_kept_per_host_and_shared_by_its_agents(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST, sales=SALES)
    cache = cache_for(site, clock)
    assert set(await cache.keys(site.actor)) == {"first"}
    assert set(await cache.keys(site.actor + "/sales")) == {"first", "sales"}
    assert set(await cache.keys(site.actor + "/sales/eu")) == {"first"}
    assert len(site.gets) == 1


async def test_forget_fetches_again(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    cache = cache_for(site, clock)
    await cache.keys(site.actor)
    cache.forget(site.actor + "/any/agent")
    await cache.keys(site.actor)
    assert len(site.gets) == 2


async def test_concurrent_calls_share_one_fetch(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    site.answer.delay = 0.2
    cache = cache_for(site, clock)
    found = await asyncio.gather(*(cache.keys(site.actor) for _ in range(10)))
    assert all(set(keys) == {"first"} for keys in found)
    assert len(site.gets) == 1


async def test_a_caller_giving_up_does_not_cancel_the_others_fetch(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    site.answer.delay = 0.2
    cache = cache_for(site, clock)
    impatient = asyncio.ensure_future(cache.keys(site.actor))
    patient = asyncio.ensure_future(cache.keys(site.actor))
    await asyncio.sleep(0.05)
    impatient.cancel()
    assert set(await patient) == {"first"}
    assert len(site.gets) == 1


async def test_failures_are_not_kept(site: Site, clock: Clock) -> None:
    site.answer = Answer(503)
    cache = cache_for(site, clock)
    assert "503" in await refused(cache.keys(site.actor), "well_known_unreachable")
    site.answer = document(FIRST)
    assert set(await cache.keys(site.actor)) == {"first"}


async def test_an_invalid_document_is_not_kept(site: Site, clock: Clock) -> None:
    site.answer = Answer(200, body=json.dumps({"keys": [FIRST.private_jwk]}).encode())
    cache = cache_for(site, clock)
    assert "private" in await refused(cache.keys(site.actor), "well_known_invalid")
    site.answer = document(FIRST)
    assert set(await cache.keys(site.actor)) == {"first"}


async def test_a_document_without_a_key_for_the_agent_is_invalid(site: Site, clock: Clock) -> None:
    site.answer = document(sales=SALES)
    cache = cache_for(site, clock)
    await refused(cache.keys(site.actor), "well_known_invalid")
    assert set(await cache.keys(site.actor + "/sales")) == {"sales"}
    assert len(site.gets) == 1  # the document was fine: kept


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"keys": [], "keys": []}', b'{"keys": NaN}', b"\xff\xfe{}", b"[" * 100_000]
)
async def test_a_body_that_is_not_strict_json_is_invalid(site: Site, clock: Clock, body: bytes) -> None:
    site.answer = Answer(200, {"content-type": "application/json"}, body)
    cache = cache_for(site, clock, max_bytes=200_000)
    assert "JSON" in await refused(cache.keys(site.actor), "well_known_invalid")


async def test_any_content_type_is_read(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST, headers={"content-type": "text/plain"})
    assert set(await cache_for(site, clock).keys(site.actor)) == {"first"}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_over_the_limit_is_too_large(site: Site, clock: Clock, chunked: bool) -> None:
    padding = [{"kty": "RSA", "kid": f"pad{i}", "n": "x" * 1000} for i in range(30)]
    site.answer = Answer(200, body=json.dumps({"keys": [FIRST.public_jwk, *padding]}).encode(), chunked=chunked)
    cache = cache_for(site, clock, max_bytes=4096)
    await refused(cache.keys(site.actor), "well_known_too_large")
    cache = cache_for(site, clock, max_bytes=64 * 1024)
    assert set(await cache.keys(site.actor)) == {"first"}  # the same document, within the limit


async def test_a_missing_document_is_unreachable(site: Site, clock: Clock) -> None:
    site.answer = Answer(404)
    assert "404" in await refused(cache_for(site, clock).keys(site.actor), "well_known_unreachable")


async def test_a_redirect_is_not_followed(site: Site, clock: Clock) -> None:
    site.answer = Answer(302, {"location": f"http://localhost:{site.port}/elsewhere.json"})
    message = await refused(cache_for(site, clock).keys(site.actor), "well_known_unreachable")
    assert "redirect" in message
    assert [path for path, _ in site.gets] == [PATH]


async def test_a_loopback_host_is_refused_unless_allowed(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    cache = WellKnownCache(clock=clock)
    message = await refused(cache.keys(site.actor), "well_known_unreachable")
    assert "loopback address" in message
    assert site.gets == []


async def test_plain_http_is_used_only_where_allowed(site: Site, clock: Clock) -> None:
    site.answer = document(FIRST)
    # the host's addresses are admitted, but only over https: the plain-http server cannot answer it
    cache = WellKnownCache((f"https://localhost:{site.port}/",), clock=clock)
    assert cache.url_for(well_known.parse_domain_actor(site.actor)).startswith("https://")
    await refused(cache.keys(site.actor), "well_known_unreachable")
    # plain http admitted for another port, or for another path only, is not admitted here
    for allow in (f"http://localhost:{site.port + 1}/", f"http://localhost:{site.port}/.well-known/other/"):
        cache = WellKnownCache((allow,), clock=clock)
        assert "loopback" in await refused(cache.keys(site.actor), "well_known_unreachable")
    assert site.gets == []


async def test_a_server_that_never_answers_is_unreachable_within_the_timeout(clock: Clock) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete in the backlog; nothing ever reads them
        port = silent.getsockname()[1]
        cache = WellKnownCache((f"http://localhost:{port}/",), timeout=0.5, clock=clock)
        started = time.monotonic()
        assert "0.5 s" in await refused(cache.keys(f"localhost:{port}"), "well_known_unreachable")
        assert time.monotonic() - started < 2


async def test_a_host_that_refuses_connections_is_unreachable(clock: Clock) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    cache = WellKnownCache((f"http://localhost:{port}/",), clock=clock)
    await refused(cache.keys(f"localhost:{port}"), "well_known_unreachable")


async def test_a_server_that_hangs_up_is_unreachable(clock: Clock) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        cache = WellKnownCache((f"http://localhost:{port}/",), clock=clock)
        await refused(cache.keys(f"localhost:{port}"), "well_known_unreachable")


async def test_a_host_that_does_not_resolve_is_unreachable(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    async def resolved(url: httpx.URL) -> list[str]:
        return []

    monkeypatch.setattr(well_known, "addresses", resolved)
    cache = WellKnownCache(clock=clock)
    assert "does not resolve" in await refused(cache.keys("nowhere.example"), "well_known_unreachable")


async def test_an_invalid_actor_id_is_refused_before_any_fetch(clock: Clock) -> None:
    cache = WellKnownCache(clock=clock)
    for actor in ("alice.near", "Example.com", "alice"):
        await refused(cache.keys(actor), "invalid_actor_id")


async def test_the_oldest_document_is_dropped_past_the_bound(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(well_known, "MAX_ENTRIES", 1)
    other = Site()
    thread = threading.Thread(target=other.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        site.answer = other.answer = document(FIRST)
        cache = WellKnownCache(site.allow + other.allow, clock=clock)
        await cache.keys(site.actor)
        await cache.keys(other.actor)
        await cache.keys(site.actor)
        assert (len(site.gets), len(other.gets)) == (2, 1)
    finally:
        other.server.shutdown()
        other.server.server_close()


# --- the address policy for public hosts, with resolution and transport stood in for


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("192.168.0.1", "a private address"),
        ("169.254.169.254", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("100.64.0.1", "a shared or otherwise non-public address"),
        ("224.0.0.1", "a multicast address"),
        ("93.184.215.14", None),
        ("2606:4700::1111", None),
    ],
)
def test_address_classes(address: str, kind: str | None) -> None:
    assert address_class(address) == kind


async def test_a_public_host_resolving_to_a_private_address_is_refused(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def resolved(url: httpx.URL) -> list[str]:
        return ["93.184.215.14", "10.0.0.7"]  # one private address is enough to refuse

    monkeypatch.setattr(well_known, "addresses", resolved)
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    cache = WellKnownCache(clock=clock, transport=httpx.MockTransport(record))
    message = await refused(cache.keys("example.com"), "well_known_unreachable")
    assert "a private address" in message and "10.0.0.7" not in message
    assert sent == []


async def test_the_checked_address_is_the_one_connected_to(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    async def resolved(url: httpx.URL) -> list[str]:
        assert url.host == "shop.example.com"
        return ["93.184.215.14"]

    monkeypatch.setattr(well_known, "addresses", resolved)
    sent: list[httpx.Request] = []

    def serve(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, content=json.dumps(document_for([FIRST.public_jwk])).encode())

    cache = WellKnownCache(clock=clock, transport=httpx.MockTransport(serve))
    assert set(await cache.keys("shop.example.com/sales")) == {"first"}
    (request,) = sent
    assert str(request.url) == "https://93.184.215.14/.well-known/aitp.json"
    assert request.headers["host"] == "shop.example.com"
    assert request.extensions["sni_hostname"] == "shop.example.com"
