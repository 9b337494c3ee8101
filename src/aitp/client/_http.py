"""Requests to the aitp HTTP API: one httpx client, bearer auth, JSON in, pydantic models out.

Streams (the WebSocket event feed) belong in their own module; they reuse `HttpSession.root`,
`HttpSession.api_key` and `HttpSession.timeout` to reach the same server as the same key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from aitp import __version__
from aitp.client._errors import error_from_response

M = TypeVar("M", bound=BaseModel)

API_PREFIX = "/v1"


def root_url(base_url: str) -> str:
    """The server's root URL, whether `base_url` was given with the `/v1` API prefix or without."""
    root = base_url.rstrip("/")
    return root[: -len(API_PREFIX)] if root.endswith(API_PREFIX) else root


def segment(value: str) -> str:
    """One path segment, percent-encoded: actor ids such as `hub.near.ai/agent/1.0` contain slashes."""
    return quote(value, safe="")


def _query(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    # Unset options are left out so that the server's defaults apply.
    return {k: v for k, v in params.items() if v is not None} if params else None


class HttpSession:
    """An httpx client bound to one server and one key; non-2xx answers raise `AitpError`."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float, transport: httpx.AsyncBaseTransport | None
    ) -> None:
        self.root = root_url(base_url)
        self.api_key = api_key
        self.timeout = timeout
        self._client = httpx.AsyncClient(
            base_url=self.root,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": f"aitp-client/{__version__}"},
            timeout=timeout,
            transport=transport,
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        api: bool = True,
        idempotency_key: str | None = None,
    ) -> httpx.Response:
        """Send one request (`path` under `/v1` unless `api` is false); raise `AitpError` unless 2xx."""
        url = API_PREFIX + path if api else path
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        response = await self._client.request(method, url, json=json, params=_query(params), headers=headers)
        if not response.is_success:
            raise error_from_response(response)
        return response

    async def call(
        self,
        model: type[M],
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> M:
        """`request`, then the body parsed as `model`."""
        response = await self.request(method, path, json=json, params=params, idempotency_key=idempotency_key)
        return model.model_validate_json(response.content)

    async def aclose(self) -> None:
        await self._client.aclose()
