"""A request refused before any route runs (`aitp.bindings.http.context`), as the Threads face answers it."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from aitp.bindings.http.errors import respond
from aitp.bindings.openai_threads import close_codes
from aitp.errors import APIError


def refusal(error: APIError, scope: Scope) -> ASGIApp:
    """The envelope over HTTP; a WebSocket is accepted, then closed with the refusal's code (4401, or 4429
    when over a limit) and its message as the reason, so the client can tell why."""
    if scope["type"] != "websocket":
        return respond(error)

    async def close(scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        await websocket.accept()
        await websocket.close(close_codes.refused(error, close_codes.CLOSE_UNAUTHENTICATED), reason=error.message[:120])

    return close
