"""One-time codes (AITP extension): WebSocket tickets and sign-in links, so no API key travels in a URL."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request

from aitp.bindings.http.context import key_hash_of
from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import render
from aitp.bindings.openai_threads.models.codes import (
    CreateSignInCodeRequest,
    SignedIn,
    SignInCode,
    SignInRequest,
    Ticket,
)
from aitp.services import codes
from aitp.services import sign_in as sign_ins

router = APIRouter(prefix="/v1", tags=["keys"], route_class=ApiRoute)


@router.post(
    "/tickets",
    responses=error_responses(*KEYED, *BODY),
    response_model=Ticket,
    summary="A one-time WebSocket ticket (valid 30 s): connect with ?ticket= instead of a key",
)
@idempotent(secret="ticket")
async def create_ticket(request: Request, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    issued = await codes.issue(rt, principal, key_hash_of(request.scope), codes.WEBSOCKET)
    body = {"object": "websocket.ticket", "ticket": issued.secret, "expires_at": int(issued.record.expires_at)}
    return FastJSONResponse(body)


@router.post(
    "/sign-in-codes",
    responses=error_responses(*KEYED, *BODY, 403),
    response_model=SignInCode,
    summary="A one-time sign-in code for the web UI's link /#code=<code>",
)
@idempotent(secret="code")
async def create_sign_in_code(
    request: Request,
    rt: RuntimeDep,
    principal: PrincipalDep,
    body: Annotated[CreateSignInCodeRequest | None, Body()] = None,
) -> FastJSONResponse:
    body = body or CreateSignInCodeRequest()  # no body: a code for the caller, valid 15 minutes
    issued = await codes.issue(
        rt, principal, key_hash_of(request.scope), codes.SIGN_IN, actor=body.actor, ttl=body.expires_in
    )
    record = issued.record
    answer = {
        "object": "sign_in_code",
        "code": issued.secret,
        "actor": record.actor,
        "expires_at": int(record.expires_at),
    }
    return FastJSONResponse(answer)


@router.post(
    "/sign-in",
    responses=error_responses(401, *BODY, 429),
    response_model=SignedIn,
    summary="Exchange a one-time sign-in code for a new key of its actor (no key needed)",
)
# not @idempotent: no caller to keep a record for (the route is public), and a code works once anyway
async def sign_in(request: Request, body: SignInRequest, rt: RuntimeDep) -> FastJSONResponse:
    address = request.client.host if request.client is not None else None
    created = await sign_ins.redeem_code(rt, body.code, address)  # 429 past the refusals allowed from here
    return FastJSONResponse({**render.api_key(created.record), "key": created.secret})
