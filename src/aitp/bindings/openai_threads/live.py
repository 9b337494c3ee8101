"""The two live transports over an `EventStream`: Server-Sent Events and WebSocket.

WebSocket frames, server to client (JSON text):
    an event      {"seq", "type", "thread_id", "created_at", "data"}   (+ "cursor" on the inbox)
    an activity   {"type": "thread.activity", "thread_id", "data": {"actor", "state", "expires_at"}}: outside the
                  log, no seq and no cursor (SSE: no `id:`), never replayed
    a post reply  {"op": "posted", "ref": ..., "message": {...}}
                  or {"op": "error", "ref": ..., "status": <HTTP status>, "error": {<OpenAI envelope>}}
Client to server:
    {"op": "post", "ref": <any>, "message": {<as POST .../messages>}}   (+ "thread_id" on the inbox)
Close codes: 1000 thread deleted / removed from the thread, 4401 bad or missing key (or the key was revoked
while the socket was open: see aitp.services.revocation), 4403 not a member
(or no such thread), 4008 slow consumer (the reason says the cursor to resume after), 4429 too many streams
open (or connects) for the key: close one, or wait, then reconnect; uvicorn closes with
1012 on shutdown, and a crashed server shows as 1006: in every case but 1000/4401/4403, resume from the cursor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import orjson
from fastapi import WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from aitp.bindings.http.context import key_hash_of, principal_of, runtime_of
from aitp.bindings.http.errors import envelope, validation_error
from aitp.bindings.http.idempotency import run_once
from aitp.bindings.openai_threads import close_codes, render
from aitp.bindings.openai_threads.models import CreateMessageRequest
from aitp.errors import APIError, InvalidRequest, Unauthenticated
from aitp.events.stream import EventStream, Frame, Notice, Overflow
from aitp.gate import Gate
from aitp.inputs.strict_json import parse_json
from aitp.principals import Principal
from aitp.services import idempotency, messages, revocation
from aitp.services.connections import stream_slots

log = logging.getLogger(__name__)

Poster = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]  # a post op -> the created message


def _error_frame(ref: Any, error: APIError) -> dict[str, Any]:
    """A refused post: the HTTP status it would have had, and the same envelope."""
    return {"op": "error", "ref": ref, "status": error.status_code, "error": envelope(error)}


# ------------------------------------------------------------------------------------------ SSE


def wants_event_stream(accept: str | None) -> bool:
    return bool(accept) and "text/event-stream" in accept  # type: ignore[operator]


# The largest cursor a request may name (`after`, `Last-Event-ID`): a signed 64-bit integer, less 2^32 that a
# store's read may add to it (SQLite reads a window of positions past the cursor: at 2^63-2, OverflowError and a
# 500). No store hands out a cursor above it: SQLite counts from 1, MongoDB's positions (milliseconds << 21) pass
# it in the year 2109.
MAX_CURSOR = 2**63 - 2**32


def sse_cursor(last_event_id: str | None, after: int) -> int:
    """`Last-Event-ID` (sent by a reconnecting EventSource) wins over `after`."""
    if last_event_id is None or not last_event_id.strip():
        return after
    try:
        value = int(last_event_id)
    except ValueError:
        raise InvalidRequest(
            "Last-Event-ID must be an event id (an integer).", param="Last-Event-ID", code="invalid_value"
        ) from None
    if not 0 <= value <= MAX_CURSOR:
        raise InvalidRequest(
            f"Last-Event-ID must be an event id (0 to {MAX_CURSOR}).", param="Last-Event-ID", code="invalid_value"
        )
    return value


async def sse_response(opened: AbstractAsyncContextManager[EventStream]) -> EventStreamResponse:
    """Stream events as SSE (`id:` is the cursor to resume from); ends with an `event: end` frame.

    The stream is opened here, so a refusal (404 for non-members) is an ordinary HTTP error."""
    return EventStreamResponse(opened, await opened.__aenter__())


class EventStreamResponse(Response):
    """An open `EventStream` sent as Server-Sent Events, until it ends or the client leaves.

    Not Starlette's StreamingResponse: that one stops a stream whose client left by cancelling it in an
    anyio task group, and the CancelledError's traceback, kept in a reference cycle by the task group,
    held the stream's frames (its buffer, its thread's feed) until a full collection, which the raised GC
    thresholds make rare: 3 rounds of 8 subscribers of 110 MB of events grew the server by 7.7 GB. Here
    the client leaving ends the stream (`EventStream.end`), which returns as any end does."""

    media_type = "text/event-stream"

    def __init__(self, opened: AbstractAsyncContextManager[EventStream], stream: EventStream) -> None:
        # as StreamingResponse does: no body, so no Content-Length
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self._opened = opened
        self._stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream = self._stream
        watcher = asyncio.create_task(_until_disconnected(receive, stream))
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for item in stream:
                if item is None:
                    chunk = b": keep-alive\n\n"
                elif isinstance(item, Frame | Notice):
                    chunk = item.sse
                else:
                    ending = {"reason": item.reason}
                    if isinstance(item, Overflow):
                        ending["resume_after"] = item.cursor  # type: ignore[assignment]
                    chunk = b"event: end\ndata: %s\n\n" % orjson.dumps(ending)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            await self._opened.__aexit__(None, None, None)


async def _until_disconnected(receive: Receive, stream: EventStream) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    stream.end("the client left")


# ------------------------------------------------------------------------------------ WebSocket


async def serve_websocket(
    websocket: WebSocket,
    open_stream: Callable[[Principal], AbstractAsyncContextManager[EventStream]],
    thread_of: Callable[[dict[str, Any]], Any],
) -> None:
    """Accept, open the caller's stream (4403 if refused) and serve it with post ops, each to the thread
    `thread_of(frame)` names. The connect was authenticated and counted before (`aitp.bindings.http.context`:
    4401, 4429)."""
    rt, principal = runtime_of(websocket.scope), principal_of(websocket.scope)
    await websocket.accept()
    opened = open_stream(principal)
    try:
        stream = await opened.__aenter__()
    except APIError as error:  # 4429 when the key has too many streams open
        await websocket.close(close_codes.refused(error, close_codes.CLOSE_NOT_FOUND), reason=error.message[:120])
        return

    async def post_as_key(frame: dict[str, Any]) -> dict[str, Any]:
        # Each post authenticates its key again, as an HTTP request would: a revoked key posts nothing more
        # (401), and its streams here end at once (4401).
        try:
            current = await rt.state(Gate).admit_hash(key_hash_of(websocket.scope))
        except Unauthenticated:
            if principal.key_id is not None:
                revocation.key_revoked(principal.key_id, rt.state(Gate).principals, rt.state(stream_slots))
            raise
        return await _post(websocket, current, frame, thread_of(frame))

    try:
        await _serve(websocket, stream, post_as_key)
    finally:
        await opened.__aexit__(None, None, None)


async def _post(websocket: WebSocket, principal: Principal, frame: dict[str, Any], thread_id: Any) -> dict[str, Any]:
    """A `{"op": "post", "message": {...}}` frame: the same rules as POST /v1/threads/{id}/messages. On the
    inbox socket the frame names its thread (`thread_id`); an `idempotency_key` makes it safe to send again
    after a reconnect, as `Idempotency-Key` does on that POST, and under the same record: a retry may use
    either."""
    if not isinstance(thread_id, str):
        raise InvalidRequest("On the inbox socket a post names its thread: 'thread_id'.", param="thread_id")
    rt = runtime_of(websocket.scope)
    body = CreateMessageRequest.model_validate(frame["message"])

    async def write() -> dict[str, Any]:
        return render.message(await messages.create_message(rt, principal, thread_id, body))

    if "idempotency_key" not in frame:
        return await write()

    path = websocket.app.url_path_for("create_message", thread_id=thread_id)  # the POST route's own path
    request = idempotency.fingerprint("POST", path, frame["message"])
    return await run_once(rt, principal, frame["idempotency_key"], request, write)


async def _serve(websocket: WebSocket, stream: EventStream, post: Poster) -> None:
    """Send the stream's events and answer post ops, until either side ends it."""
    send_lock = asyncio.Lock()

    async def send(payload: dict[str, Any]) -> None:
        async with send_lock:
            await websocket.send_text(orjson.dumps(payload).decode())

    async def events() -> None:
        async for item in stream:
            if item is None:
                continue  # the server (uvicorn) pings WebSocket peers itself
            if isinstance(item, Frame | Notice):
                async with send_lock:  # the event's JSON text, rendered once for all its subscribers
                    await websocket.send_text(item.json)
                continue
            async with send_lock:
                await websocket.close(close_codes.ended(item), reason=item.reason[:120])
            return

    async def requests() -> None:
        while True:
            raw = await websocket.receive_text()
            try:
                frame = parse_json(raw.encode())  # as strict as an HTTP body: what no store can keep is refused
            except InvalidRequest as error:
                await send(_error_frame(None, error if error.param else InvalidRequest("Frames must be JSON.")))
                continue
            ref = frame.get("ref") if isinstance(frame, dict) else None
            if not isinstance(ref, str | int | float | None):  # echoed back: a scalar, never a deep object
                await send(_error_frame(None, InvalidRequest("'ref' must be a string or a number.", param="ref")))
                continue
            if not isinstance(frame, dict) or frame.get("op") != "post" or not isinstance(frame.get("message"), dict):
                await send(_error_frame(ref, InvalidRequest('Expected {"op": "post", "message": {...}}.', param="op")))
                continue
            try:
                message = await post(frame)
            except APIError as error:
                await send(_error_frame(ref, error))
            except ValidationError as exc:  # `param` names the field as over HTTP, e.g. "content"
                await send(_error_frame(ref, validation_error(RequestValidationError(exc.errors()))))
            else:
                await send({"op": "posted", "ref": ref, "message": message})

    # Events are sent from this task and frames read in one more; whichever ends first ends the other. (One
    # task per connection fewer than a task for each: thousands of idle connections is the common case.)
    this = asyncio.current_task()
    assert this is not None
    reader = asyncio.create_task(requests())
    sending = True

    def reader_ended(_: asyncio.Task[None]) -> None:
        if sending:
            this.cancel()  # the peer left (or the reader failed): stop waiting for events

    reader.add_done_callback(reader_ended)
    try:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await events()
    except asyncio.CancelledError:
        if not reader.done() or this.uncancel() > 0:
            raise  # cancelled from outside (server shutdown), not by reader_ended
    finally:
        sending = False
        reader.cancel()
        # Waited for, not awaited: `await reader` would raise its exception (the peer's WebSocketDisconnect)
        # here, adding this frame, which holds the stream, to the traceback of an exception the task holds:
        # a reference cycle keeping the stream and its frames until a full collection.
        await asyncio.wait([reader])
        error = None if reader.cancelled() else reader.exception()
        if error is not None and not isinstance(error, WebSocketDisconnect | RuntimeError):
            log.error("WebSocket frame reader failed", exc_info=error)
