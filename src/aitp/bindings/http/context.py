"""One request's context, settled once before any route runs: who it acts as, that its key may make one
more request, and how much body it may send.

`ContextMiddleware` (pure ASGI, as Starlette's AuthenticationMiddleware) takes every HTTP request and
WebSocket connect of the app, in this order:

1. its key, `Authorization: Bearer <key>`, is resolved to its principal (401), before a byte of the body is
   read. Browsers cannot set headers on a WebSocket: there a one-time `?ticket=` (`aitp.services.codes`,
   from `POST /v1/tickets`) stands for the key instead. `?token=<key>` on a WebSocket is deprecated, still
   accepted for old clients only (it puts the key in the URL; their logs are redacted, `aitp.redaction`);
2. the request is counted against that key's rate (429); both through the app's `aitp.gate.Gate`;
3. its body is limited (413 `request_too_large`): a declared `Content-Length` over the limit is refused
   unread, a streamed one is cut at the chunk that crosses it (whoever reads the body, a route or a
   wrapper of one, never holds more), and the answer says `Connection: close`;

then it leaves the principal and the runtime in the scope (`principal_of`, `runtime_of`) for the routes and
what wraps them (idempotency). Requests the app serves without a key (`public`, told by the routes) are
not asked for one. Refusals are rendered by the face the request came through (`refuse`): an error
envelope over HTTP, a close code on a WebSocket. The request head and connections are limited below the
app, by the server (`aitp.server`).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aitp.auth import bearer_token, hash_key
from aitp.errors import APIError, PayloadTooLarge
from aitp.gate import Gate
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import codes

PRINCIPAL = "aitp.principal"  # scope key: who the request acts as (absent on public requests)
KEY_HASH = "aitp.key_hash"  # scope key: the hash of that principal's key (a socket's posts check it again)
RUNTIME = "aitp.runtime"  # scope key: the app's runtime

Refuse = Callable[[APIError, Scope], ASGIApp]  # the answer to a request refused here, as its face says it


def principal_of(scope: Scope) -> Principal:
    """Who the request acts as (a request to a route that takes a key always has one)."""
    principal: Principal = scope[PRINCIPAL]
    return principal


def runtime_of(scope: Scope) -> Runtime:
    runtime: Runtime = scope[RUNTIME]
    return runtime


def key_hash_of(scope: Scope) -> str:
    """The hash of the key the request was authenticated with."""
    key_hash: str = scope[KEY_HASH]
    return key_hash


def token_of(scope: Scope) -> str:
    """The request's key: the `Authorization: Bearer` header, else a WebSocket's deprecated `?token=` (401 if
    neither)."""
    authorization = Headers(scope=scope).get("authorization")
    if scope["type"] == "websocket" and not authorization:
        if token := QueryParams(scope["query_string"]).get("token"):
            return token
    return bearer_token(authorization)


async def _admit(runtime: Runtime, scope: Scope) -> tuple[Principal, str]:
    """Who the request acts as and its key's hash: by its key, or by a WebSocket's one-time ticket."""
    if scope["type"] == "websocket" and (ticket := QueryParams(scope["query_string"]).get("ticket")):
        return await codes.admit_ticket(runtime, ticket)
    key_hash = hash_key(token_of(scope))
    return await runtime.state(Gate).admit_hash(key_hash), key_hash


def too_large(limit: int) -> PayloadTooLarge:
    error = PayloadTooLarge(
        f"The request body is larger than the server accepts ({limit} bytes).", code="request_too_large"
    )
    error.headers = {"Connection": "close"}  # the rest of the body is not read
    return error


class BodyTooLarge(Exception):
    """Raised into the app from `receive` when the streamed body crosses the limit."""


class ContextMiddleware:
    def __init__(self, app: ASGIApp, runtime: Runtime, public: Callable[[Scope], bool], refuse: Refuse) -> None:
        self.app = app
        self.runtime = runtime
        self.public = public
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        try:
            limit = await self.settle(scope)
        except APIError as error:
            await self.refuse(error, scope)(scope, receive, send)
            return
        if limit is None:
            await self.app(scope, receive, send)
        else:
            await self._limited(scope, receive, send, limit)

    async def settle(self, scope: Scope) -> int | None:
        """Put the runtime, and the principal of a request that needs one, in the scope; the limit its body
        is to be counted against as it streams in (None: nothing to count). Raises the refusal."""
        scope[RUNTIME] = self.runtime
        if not self.public(scope):
            scope[PRINCIPAL], scope[KEY_HASH] = await _admit(self.runtime, scope)
        limit = self.runtime.settings.max_body_bytes  # read per request: changed settings apply at once
        if scope["type"] != "http" or limit <= 0:
            return None
        declared = _declared_length(scope)
        if declared is None:
            return limit  # streamed (chunked): counted as it arrives
        if declared > limit:
            raise too_large(limit)
        # The server frames the body by its Content-Length: the app is handed that many bytes, never more,
        # so there is nothing to count (counting wrapped receive and send on every request: bench/a2a_send.py)
        return None

    async def _limited(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        """Run the app on a body counted as it streams in: the chunk that crosses `limit` is never handed
        over, and the app's own answer is replaced by the 413."""
        received = 0
        exceeded = False
        response_started = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if exceeded:
                return  # the app's answer to a body it never got in full: ours replaces it
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            # FastAPI turns errors while reading the body into a 400 of its own; anything else that
            # escapes after the limit was crossed is that same error in another wrapping.
            if not exceeded:
                raise
        if exceeded and not response_started:
            await self.refuse(too_large(limit), scope)(scope, receive, send)


def _declared_length(scope: Scope) -> int | None:
    """The request's `Content-Length`; None when its body is streamed (no length, or a `Transfer-Encoding`,
    which frames the body instead) or the length cannot be trusted (unreadable, negative, given twice)."""
    declared = None
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and declared is not None):
            return None  # framed otherwise, or framed twice: counted
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                return None
    return declared if declared is None or declared >= 0 else None
