"""Dependencies every route uses: the runtime and the principal, both left in the scope by the context
middleware (`.context`), which checked and counted the key before any route ran."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant

from aitp.bindings.http.context import principal_of, runtime_of
from aitp.errors import PermissionDenied
from aitp.principals import Principal
from aitp.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    # async, though it awaits nothing: FastAPI runs a plain `def` dependency in a worker thread
    return runtime_of(request.scope)


async def get_principal(request: Request) -> Principal:
    return principal_of(request.scope)


async def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.admin:
        raise PermissionDenied("This operation needs an admin key.", code="admin_required")
    return principal


def _calls(dependant: Dependant) -> set[object]:
    calls: set[object] = set()
    pending = list(dependant.dependencies)
    while pending:
        dependency = pending.pop()
        calls.add(dependency.call)
        pending.extend(dependency.dependencies)
    return calls


def needs_key(dependant: Dependant) -> bool:
    """Whether a route asks who the caller is: every route that takes a principal (or admin) needs a key."""
    return bool(_calls(dependant) & {get_principal, get_admin})


def needs_admin(dependant: Dependant) -> bool:
    """Whether a route takes an admin: checked before its body is read (403 before any body error)."""
    return get_admin in _calls(dependant)


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(get_admin)]
