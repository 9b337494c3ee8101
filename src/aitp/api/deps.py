"""Dependencies every route uses: the runtime and the authenticated principal."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.datastructures import Headers
from starlette.types import Scope

from aitp.auth import bearer_token
from aitp.errors import PermissionDenied
from aitp.gate import Gate
from aitp.principals import Principal
from aitp.runtime import Runtime

# Declares the scheme in the OpenAPI document; the header itself is parsed by `bearer_token`.
_bearer = HTTPBearer(auto_error=False, description="An aitp API key: `Authorization: Bearer aitp_...`")

# Where a request keeps the principal it was authenticated (and counted) as: whoever checks the key first
# (the idempotency middleware, a route before it reads the body, the dependency) does it for all the others.
PRINCIPAL_SCOPE_KEY = "aitp.principal"


async def get_runtime(request: Request) -> Runtime:
    # async, though it awaits nothing: FastAPI runs a plain `def` dependency in a worker thread
    return request.app.state.runtime


async def principal_of(scope: Scope, runtime: Runtime) -> Principal:
    """Who the request acts as: its key checked (401) and counted against the rate limit (429) once per request."""
    principal: Principal | None = scope.get(PRINCIPAL_SCOPE_KEY)
    if principal is None:
        token = bearer_token(Headers(scope=scope).get("authorization"))
        principal = await runtime.state(Gate).admit(token)
        scope[PRINCIPAL_SCOPE_KEY] = principal
    return principal


async def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    return await principal_of(request.scope, request.app.state.runtime)


async def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.admin:
        raise PermissionDenied("This operation needs an admin key.", code="admin_required")
    return principal


def key_check(dependant: Dependant) -> Callable[[Request], Awaitable[Principal]] | None:
    """What a route's dependencies check of the caller's key, as one call a route can make before it reads
    the body (401, 429, then 403 for admin routes): a request without a valid key costs no body reading or
    parsing. None for routes that take no key."""
    calls = set()
    pending = list(dependant.dependencies)
    while pending:
        dependency = pending.pop()
        calls.add(dependency.call)
        pending.extend(dependency.dependencies)
    if get_admin in calls:

        async def admin(request: Request) -> Principal:
            return await get_admin(await principal_of(request.scope, request.app.state.runtime))

        return admin
    if get_principal in calls:

        async def principal(request: Request) -> Principal:
            return await principal_of(request.scope, request.app.state.runtime)

        return principal
    return None


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(get_admin)]
