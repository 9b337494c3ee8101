"""Customer sessions (AITP extension): a shop's backend gets a short-lived key for a customer it signed in;
a shop that allows it, a session for a visitor who is not signed in (no key needed)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.idempotency import idempotent
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads.models.customer_sessions import (
    CreateAnonymousSessionRequest,
    CreateCustomerSessionRequest,
    CustomerSession,
    CustomerSessionSettings,
    CustomerSessionSettingsInput,
)
from aitp.services import customer_sessions, embed_origins
from aitp.store.identities import IdentityRecord

router = APIRouter(prefix="/v1", tags=["actors"], route_class=ApiRoute)


@router.post(
    "/customer_sessions",
    responses=error_responses(*KEYED, *BODY, 403, 404, 409),
    response_model=CustomerSession,
    summary="A short-lived key for a customer the shop signed in on its website (the secret is shown once)",
)
@idempotent(secret="key")
async def create_customer_session(
    body: CreateCustomerSessionRequest, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    session = await customer_sessions.create_session(
        rt,
        principal,
        customer=body.customer,
        shop=body.shop,
        display_name=body.display_name,
        expires_in=body.expires_in,
        upgrade_from=body.upgrade_from,
    )
    return FastJSONResponse(_session(session))


@router.post(
    "/customer_sessions/anonymous",
    responses=error_responses(*BODY, 403, 429),
    response_model=CustomerSession,
    summary="A short-lived key for a visitor not signed in, of a shop that allows it (no key needed)",
)
# not @idempotent: no caller to keep a record for (the route is public); each visitor is a new actor
async def create_anonymous_session(
    body: CreateAnonymousSessionRequest, request: Request, rt: RuntimeDep
) -> FastJSONResponse:
    address = request.client.host if request.client is not None else None
    return FastJSONResponse(_session(await customer_sessions.create_anonymous(rt, body.shop, address)))


@router.get(
    "/customer_sessions/settings",
    responses=error_responses(*KEYED, 400, 403, 404),
    response_model=CustomerSessionSettings,
    summary="The shop's customer session settings",
)
async def get_customer_session_settings(
    rt: RuntimeDep, principal: PrincipalDep, shop: Annotated[str | None, Query(max_length=254)] = None
) -> FastJSONResponse:
    return FastJSONResponse(_settings(await customer_sessions.settings_of(rt, principal, shop)))


@router.put(
    "/customer_sessions/settings",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=CustomerSessionSettings,
    summary="Let visitors not signed in get sessions as the shop's customers, or stop",
)
async def put_customer_session_settings(
    body: CustomerSessionSettingsInput, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    stored = await customer_sessions.set_settings(
        rt, principal, body.shop, anonymous=body.anonymous, embed_origins=body.embed_origins
    )
    return FastJSONResponse(_settings(stored))


def _session(session: customer_sessions.CustomerSession) -> dict[str, Any]:
    return {
        "object": "customer_session",
        "actor": session.actor,
        "shop": session.shop,
        "key": session.key.secret,
        "expires_at": session.expires_at,
    }


def _settings(identity: IdentityRecord) -> dict[str, Any]:
    return {
        "object": "customer_session.settings",
        "shop": identity.actor,
        "anonymous": identity.anonymous_visitors,
        "embed_origins": identity.embed_origins,
        "frame_ancestors": embed_origins.allowed(identity),
    }
