"""Actor profiles (AITP extension): an actor's display name, avatar, description and accent colour."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads.models.profiles import Profile, ProfileInput, ProfileList
from aitp.services import profiles
from aitp.services.identities import verification_of

router = APIRouter(prefix="/v1", tags=["actors"], route_class=ApiRoute)


def render(shown: profiles.Shown) -> dict[str, Any]:
    record, identity = shown
    return {
        "object": "actor.profile",
        "actor": record.actor,
        "display_name": record.display_name,
        "avatar_url": record.avatar_url,
        "description": record.description,
        "accent_color": record.accent_color,
        "updated_at": record.updated_at,
        "verified": identity is not None and identity.verified,
        "verification": verification_of(identity, record.actor),
    }


@router.get(
    "/actors/me/profile", responses=error_responses(*KEYED), response_model=Profile, summary="The caller's profile"
)
async def get_my_profile(rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render(await profiles.own_profile(rt, principal)))


async def _put(rt: RuntimeDep, principal: PrincipalDep, actor: str, body: ProfileInput) -> FastJSONResponse:
    shown = await profiles.put_profile(
        rt,
        principal,
        actor,
        display_name=body.display_name,
        avatar_url=body.avatar_url,
        description=body.description,
        accent_color=body.accent_color,
    )
    return FastJSONResponse(render(shown))


@router.put(
    "/actors/me/profile",
    responses=error_responses(*KEYED, *BODY, 409),
    response_model=Profile,
    summary="Set the caller's profile (the whole record)",
)
async def put_my_profile(body: ProfileInput, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return await _put(rt, principal, principal.actor, body)


@router.get(
    "/actors/{actor_id}/profile",
    responses=error_responses(*KEYED, 404),
    response_model=Profile,
    summary="An actor's profile (a verified actor's is public; anyone's to itself and admins)",
)
async def get_profile(actor_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render(await profiles.visible_profile(rt, principal, actor_id)))


@router.put(
    "/actors/{actor_id}/profile",
    responses=error_responses(*KEYED, *BODY, 403, 409),
    response_model=Profile,
    summary="Set an actor's profile (that actor's key, or an admin's)",
)
async def put_profile(actor_id: str, body: ProfileInput, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return await _put(rt, principal, actor_id, body)


@router.get(
    "/threads/{thread_id}/profiles",
    responses=error_responses(*KEYED, 404),
    response_model=ProfileList,
    summary="The profiles of a thread's actors",
)
async def list_thread_profiles(thread_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    shown = await profiles.thread_profiles(rt, principal, thread_id)
    return FastJSONResponse({"object": "list", "data": [render(s) for s in shown]})
