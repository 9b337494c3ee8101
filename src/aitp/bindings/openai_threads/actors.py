"""Actors of a thread (AITP extension)."""

from __future__ import annotations

from fastapi import APIRouter

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models import Actor, ActorInput, ActorList, DeletedObject, Identity
from aitp.services import actors, threads

router = APIRouter(prefix="/v1", tags=["actors"], route_class=ApiRoute)


@router.get(
    "/actors/me", responses=error_responses(*KEYED), response_model=Identity, summary="Who the calling key acts as"
)
async def who_am_i(rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.identity(principal, await actors.inbox_cursor(rt)))


@router.get(
    "/threads/{thread_id}/actors",
    responses=error_responses(*KEYED, 404),
    response_model=ActorList,
    summary="List a thread's actors",
)
async def list_actors(thread_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.actor_list(*await threads.get_thread(rt, principal, thread_id)))


@router.post(
    "/threads/{thread_id}/actors",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Actor,
    summary="Add an actor or update its capabilities",
)
@idempotent()
async def put_actor(thread_id: str, body: ActorInput, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.actor_in_role(*await actors.put_actor(rt, principal, thread_id, body)))


@router.delete(
    "/threads/{thread_id}/actors/{actor_id:path}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=DeletedObject,
    summary="Remove an actor",
)
async def remove_actor(thread_id: str, actor_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    await actors.remove_actor(rt, principal, thread_id, actor_id)
    return FastJSONResponse(render.deleted(actor_id, "thread.actor.deleted"))
