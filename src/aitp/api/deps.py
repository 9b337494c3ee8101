"""Dependencies every route uses: the runtime and the authenticated principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from aitp.auth import Principal, authenticate, bearer_token
from aitp.errors import PermissionDenied
from aitp.runtime import Runtime
from aitp.services.rate_limit import count_request

# Declares the scheme in the OpenAPI document; the header itself is parsed by `bearer_token`.
_bearer = HTTPBearer(auto_error=False, description="An aitp API key: `Authorization: Bearer aitp_...`")


async def get_runtime(request: Request) -> Runtime:
    # async, though it awaits nothing: FastAPI runs a plain `def` dependency in a worker thread
    return request.app.state.runtime


async def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    runtime: Runtime = request.app.state.runtime
    token = bearer_token(request.headers.get("authorization"))
    principal = await authenticate(runtime.store, token, runtime.settings.admin_key, runtime.principals)
    count_request(runtime, principal)  # per key, admin keys too: 429 with Retry-After when over
    return principal


async def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.admin:
        raise PermissionDenied("This operation needs an admin key.", code="admin_required")
    return principal


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(get_admin)]
