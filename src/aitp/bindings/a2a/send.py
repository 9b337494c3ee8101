"""SendMessage (A2A 1.0, JSON-RPC) answered without the SDK's generic dispatcher: the same request and
response on the wire, in a fraction of the CPU.

The SDK's `JsonRpcDispatcher` answers every method through layers that cost as much as our handler on the
hottest call (py-spy, bench/a2a_send.py: 14% of the server's CPU per SendMessage, our handler 18%): a
telemetry span, the `jsonrpc` package's request and response objects, the version check, the standard
library's JSON both ways. Here the common case, a well-formed 1.0 `SendMessage` with an id, parsed by
orjson and bounded (`intake.read`), has its params read by the SDK's own parser (`ParseDict` into
`SendMessageRequest`, unknown fields ignored as the dispatcher does), handled by the same
`AitpRequestHandler`, and its task printed as protobuf's `MessageToDict` prints it for the dispatcher
(`tasks.task_json`, without building the protobuf Task);
errors are the SDK's (`build_error_response`). Anything else (another method, a 0.3 client, no or a bad
version header, a malformed request or params) returns None and goes to the dispatcher, so its answers,
errors included, stay the SDK's own.

Why a second entry and not only the dispatcher: it is a measured speed path (the layers it skips were as
costly as the handler itself), and it shares everything but those layers with the dispatcher's path: the
same handler method (`AitpRequestHandler.send`: the message's checks, its translation, the task service),
the SDK's method table (`METHOD_TO_MODEL`, checked at import: a change there fails loudly), its params
model and parser, its error responses, and the same intake and limits before it (`routes.rpc`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import orjson
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.errors import A2AError, InternalError
from google.protobuf.json_format import ParseDict
from packaging.version import InvalidVersion, Version
from starlette.requests import Request
from starlette.responses import Response

from aitp.bindings.a2a import tasks as render
from aitp.bindings.a2a.handler import AitpRequestHandler

log = logging.getLogger(__name__)

METHOD = "SendMessage"
if JsonRpcDispatcher.METHOD_TO_MODEL.get(METHOD) is not SendMessageRequest:  # the dispatcher's own table
    raise ImportError(f"a2a-sdk: the JSON-RPC dispatcher no longer reads {METHOD} as SendMessageRequest")
FIELDS = frozenset({"jsonrpc", "method", "params", "id"})  # a JSON-RPC 2.0 request's (the dispatcher's check)
IDS = ("messageId", "contextId", "taskId")
MESSAGE_FIELDS = frozenset({*IDS, "role", "parts"})
ROLES = frozenset(Role.keys())


@functools.lru_cache(maxsize=32)
def _version_one(version: str) -> bool:
    """Whether an A2A-Version header names 1.x, as the dispatcher's `validate_version` decides (the major
    version; none means 0.3)."""
    try:
        return Version(version).major == 1
    except InvalidVersion:
        return False


def _request_id(body: Any) -> str | int | None:
    """The id of a well-formed SendMessage request this path answers; None for anything the dispatcher
    should see (it answers those, errors included, as the SDK does)."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or body.get("method") != METHOD:
        return None
    if not body.keys() <= FIELDS or not isinstance(body.get("params"), dict):
        return None
    request_id = body.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    return request_id


def _text_message(params: dict[str, Any]) -> SendMessageRequest | None:
    """The request `ParseDict` makes of params holding only a text message with string ids (what most
    clients send), built directly (ParseDict was a sixth of SendMessage's own CPU); None for anything else."""
    message = params.get("message")
    if params.keys() != {"message"} or not isinstance(message, dict) or not message.keys() <= MESSAGE_FIELDS:
        return None
    parts, role = message.get("parts"), message.get("role", "ROLE_UNSPECIFIED")
    if role not in ROLES or not all(isinstance(message.get(f, ""), str) for f in IDS) or not isinstance(parts, list):
        return None
    if not all(isinstance(p, dict) and p.keys() == {"text"} and isinstance(p["text"], str) for p in parts):
        return None
    built = Message(
        message_id=message.get("messageId", ""),
        context_id=message.get("contextId", ""),
        task_id=message.get("taskId", ""),
        role=Role.Value(role),
        parts=[Part(text=p["text"]) for p in parts],
    )
    return SendMessageRequest(message=built)


def _answer(payload: dict[str, Any]) -> Response:
    return Response(orjson.dumps(payload), media_type="application/json")


async def serve(
    request: Request, handler: AitpRequestHandler, build: Callable[[Request], ServerCallContext]
) -> Response | None:
    """The answer to a SendMessage this path serves, or None to hand the request to the dispatcher.
    `build` makes the call context (`routes.Context().build`)."""
    if not _version_one(request.headers.get(VERSION_HEADER, "0.3")):
        return None
    body = await request.json()  # as `intake.read` parsed and bounded it
    request_id = _request_id(body)
    if request_id is None:
        return None
    try:
        params = _text_message(body["params"]) or ParseDict(
            body["params"], SendMessageRequest(), ignore_unknown_fields=True
        )
    except Exception:  # noqa: BLE001 - the dispatcher answers the same parse error as the SDK does
        return None
    context = build(request)
    context.tenant = params.tenant
    context.state["method"] = METHOD
    context.state["request_id"] = request_id
    try:
        view, history = await handler.send(params, context)
    except A2AError as error:
        return _answer(build_error_response(request_id, error))
    except Exception as error:  # the dispatcher's answer to what a handler did not expect
        log.exception("Unhandled exception")
        return _answer(build_error_response(request_id, InternalError(message=str(error))))
    return _answer({"result": {"task": render.task_json(view, history)}, "id": request_id, "jsonrpc": "2.0"})
