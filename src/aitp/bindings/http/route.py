"""The route class of every route of the HTTP faces, and what a route may declare beyond FastAPI's parameters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import request_response

from aitp.bindings.http.context import principal_of
from aitp.bindings.http.deps import get_admin, needs_admin
from aitp.bindings.http.idempotency import IDEMPOTENCY_KEY, IdempotentWrites, declared
from aitp.bindings.http.json_body import StrictJSONRequest, declares_json, empty_body_refusal
from aitp.inputs.strict_json import parse_json

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])
Handler = Callable[[Request], Awaitable[Response]]


def served_by(handler: Handler) -> Callable[[Endpoint], Endpoint]:
    """Serve an endpoint's route with `handler`, a plain Starlette endpoint written for that route, instead
    of FastAPI's per-request parameter solving (about a fifth of a POST message's time, bench/ingest.py).
    The endpoint stays the route's declaration (its OpenAPI operation, its body model) and its one
    implementation: `handler` reads the arguments itself and calls it. Put it under the route decorator."""

    def declare(endpoint: Endpoint) -> Endpoint:
        endpoint.served_by = handler  # type: ignore[attr-defined]
        return endpoint

    return declare


class ApiRoute(APIRoute):
    """The API's route: FastAPI's, with what the routes declare applied.

    - A JSON body goes through `parse_json` before FastAPI validates it; an empty body means `{}`
      (`empty_body_refusal`); an admin route refuses other keys before the body is read.
    - An endpoint declared `@served_by(handler)` is served by that plain handler.
    - An endpoint declared `@idempotent` has its writes made safe to retry (`IdempotentWrites`), and the
      `Idempotency-Key` header in its OpenAPI operation."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        if (handler := getattr(endpoint, "served_by", None)) is not None:
            self.app = request_response(handler)
        if (declaration := declared(endpoint)) is not None:
            self.openapi_extra = {**(self.openapi_extra or {}), "parameters": [IDEMPOTENCY_KEY]}
            self.app = IdempotentWrites(self.app, declaration)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        if self.body_field is None:
            return handle
        admin_only = needs_admin(self.dependant)
        required = self.body_field.field_info.is_required()
        annotation = self.body_field.field_info.annotation  # a body field always has one (pydantic types it Optional)
        body_type: TypeAdapter[Any] | None = TypeAdapter(annotation) if required and annotation is not None else None

        async def handler(request: Request) -> Response:
            if admin_only:
                await get_admin(principal_of(request.scope))  # 403 before any body error
            # Read once, here: a second read of the stream would wait for a body that never comes.
            body = await request.body()
            if not body:
                if (refusal := empty_body_refusal(body_type)) is not None:
                    raise refusal
                return await handle(request)
            if not declares_json(request.headers.get("content-type")):
                return await handle(request)
            strict = StrictJSONRequest(request.scope, request.receive)
            strict._body = body
            # Refusals are raised here, outside FastAPI's body reading, which would turn them into a bare 400.
            strict._value = parse_json(body)
            return await handle(strict)

        return handler
