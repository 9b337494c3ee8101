"""The HTTP connection, below the app: limits on the request head and on open connections that uvicorn's
httptools protocol lacks (431 `request_header_fields_too_large`, 408 `request_timeout`, 503
`connection_limit_reached`). `aitp serve` hands `http_protocol(settings, render)` to uvicorn.

The protocol extends uvicorn's by its parser callbacks and around its `data_received`, never copying it: a
head over the limits raises `HeadTooLarge` from a callback, which uvicorn's `data_received` meets as a parser
error and answers with `send_400_response`, here the 431 instead. `tests/server/test_internals.py` pins what
this relies on in uvicorn."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from aitp.errors import APIError, RequestHeaderFieldsTooLarge, RequestTimeout, ServiceUnavailable
from aitp.server.access_log import AccessLogger

if TYPE_CHECKING:
    from aitp.config import Settings


Render = Callable[[APIError], Any]  # a refusal as the JSON body the client reads


class HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing a head over the limits (uvicorn then answers the parser
    error with `send_400_response`, which answers 431 instead)."""


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits it lacks on the request head and on connections.

    - A head (URL and header fields) larger than `max_head_bytes`, or of more than `max_headers` fields
      (trailers of a chunked body count too), is answered 431 `request_header_fields_too_large`. Bytes are
      also counted as they arrive, so the parser (which keeps a header being received in memory, whatever
      its size) never holds more than `max_head_bytes` plus two reads of the socket; a chunked body's
      trailers and chunk extensions share that budget (its framing is allowed a few bytes a chunk).
    - A head must arrive whole within `head_timeout` seconds of its first byte (of the connection opening,
      for the first one): else 408 `request_timeout` (a connection that sent nothing is closed silently).
      Between requests, uvicorn's keep-alive timeout closes an idle connection.
    - Beyond `max_connections` open connections (WebSockets and streams included), a new one is answered
      503 `connection_limit_reached` with `Retry-After: 1` at once and closed, instead of holding a file
      descriptor until none is left and new clients get nothing at all.

    Each refusal is the usual error envelope with `Connection: close`; the server then stops sending and
    reads (and drops) what the client still sends for up to `LINGER` seconds, so the client reads the
    answer rather than a connection reset. Subclassed per server with the settings (`http_protocol`).
    """

    max_head_bytes = 64 << 10
    max_headers = 100
    head_timeout = 10.0
    max_connections = 0  # 0: no limit
    render: Render  # the refusals' body: the composition root gives the faces' own (`http_protocol`)
    _refusal_logged = float("-inf")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access_logger = AccessLogger(self.access_logger)  # type: ignore[assignment]  # its lines, cheaper
        self._head_open = True  # the head of a request is expected or arriving
        self._head_started = False  # a byte of it has arrived
        self._head_bytes = 0  # bytes read while the head was arriving (bounds what the parser holds)
        self._head_size = 0  # the head as parsed: URL and fields (bounds the head itself)
        self._header_count = 0
        self._in_body = False  # the head is complete, the message is not
        self._body_bytes = 0  # body bytes of the message so far
        self._framing_bytes = 0  # bytes read while in the body that were not body: chunk framing, trailers
        self._chunks = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._too_large = False  # a callback found the head over the limits (the parser error that follows)

    # connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self.max_connections > 0 and len(self.connections) >= self.max_connections:
            self.transport = transport
            self._refuse(
                ServiceUnavailable(
                    f"The server has as many connections open as it takes ({self.max_connections}); try again shortly."
                )
            )
            now = self.loop.time()
            if now - LimitedHttpProtocol._refusal_logged >= 1:  # once a second at most, whatever the flood
                LimitedHttpProtocol._refusal_logged = now
                self.logger.warning(
                    "Refusing connections: %d open, the limit (AITP_MAX_CONNECTIONS).", len(self.connections)
                )
            return
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering after a refusal: what the client still sends is dropped
        head_was_open, in_body, body_bytes = self._head_open, self._in_body, self._body_bytes
        super().data_received(data)  # feeds the parser; a parser error is answered by send_400_response
        if self._refused or self.transport.is_closing():
            return
        if self._head_open:
            # Only reads that began inside the head count: one that also ends the previous request's body
            # may start a head, which is then at most that one read ahead of the count.
            if head_was_open:
                self._head_bytes += len(data)
            if self._head_bytes > self.max_head_bytes:
                self._refuse(self._head_too_large())
        elif in_body and self._in_body:
            # A chunked body's framing is a few bytes a chunk; trailer fields (kept in memory by the parser
            # until each is whole, like header fields) and chunk extensions share the head's budget.
            self._framing_bytes += len(data) - (self._body_bytes - body_bytes)
            if self._framing_bytes > self.max_head_bytes + 32 * self._chunks:
                self._refuse(self._head_too_large())

    # parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open = self._head_started = True
        self._head_bytes = self._head_size = self._header_count = 0
        self._arm_head_timer()  # (already armed for the connection's first head)

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        if self._head_size > self.max_head_bytes:
            self._stop_too_large()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._head_size += len(name) + len(value) + 4  # with ": " and CRLF
        if self._header_count > self.max_headers or self._head_size > self.max_head_bytes:
            self._stop_too_large()
        super().on_header(name, value)

    def _stop_too_large(self) -> None:
        self._too_large = True
        raise HeadTooLarge

    def on_headers_complete(self) -> None:
        self._head_open = self._head_started = False
        self._in_body = True
        self._body_bytes = self._framing_bytes = self._chunks = 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def on_chunk_header(self) -> None:
        self._chunks += 1

    def on_message_complete(self) -> None:
        self._in_body = False
        super().on_message_complete()

    # refusals

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error: a head over the limits is a 431 (the error a callback raised)."""
        if self._too_large:
            self._refuse(self._head_too_large())
        else:
            super().send_400_response(msg)

    def _head_too_large(self) -> APIError:
        return RequestHeaderFieldsTooLarge(
            f"The request head is larger than the server accepts ({self.max_head_bytes} bytes, "
            f"{self.max_headers} header fields)."
        )

    def _arm_head_timer(self) -> None:
        if self._head_timer is None and self.head_timeout > 0:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if not self._head_started:
            self.transport.close()  # nothing was asked: nothing to answer
            return
        self._refuse(RequestTimeout(f"The request head did not arrive within {self.head_timeout:g} seconds."))

    def _refuse(self, error: APIError) -> None:
        """Answer `error` instead of the request, then close (after a short linger)."""
        self._refused = True
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started:
                self.transport.close()  # a response is being written: no other answer fits
                return
            cycle.disconnected = True  # the app reads a disconnect; what it may still send goes nowhere
            cycle.message_event.set()
        body = orjson.dumps(self.render(error))
        headers = {
            "content-type": "application/json",
            "content-length": str(len(body)),
            "connection": "close",
            **{name.lower(): value for name, value in (error.headers or {}).items()},
        }
        head = f"HTTP/1.1 {error.status_code} {HTTPStatus(error.status_code).phrase}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.transport.write(head.encode("latin-1") + b"\r\n" + body)
        _linger(self.loop, self.transport)

    def eof_received(self) -> None:
        if self._refused:
            self.transport.close()  # the client read the answer and is done


LINGER = 2.0  # seconds a refused connection is read (and dropped) before it is closed
MAX_LINGERING = 256  # refused connections lingering at once; beyond, they are closed at once
_lingering: set[asyncio.Transport] = set()


def _linger(loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
    """Close `transport` after its answer: its write side now, the rest after `LINGER` seconds (or when the
    client closes), so what it still sends does not turn into a reset that discards the answer."""
    if len(_lingering) >= MAX_LINGERING or not transport.can_write_eof():
        transport.close()
        return
    transport.write_eof()
    _lingering.add(transport)

    def close() -> None:
        _lingering.discard(transport)
        transport.close()

    loop.call_later(LINGER, close)


# file descriptors kept out of the connection limit: the store, logs, lingering refusals, the listener
RESERVED_FILES = 128 + MAX_LINGERING


def connection_limit(wanted: int) -> int:
    """The connection limit the process can honour: `wanted` (0: as many as it may open files), within the
    soft limit on open files, first raised towards the hard limit as far as `wanted` needs."""
    try:
        import resource
    except ImportError:  # not on a POSIX system: the setting as is
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + RESERVED_FILES if wanted > 0 else hard
    if soft != resource.RLIM_INFINITY and (need > soft or need == resource.RLIM_INFINITY):
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    fits = max(1, soft - RESERVED_FILES)
    return fits if wanted <= 0 else min(wanted, fits)


def http_protocol(settings: Settings, render: Render) -> type[LimitedHttpProtocol]:
    """The HTTP protocol class for uvicorn (`http=`), with the settings' limits on heads and connections, its
    refusals' bodies rendered by `render` (the server imports no face: `aitp serve` passes the HTTP faces')."""
    limits = {  # 0 (or less): no limit, as for the other limits
        "max_head_bytes": settings.max_header_bytes if settings.max_header_bytes > 0 else sys.maxsize,
        "max_headers": settings.max_headers if settings.max_headers > 0 else sys.maxsize,
        "head_timeout": settings.header_timeout,
        "max_connections": connection_limit(settings.max_connections),
        "render": staticmethod(render),
    }
    return type("AitpHttpProtocol", (LimitedHttpProtocol,), limits)
