"""`/v1/conversations`: thin routes that translate and call the services."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from starlette.routing import BaseRoute

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.metadata import t01_metadata
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_conversations import names, render, roles
from aitp.bindings.openai_conversations.items import new_messages
from aitp.bindings.openai_conversations.models import (
    Conversation,
    ConversationDeleted,
    CreateConversationRequest,
    CreateItemsRequest,
    ItemList,
    MessageItem,
    UpdateConversationRequest,
)
from aitp.bindings.openai_conversations.names import conversation_names
from aitp.services import messages, threads
from aitp.services.requests import NewThread, ThreadChanges

router = APIRouter(prefix="/v1/conversations", tags=["conversations"], route_class=ApiRoute)

Include = Annotated[list[str] | None, Query(description="Accepted for compatibility; every item is whole.")]


def routes() -> list[BaseRoute]:
    return list(router.routes)


@router.post(
    "",
    responses={**roles.written("The conversation"), **error_responses(*KEYED, *BODY, 404)},
    response_model=Conversation,
    summary="Create a conversation",
)
@idempotent()
async def create_conversation(
    rt: RuntimeDep, principal: PrincipalDep, body: Annotated[CreateConversationRequest | None, Body()] = None
) -> FastJSONResponse:
    body = body or CreateConversationRequest()
    first = new_messages(body.items or [])
    with conversation_names():
        thread, actors, stored = await threads.create_thread_with_messages(
            rt, principal, NewThread(messages=first, metadata=body.metadata), names.item, to=names.TO
        )
    return FastJSONResponse(render.conversation(thread, actors), headers=roles.replaced(first, stored))


@router.get(
    "/{conversation_id}",
    responses=error_responses(*KEYED, 404),
    response_model=Conversation,
    summary="Retrieve a conversation",
)
async def get_conversation(conversation_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names(conversation_id):
        return FastJSONResponse(render.conversation(*await threads.get_thread(rt, principal, conversation_id)))


@router.post(
    "/{conversation_id}",
    responses=error_responses(*KEYED, *BODY, 404),
    response_model=Conversation,
    summary="Update a conversation's metadata",
)
@idempotent()
async def update_conversation(
    conversation_id: str, body: UpdateConversationRequest, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    changes = ThreadChanges(metadata=body.metadata)
    with conversation_names(conversation_id):
        changed = await threads.modify_thread(rt, principal, conversation_id, changes, t01_metadata)
    return FastJSONResponse(render.conversation(*changed))


@router.delete(
    "/{conversation_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=ConversationDeleted,
    summary="Delete a conversation",
)
async def delete_conversation(conversation_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names(conversation_id):
        await threads.delete_thread(rt, principal, conversation_id)
    return FastJSONResponse(render.deleted(conversation_id))


@router.post(
    "/{conversation_id}/items",
    responses={**roles.written("The items added"), **error_responses(*KEYED, *BODY, 403, 404)},
    response_model=ItemList,
    summary="Add items (up to 20, all or none)",
)
@idempotent()
async def create_items(
    conversation_id: str, body: CreateItemsRequest, rt: RuntimeDep, principal: PrincipalDep, include: Include = None
) -> FastJSONResponse:
    sent = new_messages(body.items)
    with conversation_names(conversation_id):
        created = await messages.create_messages(rt, principal, conversation_id, sent, "items", names.TO)
    return FastJSONResponse(render.item_list(created, has_more=False), headers=roles.replaced(sent, created))


@router.get(
    "/{conversation_id}/items",
    responses=error_responses(*KEYED, 400, 404),
    response_model=ItemList,
    summary="List items",
)
async def list_items(
    conversation_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    after: Annotated[str | None, Query(min_length=1)] = None,
    include: Include = None,
) -> FastJSONResponse:
    with conversation_names(conversation_id):
        records, has_more = await messages.list_messages(
            rt, principal, conversation_id, limit=limit, order=order, after=after, before=None
        )
    return FastJSONResponse(render.item_list(records, has_more))


@router.get(
    "/{conversation_id}/items/{item_id}",
    responses=error_responses(*KEYED, 404),
    response_model=MessageItem,
    summary="Retrieve an item",
)
async def get_item(
    conversation_id: str, item_id: str, rt: RuntimeDep, principal: PrincipalDep, include: Include = None
) -> FastJSONResponse:
    with conversation_names(conversation_id, item_id):
        return FastJSONResponse(render.item(await messages.get_message(rt, principal, conversation_id, item_id)))


@router.delete(
    "/{conversation_id}/items/{item_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=Conversation,
    summary="Delete an item (answers the conversation)",
)
async def delete_item(conversation_id: str, item_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names(conversation_id, item_id):
        await messages.delete_message(rt, principal, conversation_id, item_id)
        return FastJSONResponse(render.conversation(*await threads.get_thread(rt, principal, conversation_id)))
