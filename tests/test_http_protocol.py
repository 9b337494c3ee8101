"""How `aitp serve`'s HTTP protocol (`aitp.server.http_protocol`) writes a response to the connection.

Specification: a response framed by its Content-Length is written whole, head first; a streamed (chunked)
response's head goes out at once, before any part of its body exists (an SSE client sees the answer start);
a HEAD answer's head goes out although no body follows; an app that fails after starting its answer leaves
the head written and the connection closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from aitp.bindings.http.errors import envelope
from aitp.config import Settings
from aitp.server.http_protocol import http_protocol


class Transport:
    """The connection as the server sees it, keeping every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name)

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


later = asyncio.Event()  # a streamed body's second part waits for it


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await later.wait()
        await send({"type": "http.response.body", "body": b"part", "more_body": False})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"7")]})
    if path == "/fails":
        raise RuntimeError("failed after its head")
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else b'{"a":1}'})


async def ask(request: bytes, until: int = 1) -> Transport:
    """`request` on a new connection; the transport once it holds `until` writes (or a close)."""
    protocol_class = http_protocol(Settings(), envelope)
    config = Config(app=app, http=protocol_class, log_config=None, access_log=False)
    config.load()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})  # type: ignore[arg-type]
    transport = Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    protocol.data_received(request)
    for _ in range(100):
        if len(transport.writes) >= until or transport.closed:
            break
        await asyncio.sleep(0)
    protocol.connection_lost(None)
    return transport


async def test_a_response_with_a_content_length_is_written_whole_head_first() -> None:
    transport = await ask(b"GET /json HTTP/1.1\r\nHost: aitp\r\n\r\n", until=2)
    written = b"".join(transport.writes)
    assert written.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 7\r\n" in written
    assert written.endswith(b'\r\n\r\n{"a":1}')


async def test_a_streamed_response_has_its_head_written_before_its_body_exists() -> None:
    later.clear()
    transport = await ask(b"GET /stream HTTP/1.1\r\nHost: aitp\r\n\r\n")
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in transport.writes[0] and transport.writes[0].endswith(b"\r\n\r\n")


async def test_a_head_answer_has_its_head_written() -> None:
    transport = await ask(b"HEAD /json HTTP/1.1\r\nHost: aitp\r\n\r\n")
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and transport.writes[0].endswith(b"\r\n\r\n")


async def test_an_app_failing_after_its_head_leaves_the_head_written_and_the_connection_closed() -> None:
    transport = await ask(b"GET /fails HTTP/1.1\r\nHost: aitp\r\n\r\n")
    assert transport.closed
    assert len(transport.writes) == 1 and transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
