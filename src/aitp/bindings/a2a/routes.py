"""The A2A face's routes: per served actor an Agent Card and a JSON-RPC endpoint, and the actor's A2A
settings.

- `GET /a2a/{actor}/.well-known/agent-card.json`: the card (no key needed); `GET /.well-known/agent-card.json`
  is the card of `AITP_A2A_ROOT_AGENT` when set (clients that look at the host's root find it).
- `POST /a2a/{actor}`: A2A JSON-RPC (1.0 methods, and 0.3 ones on the same endpoint), read and bounded first
  (`intake`: Content-Type, parse errors, batches, notifications, `limits`), then dispatched by the SDK's
  `JsonRpcDispatcher` to `handler.AitpRequestHandler`; the caller's key says who calls (401 without).
- `GET`/`PUT /a2a/{actor}/settings`: whether A2A clients may reach the actor, its capabilities, and, when it
  is a remote A2A agent, its Agent Card URL, reply policy and credentials (write-only: GET shows which kinds
  are held) (the actor itself or an admin).
Requests for an actor that is not served answer 404.
"""

from __future__ import annotations

from typing import Any

import orjson
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.errors import InvalidRequestError
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from aitp.bindings.a2a import intake, params, send
from aitp.bindings.a2a.card import agent_card
from aitp.bindings.a2a.handler import CALL, AitpRequestHandler
from aitp.bindings.http import errors as http_errors
from aitp.bindings.http.context import principal_of, runtime_of
from aitp.errors import APIError, InvalidRequest
from aitp.services import a2a_agents, identities
from aitp.services.a2a_tasks import Call
from aitp.store.a2a import A2AAgentRecord

PREFIX = "/a2a/"
CARD_PATH = "/.well-known/agent-card.json"
AGENT = "aitp.a2a.agent"  # scope key: the served agent a JSON-RPC request is for


def needs_key(scope: Scope) -> bool:
    """Whether a request is one of this face's that need a key (every one but the cards)."""
    path: str = scope["path"]
    return path.startswith(PREFIX) and not path.endswith(CARD_PATH)


class Context(DefaultServerCallContextBuilder):
    """The SDK's call context, with this request's `Call` (runtime, caller, agent) in its state."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        scope = request.scope
        context.state[CALL] = Call(runtime_of(scope), principal_of(scope), scope[AGENT])
        return context


_handler, _context = AitpRequestHandler(), Context()
_dispatcher = JsonRpcDispatcher(_handler, context_builder=_context, enable_v0_3_compat=True)


def _not_served(actor: str) -> JSONResponse:
    error = InvalidRequestError(message=f"No A2A agent is served for actor {actor!r}.")
    return JSONResponse(build_error_response(None, error), status_code=404)


async def rpc(request: Request) -> Response:
    actor = request.path_params["actor_id"]
    agent = await a2a_agents.agent(runtime_of(request.scope), actor)
    if agent is None:
        return _not_served(actor)
    request.scope[AGENT] = agent
    # read once, bounded before protobuf parses anything; refusals and notifications answered here
    answer = await intake.read(request, runtime_of(request.scope).settings)
    if answer is None:
        answer = await send.serve(request, _handler, _context.build)  # SendMessage's fast path, same wire format
    if answer is None:
        answer = await params.refusal(request)
    return answer if answer is not None else await _dispatcher.handle_requests(request)


async def _card(request: Request, actor: str) -> Response:
    rt = runtime_of(request.scope)
    agent = await a2a_agents.agent(rt, actor)
    if agent is None:
        return _not_served(actor)
    profile = await rt.store.profiles.get(actor)
    verification = identities.verification_of(await rt.store.identities.get(actor), actor)
    base = str(request.base_url).rstrip("/")
    return JSONResponse(agent_card(rt.registry, agent, profile, verification, f"{base}{PREFIX}{actor}", base))


async def card(request: Request) -> Response:
    return await _card(request, request.path_params["actor_id"])


async def root_card(request: Request) -> Response:
    actor = runtime_of(request.scope).settings.a2a_root_agent
    if not actor:
        return JSONResponse({"error": "No A2A agent is served at the root (AITP_A2A_ROOT_AGENT)."}, status_code=404)
    return await _card(request, actor)


class SettingsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    serve: bool = Field(False, strict=True)
    capabilities: list[str] = Field(default_factory=list)
    agent_card_url: str | None = Field(None, max_length=2048)
    reply_policy: str = Field("addressed", strict=True, max_length=64)
    # write-only; each value checked by the service (whose refusals never repeat a secret)
    credentials: dict[str, Any] | None = Field(None, max_length=8)


def _settings(record: A2AAgentRecord) -> dict[str, Any]:
    return {
        "object": "a2a.settings",
        "actor": record.actor,
        "serve": record.serve,
        "capabilities": record.capabilities,
        "agent_card_url": record.card_url,
        "reply_policy": record.reply_policy,
        "credentials": {kind: "set" for kind in record.credentials},  # which kinds are held, never a secret
        "updated_at": record.updated_at,
    }


def _refusal(error: ValidationError) -> InvalidRequest:
    """The first problem, naming its field; without the input (which may hold a credential)."""
    first = error.errors(include_input=False, include_url=False)[0]
    param = ".".join(str(part) for part in first["loc"]) or None
    return InvalidRequest(f"Invalid A2A settings: {param or 'body'}: {first['msg']}", param=param)


async def settings(request: Request) -> Response:
    rt, principal = runtime_of(request.scope), principal_of(request.scope)
    actor = request.path_params["actor_id"]
    try:
        if request.method == "GET":
            return JSONResponse(_settings(await a2a_agents.settings_of(rt, principal, actor)))
        try:
            body = SettingsInput.model_validate(orjson.loads(await request.body() or b"{}"))
        except orjson.JSONDecodeError as error:
            raise InvalidRequest(f"Invalid A2A settings: {error}") from None
        except ValidationError as error:
            raise _refusal(error) from None
        record = await a2a_agents.put_settings(
            rt,
            principal,
            actor,
            serve=body.serve,
            capabilities=body.capabilities,
            card_url=body.agent_card_url,
            reply_policy=body.reply_policy,
            credentials=body.credentials if "credentials" in body.model_fields_set else a2a_agents.KEEP,
        )
    except APIError as error:
        return http_errors.respond(error)  # the HTTP faces' envelope: this route is plain HTTP, not JSON-RPC
    return JSONResponse(_settings(record))


def routes() -> list[BaseRoute]:
    intake.quiet_sdk_dispatcher()
    return [
        Route(PREFIX + "{actor_id}" + CARD_PATH, card, methods=["GET"]),
        Route(CARD_PATH, root_card, methods=["GET"]),
        Route(PREFIX + "{actor_id}/settings", settings, methods=["GET", "PUT"]),
        Route(PREFIX + "{actor_id}", rpc, methods=["POST"]),
    ]
