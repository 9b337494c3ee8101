"""The chat UI's static files, served at `/` underneath every API route."""

from __future__ import annotations

from starlette.routing import Match, Mount
from starlette.types import Scope

from aitp.bindings.openai_threads.routes import PREFIX


class WebMount(Mount):
    """Serves the UI's files, but only for GET and HEAD outside `/v1/`.

    A mount at `/` matches every path, so it would answer where the API should: a known API path with
    a method it lacks would get the UI's 404 or 405 (without `Allow`) instead of the route's 405 with
    `Allow`, and an unknown `/v1/` path the UI's 404 instead of the JSON one."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and (scope["method"] not in ("GET", "HEAD") or scope["path"].startswith(PREFIX)):
            return Match.NONE, {}
        return super().matches(scope)
