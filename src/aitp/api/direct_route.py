"""Routes that skip FastAPI's per-request dependency solving when everything they take is known.

FastAPI resolves a route's parameters generically on every request: a cache key and a parameter
extraction per dependency, plus a sub-dependency for the security scheme. For a POST message that is
about a fifth of the service's own time (bench/ingest.py). A route whose parameters are only string
path parameters, one JSON body model, the runtime and the principal (or admin) is called directly
instead, through the same functions the dependencies use, in the same order as `ApiRoute` (the
key, then the body syntax, then the body model), so its answers are the same. Anything else, and any
request whose body is empty or not declared as JSON, takes FastAPI's path (the same request object, so
the body is read once: reading it again would wait forever for a body that never comes). The route
still declares its parameters as usual, so the OpenAPI document is unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from aitp.api.deps import get_admin, get_principal, get_runtime
from aitp.api.json_body import declares_json
from aitp.api.route import ApiRoute
from aitp.context import principal_of
from aitp.inputs.strict_json import parse_json

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True)
class Plan:
    """How to call an endpoint without FastAPI: which argument is what."""

    path: tuple[str, ...]
    body: str
    body_type: TypeAdapter[Any]
    runtime: str | None
    principal: str | None
    admin: bool


class DirectRoute(ApiRoute):
    """An ApiRoute that calls plain endpoints directly (see the module docstring)."""

    def get_route_handler(self) -> Handler:
        fallback = super().get_route_handler()
        plan = plan_of(self)
        if plan is None:
            return fallback
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            principal = principal_of(request.scope) if plan.principal else None
            if plan.admin:
                await get_admin(principal)  # type: ignore[arg-type]  # 403 before a byte of the body is read
            if not declares_json(request.headers.get("content-type")):
                return await fallback(request)
            raw = await request.body()
            if not raw:
                return await fallback(request)
            value = parse_json(raw)
            arguments: dict[str, Any] = {name: request.path_params[name] for name in plan.path}
            if plan.runtime:
                arguments[plan.runtime] = await get_runtime(request)
            if plan.principal:
                arguments[plan.principal] = principal
            try:
                arguments[plan.body] = plan.body_type.validate_python(value)
            except ValidationError as exc:
                errors = exc.errors(include_url=False)
                raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None
            response: Response = await endpoint(**arguments)
            return response

        return handler


def plan_of(route: ApiRoute) -> Plan | None:
    """The direct call plan for `route`, or None when FastAPI must resolve its parameters."""
    dependant = route.dependant
    if dependant.query_params or dependant.header_params or dependant.cookie_params or dependant.request_param_name:
        return None
    if any(param.field_info.annotation is not str for param in dependant.path_params):
        return None
    if len(dependant.body_params) != 1 or getattr(route, "_embed_body_fields", True):
        return None
    returns = inspect.signature(route.endpoint, eval_str=True).return_annotation
    if not (inspect.isclass(returns) and issubclass(returns, Response)):
        return None
    runtime = principal = None
    admin = False
    for dependency in dependant.dependencies:
        if dependency.call is get_runtime:
            runtime = dependency.name
        elif dependency.call in (get_principal, get_admin):
            principal, admin = dependency.name, dependency.call is get_admin
        else:
            return None
    body = dependant.body_params[0]
    if body.field_info.annotation is None:
        return None
    return Plan(
        path=tuple(param.name for param in dependant.path_params),
        body=body.name,
        body_type=TypeAdapter(body.field_info.annotation),
        runtime=runtime,
        principal=principal,
        admin=admin,
    )
