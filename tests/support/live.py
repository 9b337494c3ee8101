"""Clients for the live transports in tests: a WebSocket subscriber and an SSE reader, both resumable."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import websockets


def ws_url(base_url: str, path: str, key: str | None, **params: Any) -> str:
    query = {**params, **({"token": key} if key else {})}
    return base_url.replace("http://", "ws://") + "/v1" + path + ("?" + str(httpx.QueryParams(query)) if query else "")


@asynccontextmanager
async def ws_connect(base_url: str, path: str, key: str | None, **options: Any) -> AsyncIterator[Any]:
    """A WebSocket to `path` (under /v1) authenticated with `?token=` (`after=` etc. go in `options["params"]`)."""
    params = options.pop("params", {})
    async with websockets.connect(ws_url(base_url, path, key, **params), **options) as socket:
        yield socket


async def ws_events(socket: Any, count: int) -> list[dict[str, Any]]:
    """The next `count` event frames (post replies are skipped)."""
    events: list[dict[str, Any]] = []
    while len(events) < count:
        frame = json.loads(await socket.recv())
        if "op" not in frame:
            events.append(frame)
    return events


async def sse_frames(client: httpx.AsyncClient, path: str, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
    """Parsed SSE frames ({"id", "event", "data"}); comments (keep-alives) come through as {"comment": ...}."""
    headers = {"Accept": "text/event-stream", **kwargs.pop("headers", {})}
    async with client.stream("GET", path, headers=headers, **kwargs) as response:
        if response.status_code != 200:
            await response.aread()
            yield {"status": response.status_code, "body": response.json()}
            return
        frame: dict[str, Any] = {}
        async for line in response.aiter_lines():
            if not line:
                if frame:
                    if "data" in frame:
                        frame["data"] = json.loads(frame["data"])
                    yield frame
                frame = {}
            elif line.startswith(":"):
                yield {"comment": line[1:].strip()}
            else:
                name, _, value = line.partition(":")
                frame[name] = value.removeprefix(" ")


class RawWebSocket:
    """A bare-bones blocking WebSocket client that reads only when asked.

    Real clients read in the background; this one leaves frames in the kernel until `frame()` is called,
    which is what a stalled consumer looks like to the server.
    """

    def __init__(self, port: int, path: str, receive_buffer: int = 16_384) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)  # also stops autotuning
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("connection closed mid-frame")
            data += chunk
        return data

    def frame(self) -> tuple[int, bytes]:
        """(opcode, payload) of the next frame (pings are skipped); opcode 8 is a close."""
        while True:
            first, second = self._exactly(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._exactly(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._exactly(8))[0]
            payload = self._exactly(length)
            if first & 0x0F != 0x9:
                return first & 0x0F, payload

    def close(self) -> None:
        self.sock.close()
