"""Limits below the app, on a real `aitp serve` process over raw sockets: the request head and connections.

- A head (request line and header fields) over `AITP_MAX_HEADER_BYTES`, or with more than
  `AITP_MAX_HEADERS` fields, is answered 431 `request_header_fields_too_large` while it is still arriving,
  and the server's memory does not grow with it (it used to keep the whole header: 2 GB sent, 2.1 GB held).
- A head that does not arrive whole within `AITP_HEADER_TIMEOUT` seconds is answered 408 `request_timeout`
  and the connection closed; a connection that sends nothing is closed (they used to stay open forever,
  until every file descriptor was taken).
- Beyond `AITP_MAX_CONNECTIONS` open connections a new one is answered 503 `connection_limit_reached` with
  `Retry-After`, at once; once connections close, new ones are served again.

Every wait here is generous next to the configured limits (a 1 s timeout, 10 s allowed): no timing threshold.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aitp.bindings.http.errors import envelope
from aitp.config import Settings
from aitp.server.serving import uvicorn_options
from aitp.testing import ServerProcess, start_server

WAIT = 10  # seconds allowed for anything the server should do at once, or after a 1 s timeout


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(**env: str) -> ServerProcess:
        log = tmp_path / f"serve-{len(started)}.log"
        started.append(start_server(f"sqlite:///{tmp_path / 'aitp.db'}", log, {"AITP_ADMIN_KEY": "k", **env}))
        return started[-1]

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    """One response: status, headers, JSON body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of the answer"
        body += chunk
    return int(status_line.split()[1]), headers, json.loads(body) if body else None


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closes the connection within WAIT seconds (reading what it still sends)."""
    sock.settimeout(WAIT)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def rss_mib(server: ServerProcess) -> float:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def send_until_answered(sock: socket.socket, head: bytes, chunk: bytes, chunks: int) -> int:
    """Send `head`, then `chunk` up to `chunks` times, stopping as soon as an answer arrives; bytes sent."""
    sock.sendall(head)
    sent = len(head)
    for _ in range(chunks):
        if select.select([sock], [], [], 0)[0]:
            break
        try:
            sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(chunk)
    return sent


def assert_envelope(answer: Any, status: int, code: str) -> None:
    error = answer["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"], error
    assert (error["code"], error["param"]) == (code, None), (status, error)


def test_the_settings_reach_the_server_protocol() -> None:
    from aitp.server.http_protocol import LimitedHttpProtocol

    settings = Settings.from_env(
        {"AITP_MAX_HEADER_BYTES": "4096", "AITP_MAX_HEADERS": "20", "AITP_HEADER_TIMEOUT": "2.5"}
    )
    protocol = uvicorn_options(settings, envelope)["http"]
    assert issubclass(protocol, LimitedHttpProtocol)
    assert (protocol.max_head_bytes, protocol.max_headers, protocol.head_timeout) == (4096, 20, 2.5)
    assert 0 < protocol.max_connections <= Settings().max_connections
    assert (Settings().max_header_bytes, Settings().max_headers, Settings().header_timeout) == (64 << 10, 100, 10.0)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
def test_a_huge_header_is_refused_431_as_it_arrives_and_memory_stays_flat(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    before = rss_mib(server)
    with connect(server) as sock:
        head = b"GET /health HTTP/1.1\r\nHost: aitp.test\r\nX-Huge: "
        # 96 MiB offered in 64 KiB pieces; the server answers after the first 64 KiB or so
        sent = send_until_answered(sock, head, b"a" * (64 << 10), chunks=1536)
        status, headers, answer = read_answer(sock)
        grown = rss_mib(server) - before
    assert status == 431, answer
    assert_envelope(answer, 431, "request_header_fields_too_large")
    assert headers["connection"] == "close"
    assert sent < 32 << 20, "the answer came only after most of the header was sent"
    assert grown < 32, f"the server grew by {grown:.0f} MiB while refusing a header"


def test_a_head_of_too_many_fields_is_refused_431(serve: Callable[..., ServerProcess]) -> None:
    server = serve(AITP_MAX_HEADERS="20")
    with connect(server) as sock:
        fields = b"".join(b"X-Field-%d: v\r\n" % i for i in range(19))  # and Host: 20
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n" + fields + b"\r\n")
        status, _, answer = read_answer(sock)
        assert (status, answer["status"]) == (200, "ok")  # 20 fields, Host included: the limit, accepted
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n" + fields + b"X-One-More: v\r\n\r\n")
        status, _, answer = read_answer(sock)
    assert status == 431, answer
    assert_envelope(answer, 431, "request_header_fields_too_large")


def test_a_head_within_the_limits_is_served(serve: Callable[..., ServerProcess]) -> None:
    server = serve(AITP_MAX_HEADER_BYTES="8192")
    with connect(server) as sock:
        # the head in many small pieces, 7 KiB in all: counted as it comes, and within the limit
        head = b"GET /health HTTP/1.1\r\nHost: aitp.test\r\nX-Big: " + b"b" * 7000 + b"\r\n\r\n"
        for start in range(0, len(head), 512):
            sock.sendall(head[start : start + 512])
        status, _, answer = read_answer(sock)
        assert (status, answer["status"]) == (200, "ok")
        # over the limit, even when it arrives in one read on a kept-alive connection
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n")
        status, _, answer = read_answer(sock)
    assert status == 431, answer


def test_a_half_sent_head_is_answered_408_and_closed(serve: Callable[..., ServerProcess]) -> None:
    server = serve(AITP_HEADER_TIMEOUT="1")
    with connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n")  # and never the blank line
        status, headers, answer = read_answer(sock)
        assert status == 408, answer
        assert_envelope(answer, 408, "request_timeout")
        assert headers["connection"] == "close"
        assert closed_by_server(sock)
    with connect(server) as sock:  # a second request whose head stalls, on a kept-alive connection
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n\r\n")
        assert read_answer(sock)[0] == 200
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        assert read_answer(sock)[0] == 408
        assert closed_by_server(sock)


def test_a_connection_that_sends_nothing_is_closed(serve: Callable[..., ServerProcess]) -> None:
    server = serve(AITP_HEADER_TIMEOUT="1")
    with connect(server) as sock:
        assert closed_by_server(sock)


def test_connections_over_the_limit_are_refused_503_at_once(serve: Callable[..., ServerProcess]) -> None:
    server = serve(AITP_MAX_CONNECTIONS="4", AITP_HEADER_TIMEOUT="60")
    held = [connect(server) for _ in range(4)]
    try:
        for sock in held[:2]:  # two served and kept alive, two that have not asked anything yet
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n\r\n")
            assert read_answer(sock)[0] == 200
        with connect(server) as extra:
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n\r\n")
            status, headers, answer = read_answer(extra)
            assert status == 503, answer
            assert_envelope(answer, 503, "connection_limit_reached")
            assert headers["retry-after"] == "1" and headers["connection"] == "close"
            assert closed_by_server(extra)
    finally:
        for sock in held:
            sock.close()
    # the held connections are gone: new ones are served again (once the server has seen them close)
    deadline = time.monotonic() + WAIT
    while True:
        with connect(server) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: aitp.test\r\n\r\n")
            status = read_answer(sock)[0]
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200
    assert "Refusing connections" in server.output()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
def test_a_huge_trailer_of_a_chunked_body_is_refused_431_and_memory_stays_flat(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    before = rss_mib(server)
    with connect(server) as sock:
        head = (
            b"POST /v1/threads HTTP/1.1\r\nHost: aitp.test\r\nAuthorization: Bearer k\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: "
        )
        sent = send_until_answered(sock, head, b"t" * (64 << 10), chunks=1536)
        status, _, answer = read_answer(sock)
        grown = rss_mib(server) - before
    assert status == 431, answer
    assert_envelope(answer, 431, "request_header_fields_too_large")
    assert sent < 32 << 20 and grown < 32, (sent, grown)
    assert "unhandled error" not in server.output()  # the route waiting for the body's end is told it is gone


def test_a_body_in_many_small_chunks_is_read(serve: Callable[..., ServerProcess]) -> None:
    """Chunk framing is not counted as trailers: a body of one-byte chunks is served."""
    server = serve(AITP_MAX_HEADER_BYTES="1024")
    body = json.dumps({"metadata": {"k": "v" * 500}}).encode()
    chunks = b"".join(b"1\r\n" + body[i : i + 1] + b"\r\n" for i in range(len(body))) + b"0\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(
            b"POST /v1/threads HTTP/1.1\r\nHost: aitp.test\r\nAuthorization: Bearer k\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for start in range(0, len(chunks), 256):
            sock.sendall(chunks[start : start + 256])
        status, _, answer = read_answer(sock)
    assert status == 200, answer
    assert answer["metadata"]["k"] == "v" * 500
