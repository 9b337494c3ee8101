"""Fetching JSON documents for the UI (AITP-03 `json_url` forms), never as an open proxy.

A URL is read as a browser reads it, then loaded only when it matches a prefix of `Settings.fetch_allow`
(`aitp.services.destinations`). Every redirect target is checked the same way before it is followed. The
body is streamed and dropped past `fetch_max_bytes`; the whole exchange, redirects included, must finish
within `fetch_timeout`; the answer must be JSON by content type and by content. No credentials, cookies or proxy
settings of this process are sent along.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from aitp.config import Settings
from aitp.errors import PayloadTooLarge, PermissionDenied, Unprocessable
from aitp.services.destinations import is_allowed, normalize_url, parse_url

MAX_REDIRECTS = 3
REDIRECT_STATUSES = {301, 302, 303, 307, 308}


def _check_allowed(url: httpx.URL, settings: Settings, redirected_from: httpx.URL | None = None) -> None:
    if is_allowed(url, settings.fetch_allow):
        return
    if redirected_from is not None:
        message = f"{redirected_from} redirects to {url}, which this service may not fetch (AITP_FETCH_ALLOW)."
    else:
        message = f"This service may not fetch {url}: it matches no prefix of AITP_FETCH_ALLOW."
    raise PermissionDenied(message, param="url", code="url_not_allowed")


def _is_json_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _read_limited(response: httpx.Response, limit: int, url: httpx.URL) -> bytes:
    too_large = PayloadTooLarge(
        f"The document at {url} is larger than {limit} bytes.", param="url", code="fetch_too_large"
    )
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise too_large  # stop reading: the rest is never downloaded
    return bytes(body)


async def _fetch(client: httpx.AsyncClient, url: httpx.URL, settings: Settings) -> Any:
    for _ in range(MAX_REDIRECTS + 1):
        async with client.stream("GET", url) as response:
            if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                target = parse_url(str(url.join(normalize_url(response.headers["location"]))))
                _check_allowed(target, settings, redirected_from=url)
                url = target
                continue
            if response.status_code != 200:
                raise Unprocessable(f"{url} answered HTTP {response.status_code}.", param="url", code="fetch_failed")
            if not _is_json_type(response.headers.get("content-type", "")):
                raise Unprocessable(
                    f"{url} is not a JSON document (content type {response.headers.get('content-type')!r}).",
                    param="url",
                    code="fetch_not_json",
                )
            body = await _read_limited(response, settings.fetch_max_bytes, url)
        try:
            return json.loads(body)
        except ValueError as error:
            raise Unprocessable(
                f"{url} did not return valid JSON: {error}.", param="url", code="fetch_not_json"
            ) from error
    raise Unprocessable(f"More than {MAX_REDIRECTS} redirects fetching the document.", param="url", code="fetch_failed")


async def fetch_json(raw_url: str, settings: Settings) -> Any:
    """The JSON document at `raw_url`, if the allow-list admits it and it fits the limits."""
    url = parse_url(raw_url)
    _check_allowed(url, settings)
    async with httpx.AsyncClient(
        follow_redirects=False,  # each hop is checked against the allow-list above
        trust_env=False,  # no proxies or .netrc credentials from this process's environment
        timeout=settings.fetch_timeout,
        headers={"Accept": "application/json"},
    ) as client:
        try:
            async with asyncio.timeout(settings.fetch_timeout):
                return await _fetch(client, url, settings)
        except (TimeoutError, httpx.TimeoutException) as error:
            raise Unprocessable(
                f"Fetching {raw_url} took longer than {settings.fetch_timeout:g} s.", param="url", code="fetch_timeout"
            ) from error
        except httpx.HTTPError as error:
            raise Unprocessable(f"Fetching {raw_url} failed: {error}.", param="url", code="fetch_failed") from error
