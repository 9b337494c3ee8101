"""Who an actor is (AITP extension): its identity and verification, its contact policy, and sign-in without an
admin (a challenge signed with the actor's own key)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import BODY, KEYED, error_responses
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import profiles as profile_routes
from aitp.bindings.openai_threads.models.identities import (
    ActorIdentity,
    Challenge,
    ChallengeRequest,
    ContactPolicy,
    ContactPolicyInput,
    Token,
    TokenRequest,
)
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import identities, profiles, sign_in
from aitp.store.identities import IdentityRecord

router = APIRouter(prefix="/v1", tags=["actors"], route_class=ApiRoute)


def render_policy(identity: IdentityRecord) -> dict[str, Any]:
    return {
        "object": "actor.contact_policy",
        "actor": identity.actor,
        "policy": identity.contact_policy,
        "allow": identity.contact_allow,
    }


def render_actor(seen: profiles.ActorSeen) -> dict[str, Any]:
    identity = seen.identity
    return {
        "object": "actor.identity",
        "id": identity.actor,
        "kind": identity.kind,
        "verified": identity.verified,
        "verification": identities.verification_of(identity, identity.actor),
        "profile": None if seen.profile is None else profile_routes.render(seen.profile),
        "contact_policy": render_policy(identity) if seen.shows_policy else None,
    }


async def _put_policy(rt: Runtime, principal: Principal, actor: str, body: ContactPolicyInput) -> FastJSONResponse:
    identity = await identities.set_contact_policy(rt, principal, actor, body.policy, body.allow)
    return FastJSONResponse(render_policy(identity))


@router.get(
    "/actors/me/contact_policy",
    responses=error_responses(*KEYED, 404),
    response_model=ContactPolicy,
    summary="Who may bring the caller into a thread",
)
async def get_my_contact_policy(rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render_policy(await identities.own_policy(rt, principal, principal.actor)))


@router.put(
    "/actors/me/contact_policy",
    responses=error_responses(*KEYED, *BODY, 404),
    response_model=ContactPolicy,
    summary="Set who may bring the caller into a thread",
)
async def put_my_contact_policy(body: ContactPolicyInput, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return await _put_policy(rt, principal, principal.actor, body)


@router.get(
    "/actors/{actor_id:path}/contact_policy",
    responses=error_responses(*KEYED, 403, 404),
    response_model=ContactPolicy,
    summary="Who may bring an actor into a thread (that actor's key, or an admin's)",
)
async def get_contact_policy(actor_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render_policy(await identities.own_policy(rt, principal, actor_id)))


@router.put(
    "/actors/{actor_id:path}/contact_policy",
    responses=error_responses(*KEYED, *BODY, 403, 404),
    response_model=ContactPolicy,
    summary="Set who may bring an actor into a thread (that actor's key, or an admin's)",
)
async def put_contact_policy(
    actor_id: str, body: ContactPolicyInput, rt: RuntimeDep, principal: PrincipalDep
) -> FastJSONResponse:
    return await _put_policy(rt, principal, actor_id, body)


@router.get(
    "/actors/{actor_id:path}",
    responses=error_responses(*KEYED, 404),
    response_model=ActorIdentity,
    summary="Who an actor is: its kind and what proves it",
)
async def get_actor(actor_id: str, rt: RuntimeDep, principal: PrincipalDep) -> FastJSONResponse:
    return FastJSONResponse(render_actor(await profiles.actor_seen(rt, principal, actor_id)))


def _origin(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _address(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


@router.post(
    "/auth/challenge",
    responses=error_responses(*BODY, 403, 429),
    response_model=Challenge,
    summary="A single-use nonce for a domain or NEAR actor to sign (no key needed)",
)
async def create_challenge(body: ChallengeRequest, request: Request, rt: RuntimeDep) -> FastJSONResponse:
    issued = await sign_in.challenge(rt, body.actor, _origin(request), _address(request))
    return FastJSONResponse(
        {
            "object": "auth.challenge",
            "actor": issued.actor,
            "kind": issued.kind,
            "nonce": issued.nonce,
            "expires_at": issued.expires_at,
            "audience": issued.audience,
            "message": issued.message,
            "recipient": issued.recipient,
        }
    )


@router.post(
    "/auth/token",
    responses=error_responses(*BODY, 401, 403, 429),
    response_model=Token,
    summary="Exchange a signed challenge for an API key of the actor that signed it (no key needed)",
)
# not @idempotent: no caller to keep a record for (the route is public), and a nonce works once anyway
async def create_token(body: TokenRequest, request: Request, rt: RuntimeDep) -> FastJSONResponse:
    signed = await sign_in.token(rt, body.actor, body.nonce, body.proof, _origin(request), _address(request))
    record = signed.key.record
    return FastJSONResponse(
        {
            "object": "auth.token",
            "id": record.id,
            "actor": record.actor,
            "key": signed.key.secret,
            "expires_at": record.expires_at,
            "scopes": record.scopes,
            "verification": identities.verification_of(signed.identity, record.actor),
        }
    )
