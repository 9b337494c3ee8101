"""How `aitp serve`'s WebSocket protocol (`aitp.server.websocket_protocol`) writes frames to the connection.

Specification: the frames the app sends in one turn of the event loop (here: the handshake's answer and
three events) reach the connection in one write, in order, once that turn ends; a frame sent in a later
turn is a write of its own; closing sends what is pending before the connection closes.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from aitp.server.websocket_protocol import WebSocketProtocol

HANDSHAKE = (
    b"GET /ws HTTP/1.1\r\nHost: aitp\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: " + base64.b64encode(b"0123456789abcdef") + b"\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


class Transport:
    """The connection as the server sees it, keeping every write (and whether it was closed after them)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed_after: int | None = None

    def get_extra_info(self, name: str) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name)

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed_after = len(self.writes)

    def is_closing(self) -> bool:
        return self.closed_after is not None

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


def connect(app: Any) -> tuple[WebSocketProtocol, Transport]:
    """A connection to `app` through the protocol, its handshake request received."""
    transport = Transport()
    config = Config(app=app, ws=WebSocketProtocol, log_config=None)
    config.load()
    protocol = WebSocketProtocol(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(transport)  # type: ignore[arg-type]
    protocol.data_received(HANDSHAKE)
    return protocol, transport


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_frames_of_one_turn_are_one_write_and_a_later_frame_its_own() -> None:
    later, done = asyncio.Event(), asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        for text in ("one", "two", "three"):
            await send({"type": "websocket.send", "text": text})
        await later.wait()
        await send({"type": "websocket.send", "text": "four"})
        await send({"type": "websocket.close", "code": 1000})
        done.set()

    protocol, transport = connect(app)
    await turns(20)
    assert len(transport.writes) == 1
    first = transport.writes[0]
    assert first.startswith(b"HTTP/1.1 101 ")
    assert first.index(b"one") < first.index(b"two") < first.index(b"three")

    later.set()
    await asyncio.wait_for(done.wait(), 5)
    await turns(5)
    assert len(transport.writes) == 2 and b"four" in transport.writes[1]  # the frame and the close frame
    protocol.connection_lost(None)


async def test_closing_sends_what_is_pending_first() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "last words"})
        protocol.transport.close()  # as uvicorn does when the close handshake times out

    protocol, transport = connect(app)
    await turns(20)
    assert transport.closed_after == 1 and b"last words" in transport.writes[0]
    protocol.connection_lost(None)
