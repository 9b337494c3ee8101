"""Server-side fetch of JSON documents the UI needs (AITP-03 `json_url` forms), allow-listed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from aitp.bindings.http.deps import PrincipalDep, RuntimeDep
from aitp.bindings.http.errors import KEYED, error_responses
from aitp.bindings.http.responses import FastJSONResponse
from aitp.bindings.http.route import ApiRoute
from aitp.services import fetch

router = APIRouter(prefix="/v1", tags=["fetch"], route_class=ApiRoute)


@router.get(
    "/fetch",
    summary="Fetch a JSON document from an allowed URL (AITP_FETCH_ALLOW), within size and time limits",
    responses={200: {"description": "The document, as JSON"}, **error_responses(*KEYED, 400, 403, 413, 422)},
)
async def fetch_document(
    url: Annotated[str, Query(max_length=2048, description="An http(s) URL under a prefix of AITP_FETCH_ALLOW")],
    rt: RuntimeDep,
    principal: PrincipalDep,
) -> FastJSONResponse:
    return FastJSONResponse(await fetch.fetch_json(url, rt.settings))
