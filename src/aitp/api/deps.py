"""Dependencies every route uses: the runtime and the authenticated principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from aitp.auth import Principal, authenticate, bearer_token
from aitp.errors import PermissionDenied
from aitp.runtime import Runtime

# Declares the scheme in the OpenAPI document; the header itself is parsed by `bearer_token`.
_bearer = HTTPBearer(auto_error=False, description="An aitp API key: `Authorization: Bearer aitp_...`")


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


async def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    runtime: Runtime = request.app.state.runtime
    token = bearer_token(request.headers.get("authorization"))
    return await authenticate(runtime.store, token, runtime.settings.admin_key)


def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.admin:
        raise PermissionDenied("This operation needs an admin key.", code="admin_required")
    return principal


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(get_admin)]
