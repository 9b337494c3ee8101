"""API key administration (admin keys only)."""

from __future__ import annotations

from fastapi import APIRouter

from aitp.bindings.http.deps import AdminDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models import ApiKeyList, CreatedApiKey, CreateKeyRequest, DeletedObject
from aitp.gate import Gate
from aitp.services import keys
from aitp.services.connections import stream_slots

router = APIRouter(prefix="/v1", tags=["keys"], route_class=ApiRoute)


@router.post(
    "/keys",
    responses=error_responses(*KEYED, *BODY, 403),
    response_model=CreatedApiKey,
    summary="Create an API key (the secret is shown once)",
)
@idempotent(secret="key")
async def create_key(body: CreateKeyRequest, rt: RuntimeDep, admin: AdminDep) -> FastJSONResponse:
    created = await keys.create_key(
        rt.store, body.actor, admin=body.admin, scopes=list(body.scopes), contact_policy=rt.settings.contact_policy
    )
    return FastJSONResponse({**render.api_key(created.record), "key": created.secret})


@router.get("/keys", responses=error_responses(*KEYED, 403), response_model=ApiKeyList, summary="List API keys")
async def list_keys(rt: RuntimeDep, admin: AdminDep) -> FastJSONResponse:
    return FastJSONResponse({"object": "list", "data": [render.api_key(k) for k in await keys.list_keys(rt.store)]})


@router.delete(
    "/keys/{key_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=DeletedObject,
    summary="Revoke an API key",
)
async def revoke_key(key_id: str, rt: RuntimeDep, admin: AdminDep) -> FastJSONResponse:
    await keys.revoke_key(rt.store, key_id, rt.state(Gate).principals, rt.state(stream_slots))
    return FastJSONResponse(render.deleted(key_id, "api_key.deleted"))
