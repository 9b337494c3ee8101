"""A thread's event log (AITP extension): every mutation with a per-thread sequence number."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from aitp.api.deps import PrincipalDep, RuntimeDep
from aitp.api.errors import ERROR_RESPONSES
from aitp.api.responses import FastJSONResponse
from aitp.models import EventList
from aitp.services import events

router = APIRouter(tags=["events"], responses=ERROR_RESPONSES)


@router.get("/threads/{thread_id}/events", response_model=EventList, summary="List a thread's events")
async def list_events(
    thread_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    after: Annotated[int, Query(ge=0, description="Return events with seq greater than this.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> FastJSONResponse:
    return FastJSONResponse(await events.list_events(rt, principal, thread_id, after=after, limit=limit))
