"""Presence (AITP extension): whether an actor can be reached now and how soon it usually replies; and what
an actor is doing in a thread right now (`working` on an answer, or `idle`), which the other members' live
streams show as `thread.activity` frames, outside the log (no cursor, never replayed)."""

from __future__ import annotations

import math
from typing import Any

import orjson
from fastapi import APIRouter

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads.models.presence import Activity, ActivityInput, ActorPresence
from aitp.events.stream import Notice
from aitp.services import activity, presence
from aitp.store.activity import ActivityRecord

router = APIRouter(prefix="/v1", tags=["actors"], route_class=ApiRoute)


def render_presence(found: presence.Presence) -> dict[str, Any]:
    return {
        "object": "actor.presence",
        "actor": found.actor,
        "reachable": found.reachable,
        "via": found.via,
        "usually_replies_in": found.usually_replies_in,
        "checked_at": found.checked_at,
    }


def _expires_at(record: ActivityRecord) -> int:
    return math.ceil(record.expires_at) if record.state == "working" else int(record.expires_at)


def activity_object(record: ActivityRecord) -> dict[str, Any]:
    return {
        "object": "thread.activity",
        "thread_id": record.thread_id,
        "actor": record.actor,
        "state": record.state,
        "expires_at": _expires_at(record),
    }


class _ActivityFrames:
    """The `thread.activity` frame of a record (thread and inbox streams alike: no seq, no cursor). The hub hands
    one record to every stream that hears it in turn, so the last frame made is kept: one serialisation per
    record, however many streams show it."""

    def __init__(self) -> None:
        self._last: tuple[ActivityRecord, Notice] | None = None

    def __call__(self, record: ActivityRecord) -> Notice:
        last = self._last
        if last is not None and last[0] is record:
            return last[1]
        data = {"actor": record.actor, "state": record.state, "expires_at": _expires_at(record)}
        frame = {"type": "thread.activity", "thread_id": record.thread_id, "data": data}
        notice = Notice("thread.activity", orjson.dumps(frame).decode())
        self._last = (record, notice)
        return notice


activity_frame = _ActivityFrames()  # this binding's rendering, handed to its live streams


@router.get(
    "/actors/{actor_id:path}/presence",
    responses=error_responses(*KEYED, 404),
    response_model=ActorPresence,
    summary="Whether an actor can be reached now, and how soon it usually replies",
)
async def get_presence(actor_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    actor = principal.actor if actor_id == "me" else actor_id
    return FastJSONResponse(render_presence(await presence.presence_of(rt, principal, actor)))


@router.post(
    "/threads/{thread_id}/activity",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Activity,
    summary="Say the caller is working on an answer in a thread (or idle): live streams show it, nothing keeps it",
)
@idempotent()
async def set_activity(
    thread_id: str, body: ActivityInput, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    record = await activity.set_activity(
        rt, principal, thread_id, body.state, actor=body.actor, expires_in=body.expires_in
    )
    return FastJSONResponse(activity_object(record))
