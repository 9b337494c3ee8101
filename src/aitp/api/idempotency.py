"""`Idempotency-Key` on every POST under /v1: a retry gets the first response instead of a second write.

A pure ASGI middleware, so it covers every POST route as it is, with no route knowing about it. It runs
behind the context middleware (`aitp.context`), so a request it sees has its key checked and counted
and its body limited; it acts only on requests made with a key (keys are scoped per caller), buffers
the body to fingerprint it, reserves the key, runs the route, and stores its response before sending
it, so a client that has the answer also finds it stored. Replays carry `Idempotent-Replayed: true`.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aitp.api.responses import FastJSONResponse
from aitp.context import PRINCIPAL
from aitp.errors import APIError, Conflict
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import idempotency
from aitp.services.idempotency import Replay, Reservation

log = logging.getLogger("aitp")

PREFIX = "/v1/"
REPLAYED_HEADER = "Idempotent-Replayed"
# Responses that show a secret once: their record keeps the response without the secret, and a replay
# of a success says what was created instead of showing (or storing) the secret again.
SECRET_FIELDS = {"/v1/keys": "key"}


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        values = Headers(scope=scope).getlist(idempotency.HEADER)
        principal: Principal | None = scope.get(PRINCIPAL)
        if not values or principal is None:
            await self.app(scope, receive, send)
            return
        rt = self.runtime
        path: str = scope["path"]
        try:
            if len(values) > 1:
                idempotency.checked_key(None)  # several keys: refused like a malformed one
            key = idempotency.checked_key(values[0])
            body = await _read_body(receive)
            if body is None:
                return  # the client left while sending
            outcome = await idempotency.begin(rt, principal, key, idempotency.fingerprint("POST", path, body))
            if isinstance(outcome, Replay):
                await _replay(path, outcome)(scope, receive, send)
                return
        except APIError as error:
            await _refusal(error)(scope, receive, send)
            return
        await self._run(scope, _replaying(body, receive), send, path, outcome)

    async def _run(self, scope: Scope, receive: Receive, send: Send, path: str, reservation: Reservation) -> None:
        """Run the route; keep its response (or release the key) before the client sees it."""
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        try:
            await self.app(scope, receive, hold)
        except BaseException:
            await idempotency.abandon(self.runtime, reservation)  # a crash (500): the retry runs again
            raise
        start = next((m for m in held if m["type"] == "http.response.start"), None)
        if start is None:
            await idempotency.abandon(self.runtime, reservation)
        else:
            body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
            try:
                await idempotency.finish(self.runtime, reservation, start["status"], _kept(path, body))
            except Exception:
                # The write happened: answer it. The reservation is taken over after the pending timeout.
                log.exception("could not store the response for an Idempotency-Key on %s", path)
        for message in held:
            await send(message)


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


def _kept(path: str, body: bytes) -> str:
    """The response body as stored: without the secret on routes that show one."""
    field = SECRET_FIELDS.get(path)
    if field is not None:
        document = orjson.loads(body)
        if isinstance(document, dict) and field in document:
            document[field] = None
            return orjson.dumps(document).decode()
    return body.decode()


def _replay(path: str, replay: Replay) -> Response:
    field = SECRET_FIELDS.get(path)
    if field is not None:
        content: Any = orjson.loads(replay.body)
        if isinstance(content, dict) and field in content and content[field] is None:
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


def _refusal(error: APIError, *, replayed: bool = False) -> FastJSONResponse:
    headers = {**(error.headers or {}), **({REPLAYED_HEADER: "true"} if replayed else {})}
    if error.code == "idempotency_key_in_use":
        headers["Retry-After"] = "1"
    return FastJSONResponse(error.envelope(), status_code=error.status_code, headers=headers)
