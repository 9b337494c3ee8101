"""Fetching JSON documents for the UI (AITP-03 `json_url` forms), never as an open proxy.

A URL is read as a browser reads it (WHATWG: backslashes are slashes, tabs and newlines dropped), then
loaded only when it matches a prefix of `Settings.fetch_allow` exactly: same scheme, host and port,
and a path under the prefix's path (segment-aligned), without dot segments in any spelling. Every redirect target is
checked the same way before it is followed. The body is streamed and dropped past
`fetch_max_bytes`; the whole exchange, redirects included, must finish within `fetch_timeout`;
the answer must be JSON by content type and by content. No credentials, cookies or proxy
settings of this process are sent along.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import httpx

from aitp.config import Settings
from aitp.errors import PayloadTooLarge, PermissionDenied, Unprocessable

MAX_REDIRECTS = 3
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = {301, 302, 303, 307, 308}


# WHATWG URL parsing (what browsers, and so the UI, make of a URL) before reading it: C0 controls and spaces
# trimmed at both ends, every tab and newline removed, and for http(s) a backslash is a slash up to the query.
# httpx (RFC 3986) would send a backslash as it is, and servers that take it for a slash would then resolve a
# "..\" segment that no check here saw; "\@host" would even be read as user info before another host.
_TRIMMED = "".join(chr(c) for c in range(0x21))
_DROPPED = str.maketrans("", "", "\t\n\r")


def normalize_url(raw: str) -> str:
    """`raw` as a browser reads an http(s) URL (or a reference relative to one): see above."""
    text = raw.strip(_TRIMMED).translate(_DROPPED)
    end = min((at for at in (text.find("?"), text.find("#")) if at >= 0), default=len(text))
    return text[:end].replace("\\", "/") + text[end:]


def _dot_segment(segment: str) -> bool:
    """A "." or ".." segment, also as servers may read one: with path parameters ("..;x": Tomcat and Spring
    drop them), or with more dots and trailing spaces ("...", ".. ": Windows trims them)."""
    name = segment.split(";", 1)[0]
    return bool(name) and not name.rstrip(". ")


def parse_url(raw: str) -> httpx.URL:
    """An absolute http(s) URL, read as a browser reads it, without credentials or dot segments, else 422
    `invalid_url`."""
    try:
        url = httpx.URL(normalize_url(raw))
    except httpx.InvalidURL as error:
        raise Unprocessable(f"Not a valid URL: {error}.", param="url", code="invalid_url") from error
    if url.scheme not in DEFAULT_PORTS or not url.host:
        raise Unprocessable("Only absolute http and https URLs can be fetched.", param="url", code="invalid_url")
    if url.userinfo:
        raise Unprocessable("URLs with credentials cannot be fetched.", param="url", code="invalid_url")
    # httpx resolves literal ".." but sends "%2e%2e" and "%2f" as they are, and servers may decode them
    raw_path = url.raw_path.split(b"?", 1)[0].lower()
    if b"%2f" in raw_path or b"%5c" in raw_path or any(_dot_segment(s) for s in url.path.split("/")):
        raise Unprocessable(
            "URLs with encoded slashes or backslashes, or dot segments, cannot be fetched.",
            param="url",
            code="invalid_url",
        )
    return url


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host.lower(), url.port or DEFAULT_PORTS[url.scheme]


def is_allowed(url: httpx.URL, prefixes: Iterable[str]) -> bool:
    """True when `url` has the scheme, host and port of a prefix and a path under its path."""
    for prefix in prefixes:
        try:
            allowed = httpx.URL(prefix)
        except httpx.InvalidURL:
            continue
        if allowed.scheme not in DEFAULT_PORTS or _origin(allowed) != _origin(url):
            continue
        base = allowed.path
        # "https://h/forms" admits /forms and /forms/…, never /forms-evil
        if base.endswith("/") and url.path.startswith(base):
            return True
        if not base.endswith("/") and (url.path == base or url.path.startswith(base + "/")):
            return True
    return False


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
