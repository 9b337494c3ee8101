"""Thread events (AITP extension): the log as pages, as Server-Sent Events, or over a WebSocket; and the
caller's inbox (every thread it is in) the same three ways. See `aitp.api.live` for the wire details."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, WebSocket

from aitp.api.deps import PrincipalDep, RuntimeDep
from aitp.api.errors import ERROR_RESPONSES
from aitp.api.live import serve_websocket, sse_cursor, sse_response, wants_event_stream, websocket_principal
from aitp.api.responses import FastJSONResponse
from aitp.errors import APIError, InvalidRequest
from aitp.events.stream import CLOSE_NOT_FOUND
from aitp.models import CreateMessageRequest, EventList, InboxEventList
from aitp.runtime import Runtime
from aitp.services import events, messages, streams

router = APIRouter(tags=["events"], responses=ERROR_RESPONSES)

AfterSeq = Annotated[int, Query(ge=0, description="Return events with seq greater than this.")]
AfterCursor = Annotated[int, Query(ge=0, description="Return inbox events with cursor greater than this.")]
Limit = Annotated[int, Query(ge=1, le=1000)]
Accept = Annotated[str | None, Header(include_in_schema=False)]
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", include_in_schema=False)]
STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "With `Accept: text/event-stream`"}
}


@router.get(
    "/threads/{thread_id}/events",
    response_model=EventList,
    responses=STREAM_DOC,
    summary="A thread's events: a page, or with `Accept: text/event-stream` a live SSE stream (resumable)",
)
async def thread_events(
    thread_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    after: AfterSeq = 0,
    limit: Limit = 100,
    accept: Accept = None,
    last_event_id: LastEventId = None,
) -> Any:
    if wants_event_stream(accept):
        opened = streams.thread_stream(rt, principal, thread_id, sse_cursor(last_event_id, after))
        return sse_response(opened, await opened.__aenter__())
    return FastJSONResponse(await events.list_events(rt, principal, thread_id, after=after, limit=limit))


@router.get(
    "/actors/me/events",
    response_model=InboxEventList,
    responses=STREAM_DOC,
    summary="Events of every thread the caller is in: a page, or with `Accept: text/event-stream` a live stream",
)
async def inbox_events(
    rt: RuntimeDep,
    principal: PrincipalDep,
    after: AfterCursor = 0,
    limit: Limit = 100,
    accept: Accept = None,
    last_event_id: LastEventId = None,
) -> Any:
    if wants_event_stream(accept):
        opened = streams.inbox_stream(rt, principal, sse_cursor(last_event_id, after))
        return sse_response(opened, await opened.__aenter__())
    return FastJSONResponse(await streams.list_inbox(rt, principal, after=after, limit=limit))


@router.websocket("/threads/{thread_id}/events/ws")
async def thread_events_ws(websocket: WebSocket, thread_id: str, after: AfterSeq = 0) -> None:
    rt: Runtime = websocket.app.state.runtime
    await websocket.accept()
    principal = await websocket_principal(websocket, rt)
    if principal is None:
        return
    opened = streams.thread_stream(rt, principal, thread_id, after)
    try:
        stream = await opened.__aenter__()
    except APIError as error:
        await websocket.close(CLOSE_NOT_FOUND, reason=error.message[:120])
        return
    try:

        async def post(frame: dict[str, Any]) -> dict[str, Any]:
            body = CreateMessageRequest.model_validate(frame["message"])
            return await messages.create_message(rt, principal, thread_id, body)

        await serve_websocket(websocket, stream, post)
    finally:
        await opened.__aexit__(None, None, None)


@router.websocket("/actors/me/events/ws")
async def inbox_events_ws(websocket: WebSocket, after: AfterCursor = 0) -> None:
    rt: Runtime = websocket.app.state.runtime
    await websocket.accept()
    principal = await websocket_principal(websocket, rt)
    if principal is None:
        return

    async def post(frame: dict[str, Any]) -> dict[str, Any]:
        thread_id = frame.get("thread_id")
        if not isinstance(thread_id, str):
            raise InvalidRequest("On the inbox socket a post names its thread: 'thread_id'.", param="thread_id")
        body = CreateMessageRequest.model_validate(frame["message"])
        return await messages.create_message(rt, principal, thread_id, body)

    async with streams.inbox_stream(rt, principal, after) as stream:
        await serve_websocket(websocket, stream, post)
