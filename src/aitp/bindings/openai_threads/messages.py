"""Messages of a thread (OpenAI Assistants v2)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from aitp.bindings.http.context import principal_of, runtime_of
from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.json_body import read_body
from aitp.bindings.http.responses import FastJSONResponse, page
from aitp.bindings.http.route import ApiRoute, served_by
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models import (
    CreateMessageRequest,
    DeletedObject,
    ListPage,
    Message,
    ModifyMessageRequest,
)
from aitp.services import messages

router = APIRouter(prefix="/v1", tags=["messages"], route_class=ApiRoute)
_create_message_body = TypeAdapter(CreateMessageRequest)


async def post_message(request: Request) -> Response:
    """POST /v1/threads/{thread_id}/messages, the ingest hot path, as a plain Starlette endpoint: its
    arguments read here, by the rules FastAPI would follow for `create_message`'s declaration."""
    scope = request.scope
    body = await read_body(request, _create_message_body)
    return await create_message(request.path_params["thread_id"], body, runtime_of(scope), principal_of(scope))


@router.post(
    "/threads/{thread_id}/messages",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Message,
    summary="Create a message",
)
@idempotent()
@served_by(post_message)
async def create_message(
    thread_id: str, body: CreateMessageRequest, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    return FastJSONResponse(render.message(await messages.create_message(rt, principal, thread_id, body)))


@router.get(
    "/threads/{thread_id}/messages",
    responses=error_responses(*KEYED, 400, 404),
    response_model=ListPage[Message],
    summary="List messages",
)
async def list_messages(
    thread_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    after: Annotated[str | None, Query(min_length=1)] = None,
    before: Annotated[str | None, Query(min_length=1)] = None,
    run_id: Annotated[str | None, Query(description="Accepted for OpenAI compatibility; aitp has no runs.")] = None,
) -> FastJSONResponse:
    records, has_more = await messages.list_messages(
        rt, principal, thread_id, limit=limit, order=order, after=after, before=before
    )
    return FastJSONResponse(page([render.message(r) for r in records], has_more))


@router.get(
    "/threads/{thread_id}/messages/{message_id}",
    responses=error_responses(*KEYED, 404),
    response_model=Message,
    summary="Retrieve a message",
)
async def get_message(thread_id: str, message_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.message(await messages.get_message(rt, principal, thread_id, message_id)))


@router.post(
    "/threads/{thread_id}/messages/{message_id}",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Message,
    summary="Modify a message's metadata",
)
@idempotent()
async def modify_message(
    thread_id: str,
    message_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    body: Annotated[ModifyMessageRequest | None, Body()] = None,
) -> FastJSONResponse:
    metadata = None if body is None else body.metadata
    return FastJSONResponse(
        render.message(await messages.modify_message(rt, principal, thread_id, message_id, metadata))
    )


@router.delete(
    "/threads/{thread_id}/messages/{message_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=DeletedObject,
    summary="Delete a message",
)
async def delete_message(thread_id: str, message_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    await messages.delete_message(rt, principal, thread_id, message_id)
    return FastJSONResponse(render.deleted(message_id, "thread.message.deleted"))
