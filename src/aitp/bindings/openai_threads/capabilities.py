"""The capability registry and each thread's negotiated capabilities (AITP extension)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models import (
    Capability,
    CapabilityExampleList,
    CapabilityList,
    RegisterCapabilityRequest,
    ThreadCapabilities,
)
from aitp.services import capabilities, registration

router = APIRouter(prefix="/v1", tags=["capabilities"], route_class=ApiRoute)


@router.get(
    "/capabilities",
    responses=error_responses(*KEYED),
    response_model=CapabilityList,
    summary="List registered capabilities",
)
async def list_capabilities(rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(
        {"object": "list", "data": [render.capability(c) for c in capabilities.list_capabilities(rt)]}
    )


@router.post(
    "/capabilities",
    response_model=Capability,
    status_code=201,
    summary="Register a capability or a new version of one (admin, or the `capabilities:write` scope)",
    responses={
        200: {"model": Capability, "description": "Already registered with identical content"},
        **error_responses(*KEYED, *BODY, 403),
    },
)
@idempotent()
async def register_capability(
    body: RegisterCapabilityRequest, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    capability, created = await registration.register_capability(rt, principal, body)
    return FastJSONResponse(render.capability(capability), status_code=201 if created else 200)


@router.get(
    "/capabilities/{capability_id}",
    responses=error_responses(*KEYED, 404),
    response_model=Capability,
    summary="Retrieve a capability",
)
async def get_capability(capability_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.capability(await capabilities.get_capability(rt, capability_id)))


@router.get(
    "/capabilities/{capability_id}/{version}/schema.json",
    responses=error_responses(404),
    response_model=dict[str, Any],
    summary="A capability version's schema as published (public: `$schema` URLs must resolve)",
)
async def get_schema(capability_id: str, version: str, rt: RuntimeDep) -> FastJSONResponse:
    return FastJSONResponse(await capabilities.get_schema(rt, capability_id, version))


@router.get(
    "/capabilities/{capability_id}/{version}/examples",
    responses=error_responses(404),
    response_model=CapabilityExampleList,
    summary="A capability version's example messages (public, like its schema)",
)
async def get_examples(capability_id: str, version: str, rt: RuntimeDep) -> FastJSONResponse:
    return FastJSONResponse(render.capability_examples(await capabilities.get_examples(rt, capability_id, version)))


@router.get(
    "/threads/{thread_id}/capabilities",
    responses=error_responses(*KEYED, 404),
    response_model=ThreadCapabilities,
    summary="The version of each declared capability that every actor of the thread can read",
)
async def thread_capabilities(thread_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    table = await capabilities.thread_capabilities(rt, principal, thread_id)
    return FastJSONResponse(render.capability_table(thread_id, table))
