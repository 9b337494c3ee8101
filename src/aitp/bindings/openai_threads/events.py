"""Thread events (AITP extension): the log as pages, as Server-Sent Events, or over a WebSocket; and the
caller's inbox (every thread it is in) the same three ways. See `.live` for the wire details. The live ones
also carry the members' activity (`thread.activity` frames, outside the log: `.presence`) to a client that
asks (`activity=true`): a client written before them reads every frame as an event of the log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, WebSocket

from aitp.bindings.http.context import runtime_of
from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import KEYED, error_responses
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.live import (
    MAX_CURSOR,
    serve_websocket,
    sse_cursor,
    sse_response,
    wants_event_stream,
)
from aitp.bindings.openai_threads.models import EventList, InboxEventList
from aitp.bindings.openai_threads.presence import activity_frame
from aitp.services import events, streams
from aitp.services.activity import ShowActivity

router = APIRouter(prefix="/v1", tags=["events"], route_class=ApiRoute)


def _shows(activity: bool) -> ShowActivity | None:
    return activity_frame if activity else None


AfterSeq = Annotated[int, Query(ge=0, le=MAX_CURSOR, description="Return events with seq greater than this.")]
AfterCursor = Annotated[
    int, Query(ge=0, le=MAX_CURSOR, description="Return inbox events with cursor greater than this.")
]
Limit = Annotated[int, Query(ge=1, le=1000)]
Accept = Annotated[str | None, Header(include_in_schema=False)]
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", include_in_schema=False)]
WithActivity = Annotated[
    bool,
    Query(
        description="Live streams only: also send the members' activity (`thread.activity` frames: an agent "
        "working on an answer), which is outside the log (no seq, no cursor, never replayed)."
    ),
]
STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "With `Accept: text/event-stream`"}
}


@router.get(
    "/threads/{thread_id}/events",
    response_model=EventList,
    responses={**STREAM_DOC, **error_responses(*KEYED, 400, 404)},
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
    activity: WithActivity = False,
) -> Any:
    if wants_event_stream(accept):
        cursor, shows = sse_cursor(last_event_id, after), _shows(activity)
        return await sse_response(streams.thread_stream(rt, principal, thread_id, cursor, render.event_frame, shows))
    return FastJSONResponse(
        render.event_page(await events.list_events(rt, principal, thread_id, after=after, limit=limit), after)
    )


@router.get(
    "/actors/me/events",
    response_model=InboxEventList,
    responses={**STREAM_DOC, **error_responses(*KEYED, 400)},
    summary="Events of every thread the caller is in: a page, or with `Accept: text/event-stream` a live stream",
)
async def inbox_events(
    rt: RuntimeDep,
    principal: PrincipalDep,
    after: AfterCursor = 0,
    limit: Limit = 100,
    accept: Accept = None,
    last_event_id: LastEventId = None,
    activity: WithActivity = False,
) -> Any:
    if wants_event_stream(accept):
        cursor, shows = sse_cursor(last_event_id, after), _shows(activity)
        return await sse_response(streams.inbox_stream(rt, principal, cursor, render.inbox_frame, shows))
    return FastJSONResponse(render.inbox_page(await streams.list_inbox(rt, principal, after=after, limit=limit), after))


@router.websocket("/threads/{thread_id}/events/ws")
async def thread_events_ws(
    websocket: WebSocket, thread_id: str, after: AfterSeq = 0, activity: WithActivity = False
) -> None:
    rt, shows = runtime_of(websocket.scope), _shows(activity)
    await serve_websocket(
        websocket,
        lambda principal: streams.thread_stream(rt, principal, thread_id, after, render.event_frame, shows),
        lambda frame: thread_id,
    )


@router.websocket("/actors/me/events/ws")
async def inbox_events_ws(websocket: WebSocket, after: AfterCursor = 0, activity: WithActivity = False) -> None:
    rt, shows = runtime_of(websocket.scope), _shows(activity)
    await serve_websocket(
        websocket,
        lambda principal: streams.inbox_stream(rt, principal, after, render.inbox_frame, shows),
        lambda frame: frame.get("thread_id"),
    )
