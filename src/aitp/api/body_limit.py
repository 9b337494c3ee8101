"""The request body's size limit, as pure ASGI middleware (413 `request_too_large` before the app reads too
much); the request head and connections are limited below the app (`aitp.http_protocol`).

A declared `Content-Length` over the limit is refused without reading a byte of the body. A body without
one (chunked) is counted as it streams in: the chunk that crosses the limit is never handed to the app,
which therefore never holds more than the limit, and the app's own answer is replaced by the 413. Either
way the response says `Connection: close`, so the server stops reading the rest of the body.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aitp.errors import PayloadTooLarge


class BodyTooLarge(Exception):
    """Raised into the app from `receive` when the streamed body crosses the limit."""


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The request body is larger than the server accepts ({limit} bytes).", code="request_too_large"
    )


class BodyLimitMiddleware:
    """Refuse HTTP request bodies larger than `max_bytes()` with the OpenAI error envelope and status 413.

    `max_bytes` is read per request (so changed settings apply at once); 0 or less means no limit."""

    def __init__(self, app: ASGIApp, max_bytes: Callable[[], int]) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.max_bytes()
        if scope["type"] != "http" or limit <= 0:
            await self.app(scope, receive, send)
            return
        if _declared_length(scope) > limit:
            await _refuse(send, limit)
            return

        received = 0
        exceeded = False
        response_started = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if exceeded:
                return  # the app's answer to a body it never got in full: ours replaces it
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            # FastAPI turns errors while reading the body into a 400 of its own; anything else that
            # escapes after the limit was crossed is that same error in another wrapping.
            if not exceeded:
                raise
        if exceeded and not response_started:
            await _refuse(send, limit)


async def _refuse(send: Send, limit: int) -> None:
    error = too_large(limit)
    body = orjson.dumps(error.envelope())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int:
    """The request's `Content-Length` (0 when absent; unparseable values are left to the server)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0
