"""Threads: OpenAI Assistants v2 routes plus the AITP-T01 `POST /v1/thread` alias."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from fastapi.routing import APIRoute

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.metadata import t01_metadata
from aitp.bindings.http.responses import FastJSONResponse, page
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models import (
    CreateThreadRequest,
    DeletedObject,
    ListPage,
    ModifyThreadRequest,
    Thread,
)
from aitp.bindings.openai_threads.models.search import ThreadSearchResults
from aitp.services import search, threads

router = APIRouter(prefix="/v1", tags=["threads"], route_class=ApiRoute)


@router.post(
    "/threads", responses=error_responses(*KEYED, *BODY, 403, 404), response_model=Thread, summary="Create a thread"
)
@router.post(
    "/thread",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=Thread,
    summary="Create a thread (AITP-T01 path)",
)
@idempotent()
async def create_thread(
    rt: RuntimeDep, principal: PrincipalDep, body: Annotated[CreateThreadRequest | None, Body()] = None
) -> FastJSONResponse:
    return FastJSONResponse(render.thread(*await threads.create_thread(rt, principal, body or CreateThreadRequest())))


@router.get(
    "/threads",
    responses=error_responses(*KEYED, 400),
    response_model=ListPage[Thread],
    summary="List the caller's threads",
)
async def list_threads(
    rt: RuntimeDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    after: Annotated[str | None, Query(min_length=1)] = None,
    before: Annotated[str | None, Query(min_length=1)] = None,
) -> FastJSONResponse:
    items, has_more = await threads.list_threads(rt, principal, limit=limit, order=order, after=after, before=before)
    return FastJSONResponse(page([render.thread(*item) for item in items], has_more))


@router.get(
    "/threads/search",
    responses=error_responses(*KEYED, 400),
    response_model=ThreadSearchResults,
    summary="Search the caller's threads by the words of their messages",
)
async def search_threads(
    rt: RuntimeDep,
    principal: PrincipalDep,
    q: Annotated[
        str,
        Query(
            description=f"Words the message must all have (case and accents do not matter; at most "
            f"{search.MAX_TERMS} words, {search.MAX_QUERY_CHARS} characters)."
        ),
    ],
    limit: Annotated[int, Query(ge=1, le=search.MAX_LIMIT)] = 20,
) -> FastJSONResponse:
    matches, has_more = await search.search_threads(rt, principal, q, limit)
    return FastJSONResponse({"object": "list", "data": [_search_result(m) for m in matches], "has_more": has_more})


def _search_result(match: search.ThreadMatch) -> dict[str, Any]:
    return {
        "object": "thread.search_result",
        "thread": render.thread(match.thread, match.actors),
        "message": {
            "id": match.message_id,
            "created_at": match.created_at,
            "actor": match.author,
            "snippet": match.excerpt,
        },
    }


@router.get(
    "/threads/{thread_id}",
    responses=error_responses(*KEYED, 404),
    response_model=Thread,
    summary="Retrieve a thread",
)
async def get_thread(thread_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render.thread(*await threads.get_thread(rt, principal, thread_id)))


@router.post(
    "/threads/{thread_id}",
    responses=error_responses(*KEYED, *BODY, 404),
    response_model=Thread,
    summary="Modify a thread (empty body: retrieve)",
)
@idempotent()
async def modify_thread(
    thread_id: str,
    rt: RuntimeDep,
    principal: PrincipalDep,
    body: Annotated[ModifyThreadRequest | None, Body()] = None,
) -> FastJSONResponse:
    changed = await threads.modify_thread(rt, principal, thread_id, body or ModifyThreadRequest(), t01_metadata)
    return FastJSONResponse(render.thread(*changed))


@router.delete(
    "/threads/{thread_id}",
    responses=error_responses(*KEYED, 403, 404),
    response_model=DeletedObject,
    summary="Delete a thread",
)
async def delete_thread(thread_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    await threads.delete_thread(rt, principal, thread_id)
    return FastJSONResponse(render.deleted(thread_id, "thread.deleted"))


def _search_is_no_thread_id() -> None:
    """`/v1/threads/search` is the search's alone: the routes of `/v1/threads/{thread_id}` take any id but
    `search` (no thread has it), so a POST or DELETE there is 405 with `Allow: GET`, as documented, not an
    attempt on a thread named "search". Their template stays as it is; only what their path matches changes."""
    any_id = "(?P<thread_id>[^/]+)"
    for route in router.routes:
        if isinstance(route, APIRoute) and route.path == "/v1/threads/{thread_id}":
            assert any_id in route.path_regex.pattern, route.path_regex.pattern  # how Starlette compiles the path
            route.path_regex = re.compile(route.path_regex.pattern.replace(any_id, "(?P<thread_id>(?!search$)[^/]+)"))


_search_is_no_thread_id()
