"""`Idempotency-Key` on a route that declares it (`@idempotent`): a retry gets the first response instead of
a second write.

The declaration is the route's: its endpoint is marked `@idempotent()` (or `@idempotent(secret="key")` where
the response shows a secret once), and the route class (`.route.ApiRoute`) wraps the route's ASGI app in
`IdempotentWrites` and documents the header on its operation. The wrapper runs
after routing, behind the context middleware (`.context`), so the request's key is checked and
counted and its body limited already: it buffers the body to fingerprint it (method, path, body), reserves
the key for the caller, runs the route, and stores its response before sending it, so a client that has
the answer also finds it stored. Replays carry `Idempotent-Replayed: true`. Posts over a WebSocket follow
the same rules (`run_once`), under the fingerprint of this route's POST, and keep their answer as this
wrapper does (a refusal as its envelope), so either retry replays the other's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aitp.bindings.http.context import principal_of, runtime_of
from aitp.bindings.http.errors import envelope
from aitp.bindings.http.responses import FastJSONResponse
from aitp.errors import APIError, Conflict
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import idempotency
from aitp.services.idempotency import Replay, Reservation

log = logging.getLogger("aitp")

REPLAYED_HEADER = "Idempotent-Replayed"
# The header as the OpenAPI document declares it on each route that takes it.
IDEMPOTENCY_KEY = {
    "name": idempotency.HEADER,
    "in": "header",
    "required": False,
    "description": "Makes the POST safe to retry: a retry with the same key and body returns the first "
    "response (header `Idempotent-Replayed: true`) without writing again; the same key with another body "
    "is 422 `idempotency_key_reused`. Keys are kept per caller for AITP_IDEMPOTENCY_TTL_HOURS.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
}

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


@dataclass(frozen=True)
class Idempotent:
    """What a route declares about retrying its writes.

    `secret`: a response field shown once (an API key): its record keeps the response without it, and a
    replay of the success says what was created instead of showing (or storing) the secret again."""

    secret: str | None = None


def idempotent(*, secret: str | None = None) -> Callable[[Endpoint], Endpoint]:
    """Declare an endpoint's route safe to retry with an `Idempotency-Key` (put it under the route decorator)."""

    def declare(endpoint: Endpoint) -> Endpoint:
        endpoint.idempotent = Idempotent(secret)  # type: ignore[attr-defined]
        return endpoint

    return declare


def declared(endpoint: Callable[..., Any]) -> Idempotent | None:
    return getattr(endpoint, "idempotent", None)


class IdempotentWrites:
    """A route's ASGI app, run at most once per caller and `Idempotency-Key` (requests without one run as usual)."""

    def __init__(self, app: ASGIApp, declaration: Idempotent) -> None:
        self.app = app
        self.secret = declaration.secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        values = Headers(scope=scope).getlist(idempotency.HEADER)
        if not values:
            await self.app(scope, receive, send)
            return
        rt, principal = runtime_of(scope), principal_of(scope)
        path: str = scope["path"]
        try:
            if len(values) > 1:
                idempotency.checked_key(None)  # several keys: refused like a malformed one
            key = idempotency.checked_key(values[0])
            body = await _read_body(receive)
            if body is None:
                return  # the client left while sending
            request = idempotency.fingerprint(scope["method"], path, body)
            outcome = await idempotency.begin(rt, principal, key, request)
            if isinstance(outcome, Replay):
                await self._replay(outcome)(scope, receive, send)
                return
        except APIError as error:
            await _refusal(error)(scope, receive, send)
            return
        await self._run(scope, _replaying(body, receive), send, outcome)

    async def _run(self, scope: Scope, receive: Receive, send: Send, reservation: Reservation) -> None:
        """Run the route; keep its response (or release the key) before the client sees it."""
        rt = runtime_of(scope)
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        try:
            await self.app(scope, receive, hold)
        except BaseException:
            await idempotency.abandon(rt, reservation)  # a crash (500): the retry runs again
            raise
        start = next((m for m in held if m["type"] == "http.response.start"), None)
        if start is None:
            await idempotency.abandon(rt, reservation)
        else:
            body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
            try:
                await idempotency.finish(rt, reservation, start["status"], self._kept(body))
            except Exception:
                # The write happened: answer it. The reservation is taken over after the pending timeout.
                log.exception("could not store the response for an Idempotency-Key on %s", scope["path"])
        for message in held:
            await send(message)

    def _kept(self, body: bytes) -> str:
        """The response body as stored: without the secret on routes that show one."""
        if self.secret is not None:
            document = orjson.loads(body)
            if isinstance(document, dict) and self.secret in document:
                document[self.secret] = None
                return orjson.dumps(document).decode()
        return body.decode()

    def _replay(self, replay: Replay) -> Response:
        if self.secret is not None:
            content: Any = orjson.loads(replay.body)
            if isinstance(content, dict) and self.secret in content and content[self.secret] is None:
                error = Conflict(
                    f"The request with this {idempotency.HEADER} already succeeded and created "
                    f"'{content.get('id')}'. Its secret is shown only once and is not kept, so it cannot be "
                    "replayed: if it was lost, revoke that one and create another with a new key.",
                    param=idempotency.HEADER,
                    code="idempotency_secret_not_replayable",
                )
                return _refusal(error, replayed=True)
        # the stored bytes as they were first sent
        return Response(replay.body, replay.status, {REPLAYED_HEADER: "true"}, media_type="application/json")


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None if the client left (never more than the context middleware's limit:
    its `receive` refuses the chunk that would cross it)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the route the buffered body once, then listens to the client again."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _refusal(error: APIError, *, replayed: bool = False) -> FastJSONResponse:
    headers = {**(error.headers or {}), **({REPLAYED_HEADER: "true"} if replayed else {})}
    if error.code == "idempotency_key_in_use":
        headers["Retry-After"] = "1"
    return FastJSONResponse(envelope(error), status_code=error.status_code, headers=headers)


class StoredRefusal(APIError):
    """A refusal replayed from an idempotency record: its status, and its envelope's fields as first sent."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        fields = dict(body.get("error") or {})
        message, param, code = fields.pop("message", ""), fields.pop("param", None), fields.pop("code", None)
        super().__init__(str(message), param=param, code=code)
        fields.pop("type", None)  # derived from the status again when it is rendered
        self.status_code = status
        self._details = fields

    def details(self) -> dict[str, Any]:
        return self._details


async def run_once(
    rt: Runtime, principal: Principal, key: str, request: str, write: Callable[[], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """`write()` at most once per key, outside an HTTP request (posts over a WebSocket): its result, or its
    refusal raised again, replayed to every retry. `key` comes from the `idempotency_key` field of a frame."""
    param = "idempotency_key"
    outcome = await idempotency.begin(rt, principal, idempotency.checked_key(key, param), request, param)
    if isinstance(outcome, Replay):
        content = orjson.loads(outcome.body)
        if outcome.status >= 400:
            raise StoredRefusal(outcome.status, content)
        return dict(content)
    try:
        result = await write()
    except APIError as error:
        await idempotency.finish(rt, outcome, error.status_code, orjson.dumps(envelope(error)).decode())
        raise
    except BaseException:
        await idempotency.abandon(rt, outcome)
        raise
    await idempotency.finish(rt, outcome, 200, orjson.dumps(result).decode())
    return result
