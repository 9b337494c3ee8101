"""`aitp serve --workers N`: N processes serving one port, each an instance of the service on the store.

Specification: both workers answer (each says which it is: /health `pid`); each applies the same connection
options (the HTTP protocol class with its limits); a subscriber connected to one worker gets, in order and
without a gap, what is posted through the other, on every backend; SIGTERM to `aitp serve` stops every
worker; what start-up prints (the admin key, the sign-in link) is printed once, by the parent.

A request reaches a given worker by reusing a keep-alive connection that /health showed that worker
answering on (`Pinned`): the kernel hands each new connection to whichever worker accepts it first.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import pickle
import re
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from aitp.bindings.http.errors import envelope
from aitp.config import Settings
from aitp.server.serving import WorkerConfig, uvicorn_options
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, Backend
from tests.support.live import sse_frames

WORKERS = 2
TRIES = 200  # new connections made to reach a given worker (each goes to either: far fewer are needed)
POSTS = 20
STUCK = 60  # seconds after which a stream that has not delivered everything is taken as stuck


@pytest.fixture
def serve_workers(serve_store: Callable[..., ServerProcess]) -> Callable[..., ServerProcess]:
    """Start `aitp serve --workers 2` on a store URL (no rate limit), env vars as keywords."""

    def start(store_url: str, **env: str) -> ServerProcess:
        return serve_store(store_url, WORKERS, **{"AITP_RATE_LIMIT": "0", **env})

    return start


def parent_of(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def health_pid(base_url: str) -> int:
    """The pid of the worker that answered /health on a new connection."""
    return int(httpx.get(base_url + "/health", headers={"Connection": "close"}).json()["pid"])


def worker_pids(server: ServerProcess) -> set[int]:
    """Every worker's pid, as /health reports it, asking on new connections until each has answered."""
    pids: set[int] = set()
    for _ in range(TRIES):
        pids.add(health_pid(server.base_url))
        if len(pids) == WORKERS:
            return pids
    raise AssertionError(f"only workers {pids} answered in {TRIES} connections")


class Pinned:
    """An HTTP client on one keep-alive connection, which one worker serves (`pid`)."""

    def __init__(self, client: httpx.AsyncClient, pid: int, address: Any) -> None:
        self.client = client
        self.pid = pid
        self.address = address  # the connection's local address: every response on it must show it

    def on_its_connection(self, response: httpx.Response) -> bool:
        return response.extensions["network_stream"].get_extra_info("client_addr") == self.address


@asynccontextmanager
async def pinned(base_url: str, key: str, worker: Callable[[int], bool]) -> AsyncIterator[Pinned]:
    """A client whose one connection is served by a worker for which `worker(pid)` holds."""
    for _ in range(TRIES):
        client = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {key}"},
            limits=httpx.Limits(max_connections=1),
            timeout=30,
        )
        response = await client.get("/health")
        pid = int(response.json()["pid"])
        if worker(pid):
            try:
                yield Pinned(client, pid, response.extensions["network_stream"].get_extra_info("client_addr"))
            finally:
                await client.aclose()
            return
        await client.aclose()
    raise AssertionError(f"no connection reached the wanted worker in {TRIES} tries")


def create_key(server: ServerProcess, actor: str) -> str:
    response = httpx.post(
        server.base_url + "/v1/keys", json={"actor": actor}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["key"])


def text_of(event: dict[str, Any]) -> str:
    return str(event["data"]["content"][0]["text"]["value"])


# --------------------------------------------------------------------------- serving


def test_two_workers_answer_on_one_port_as_children_of_aitp_serve(
    serve_workers: Callable[..., ServerProcess], backend: Backend
) -> None:
    server = serve_workers(backend.url, AITP_ADMIN_KEY=ADMIN_KEY)
    pids = worker_pids(server)
    assert server.process.pid not in pids
    assert {parent_of(pid) for pid in pids} == {server.process.pid}


def on_every_worker(server: ServerProcess, then: Callable[[http.client.HTTPConnection], None]) -> None:
    """`then(connection)` once per worker, on a keep-alive connection /health showed that worker serving."""
    done: set[int] = set()
    for _ in range(TRIES):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            connection.request("GET", "/health")
            pid = int(json.loads(connection.getresponse().read())["pid"])
            if pid not in done:
                then(connection)
                done.add(pid)
        finally:
            connection.close()
        if len(done) == WORKERS:
            return
    raise AssertionError(f"only workers {done} were reached in {TRIES} connections")


def test_every_worker_applies_the_limits_on_the_request_head(
    serve_workers: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """The HTTP protocol class (made per settings, so each worker builds its own) refuses a head of more
    fields than AITP_MAX_HEADERS with 431 in every worker."""
    server = serve_workers(f"sqlite:///{tmp_path / 'aitp.db'}", AITP_ADMIN_KEY=ADMIN_KEY, AITP_MAX_HEADERS="10")

    def too_many_fields(connection: http.client.HTTPConnection) -> None:
        connection.request("GET", "/health", headers={f"X-Field-{i}": "v" for i in range(20)})
        response = connection.getresponse()
        assert response.status == 431 and b"request_header_fields_too_large" in response.read()

    on_every_worker(server, too_many_fields)


def test_every_worker_redacts_keys_from_its_log_lines(
    serve_workers: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """Each worker configures its logging itself (uvicorn's, with the redacting filter, and the root's)."""
    server = serve_workers(f"sqlite:///{tmp_path / 'aitp.db'}", AITP_ADMIN_KEY=ADMIN_KEY)
    secret = "aitp_" + "S3cret" * 8

    def with_token(connection: http.client.HTTPConnection) -> None:
        connection.request("GET", f"/v1/actors/me/events?token={secret}")
        assert connection.getresponse().status == 401

    on_every_worker(server, with_token)
    server.stop()
    output = server.output()
    assert output.count("/v1/actors/me/events?token=[redacted]") == WORKERS and secret not in output


def test_a_worker_config_keeps_every_uvicorn_option_through_pickling(tmp_path: Path) -> None:
    """uvicorn's supervisor pickles its config into each worker: what the worker loads is `aitp serve`'s
    options for the same settings, the HTTP protocol class with the settings' limits included."""
    settings = Settings(
        store_url=f"sqlite:///{tmp_path / 'aitp.db'}", port=8123, max_headers=7, max_connections=99, keepalive_seconds=3
    )
    config = pickle.loads(pickle.dumps(WorkerConfig(settings, WORKERS, envelope)))
    config.load()
    expected = uvicorn_options(settings, envelope)
    protocol = config.http_protocol_class
    assert (protocol.max_headers, protocol.max_connections) == (7, 99)  # type: ignore[attr-defined]
    assert protocol.max_head_bytes == expected["http"].max_head_bytes  # type: ignore[attr-defined]
    for option, value in expected.items():
        if option != "http":
            assert getattr(config, option) == value, option
    assert config.workers == WORKERS


# --------------------------------------------------------------------------- fan-out across workers


async def test_a_subscriber_on_one_worker_gets_every_post_made_through_the_other_in_order(
    serve_workers: Callable[..., ServerProcess], backend: Backend
) -> None:
    """Thread events and bob's inbox, streamed (SSE) from worker A, while alice posts through worker B."""
    server = serve_workers(backend.url, AITP_ADMIN_KEY=ADMIN_KEY, AITP_CONTACT_POLICY="anyone")  # alice adds bob
    alice, bob = create_key(server, "alice"), create_key(server, "bob")
    async with pinned(server.base_url, alice, lambda _: True) as poster:
        created = await poster.client.post("/v1/threads", json={"actors": [{"id": "alice"}, {"id": "bob"}]})
        assert created.status_code == 200, created.text
        tid = created.json()["id"]
        other = lambda pid: pid != poster.pid  # noqa: E731
        async with (
            pinned(server.base_url, bob, other) as thread_reader,
            pinned(server.base_url, bob, other) as inbox_reader,
        ):
            thread_stream = sse_frames(thread_reader.client, f"/v1/threads/{tid}/events", params={"after": 1})
            inbox_stream = sse_frames(inbox_reader.client, "/v1/actors/me/events")
            inbox_first = await anext(inbox_stream)  # the stream is open (thread.created is in bob's inbox)
            assert inbox_first["event"] == "thread.created"
            for n in range(POSTS):
                posted = await poster.client.post(f"/v1/threads/{tid}/messages", json={"content": f"m{n}"})
                assert posted.status_code == 200 and poster.on_its_connection(posted), posted.text
            async with asyncio.timeout(STUCK):  # a missing event fails the test instead of hanging it
                thread_events = [f async for f in take(thread_stream, POSTS)]
                inbox_events = [f async for f in take(inbox_stream, POSTS)]
            await thread_stream.aclose()
            await inbox_stream.aclose()
    assert [int(f["id"]) for f in thread_events] == list(range(2, 2 + POSTS))  # every seq after 1, no gap
    assert [text_of(f["data"]) for f in thread_events] == [f"m{n}" for n in range(POSTS)]
    assert [text_of(f["data"]) for f in inbox_events] == [f"m{n}" for n in range(POSTS)]
    cursors = [int(f["id"]) for f in [inbox_first, *inbox_events]]
    assert cursors == sorted(set(cursors))


async def take(stream: AsyncIterator[dict[str, Any]], count: int) -> AsyncIterator[dict[str, Any]]:
    """The next `count` event frames of an SSE stream (keep-alive comments skipped)."""
    taken = 0
    while taken < count:
        frame = await anext(stream)
        if "comment" not in frame:
            taken += 1
            yield frame


# --------------------------------------------------------------------------- start and stop


def test_sigterm_stops_every_worker_even_with_streams_open(
    serve_workers: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = serve_workers(f"sqlite:///{tmp_path / 'aitp.db'}", AITP_ADMIN_KEY=ADMIN_KEY)
    pids = worker_pids(server)
    key = create_key(server, "alice")
    streams = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=30) for _ in range(4)]
    for stream in streams:  # spread over the workers by the kernel
        stream.request("GET", "/v1/actors/me/events", headers={"Authorization": f"Bearer {key}"})
        assert stream.getresponse().status == 200
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    assert not any(alive(pid) for pid in pids)
    for stream in streams:
        stream.close()


def test_a_worker_that_dies_is_replaced(serve_workers: Callable[..., ServerProcess], tmp_path: Path) -> None:
    """uvicorn's supervisor starts a new worker in its place; the other serves meanwhile."""
    server = serve_workers(f"sqlite:///{tmp_path / 'aitp.db'}", AITP_ADMIN_KEY=ADMIN_KEY)
    killed, kept = sorted(worker_pids(server))
    os.kill(killed, signal.SIGKILL)
    answered = {health_pid(server.base_url)}  # the port is served meanwhile, by the other worker
    deadline = time.monotonic() + STUCK
    while answered <= {kept} and time.monotonic() < deadline:
        time.sleep(0.05)
        answered.add(health_pid(server.base_url))
    (replacement,) = answered - {kept}
    assert replacement != killed and parent_of(replacement) == server.process.pid


def test_the_admin_key_and_sign_in_link_are_printed_once(
    serve_workers: Callable[..., ServerProcess], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent creates the admin key and prints it with a sign-in link once; every worker accepts it."""
    monkeypatch.delenv("AITP_ADMIN_KEY", raising=False)
    server = serve_workers(f"sqlite:///{tmp_path / 'aitp.db'}")
    pids = worker_pids(server)
    output = server.output()
    (admin_key,) = set(re.findall(r"aitp_[A-Za-z0-9_-]{40,}", output))
    assert output.count("created the admin key") == 1
    assert output.count("sign in as admin once") == 1
    accepted_by: set[int] = set()
    for _ in range(TRIES):
        with httpx.Client(base_url=server.base_url, limits=httpx.Limits(max_connections=1)) as client:
            pid = int(client.get("/health").json()["pid"])  # then the same connection, the same worker
            threads = client.get("/v1/threads", headers={"Authorization": f"Bearer {admin_key}"})
            assert threads.status_code == 200, threads.text
        accepted_by.add(pid)
        if accepted_by == pids:
            break
    assert accepted_by == pids
    server.stop()
    assert server.output().count("sign in as admin once") == 1
