"""`/v1/conversations`: thin routes that translate and call the services."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from starlette.routing import BaseRoute

from aitp.bindings.openai_conversations import render, roles
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
from aitp.bindings.openai_threads.deps import PrincipalDep, RuntimeDep
from aitp.bindings.openai_threads.errors import BODY, KEYED, error_responses
from aitp.bindings.openai_threads.idempotency import idempotent
from aitp.bindings.openai_threads.responses import FastJSONResponse
from aitp.bindings.openai_threads.route import ApiRoute
from aitp.errors import APIError
from aitp.services import messages, threads
from aitp.services.requests import NewThread, ThreadChanges

router = APIRouter(prefix="/v1/conversations", tags=["conversations"], route_class=ApiRoute)

Include = Annotated[list[str] | None, Query(description="Accepted for compatibility; every item is whole.")]


def routes() -> list[BaseRoute]:
    return list(router.routes)


# The services name what they refuse as the Threads face calls it; here the same things have other names.
PARAMS = {"thread_id": "conversation_id", "message_id": "item_id"}
CODES = {"thread_not_found": "conversation_not_found", "message_not_found": "item_not_found"}
WORDS = {"No thread found": "No conversation found", "No message found": "No item found"}
# A message's field that an item carries at its top level: `items[i].metadata.to` is the item's `to`.
ITEM_FIELD = re.compile(r"(items\[\d+\])\.metadata\.to(?![\w$-])")


@contextlib.contextmanager
def conversation_names() -> Iterator[None]:
    """Refusals with this face's names: `conversation_id`, `item_id` (`conversation_not_found`,
    `item_not_found`), `items[i]` for a new thread's first messages (`messages[i]` to the service), and
    `items[i].to` for what the service calls the message's `metadata.to`."""
    try:
        yield
    except APIError as error:
        if error.code in CODES:
            error.code = CODES[error.code]
            for threads_words, own in WORDS.items():
                error.message = error.message.replace(threads_words, own)
        param = error.param
        if param in PARAMS:
            error.param = PARAMS[param]
        elif param is not None and param.startswith("messages["):
            named = param[: param.index("]") + 1]
            error.param = "items" + param.removeprefix("messages")
            error.message = error.message.replace(named, "items" + named.removeprefix("messages"))
        if error.param is not None and ITEM_FIELD.match(error.param):
            error.param = ITEM_FIELD.sub(r"\1.to", error.param)
            error.message = ITEM_FIELD.sub(r"\1.to", error.message)
        raise


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
            rt, principal, NewThread(messages=first, metadata=body.metadata)
        )
    return FastJSONResponse(render.conversation(thread, actors), headers=roles.replaced(first, stored))


@router.get(
    "/{conversation_id}",
    responses=error_responses(*KEYED, 404),
    response_model=Conversation,
    summary="Retrieve a conversation",
)
async def get_conversation(conversation_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names():
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
    with conversation_names():
        changed = await threads.modify_thread(rt, principal, conversation_id, ThreadChanges(metadata=body.metadata))
    return FastJSONResponse(render.conversation(*changed))


@router.delete(
    "/{conversation_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=ConversationDeleted,
    summary="Delete a conversation",
)
async def delete_conversation(conversation_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names():
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
    with conversation_names():
        created = await messages.create_messages(rt, principal, conversation_id, sent, "items")
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
    with conversation_names():
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
    with conversation_names():
        return FastJSONResponse(render.item(await messages.get_message(rt, principal, conversation_id, item_id)))


@router.delete(
    "/{conversation_id}/items/{item_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=Conversation,
    summary="Delete an item (answers the conversation)",
)
async def delete_item(conversation_id: str, item_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    with conversation_names():
        await messages.delete_message(rt, principal, conversation_id, item_id)
        return FastJSONResponse(render.conversation(*await threads.get_thread(rt, principal, conversation_id)))
