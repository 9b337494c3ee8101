"""The WebSocket connection, below the app: uvicorn's protocol with the frames written in one turn of the
event loop sent to the socket in one write.

uvicorn writes every frame to the transport on its own, and the transport sends it at once: one `send`
system call per frame, the largest single cost of an A2A SendMessage on the server (~9%, py-spy,
bench/a2a_send.py), whose agent gets several events per request on its inbox socket. The frames a turn of
the loop writes (the events of one wake-up of a stream, an answer to a post with them) are joined and
sent at the end of that turn, in order; a frame written alone goes out at the end of its turn too, before
the loop waits for the network again. Closing the connection sends what is pending first.
`aitp serve` hands `WebSocketProtocol` to uvicorn (`ws=`, `aitp.server.serving.uvicorn_options`); what it
relies on in uvicorn's protocol is pinned in `tests/server/test_internals.py`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class TurnWrites:
    """A transport whose writes of one loop turn go out as one, at the end of the turn."""

    __slots__ = ("_transport", "_loop", "_pending")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._send)
        self._pending.append(data)

    def _send(self) -> None:
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():  # the peer left during the turn: nobody to send to
                self._transport.write(data)

    def close(self) -> None:
        self._send()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (websockets, sans-I/O) writing through `TurnWrites`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(TurnWrites(transport, self.loop))  # type: ignore[arg-type]
