"""The chat UI's static files, served at `/` underneath every API route."""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.datastructures import MutableHeaders
from starlette.routing import Match, Mount
from starlette.types import Message, Receive, Scope, Send

from aitp.bindings.http.context import runtime_of
from aitp.bindings.openai_threads.routes import PREFIX
from aitp.services import embed_origins

# the one page other sites may frame: the chat a shop puts on its own website (web/embed.js frames it), by the
# sites its shop allows
FRAMEABLE = frozenset({"/embed.html"})
# any other page of the UI holds a key: no other site may frame it and trick clicks into it (clickjacking)
NOT_FRAMEABLE: tuple[tuple[str, str], ...] = (
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("X-Frame-Options", "DENY"),
)


class WebMount(Mount):
    """Serves the UI's files, but only for GET and HEAD outside `/v1/`.

    A mount at `/` matches every path, so it would answer where the API should: a known API path with
    a method it lacks would get the UI's 404 or 405 (without `Allow`) instead of the route's 405 with
    `Allow`, and an unknown `/v1/` path the UI's 404 instead of the JSON one.

    Every answer but the embeddable chat's page says that no other site may frame it."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and (scope["method"] not in ("GET", "HEAD") or scope["path"].startswith(PREFIX)):
            return Match.NONE, {}
        return super().matches(scope)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().handle(scope, receive, send)
            return
        policy: tuple[tuple[str, str], ...] = NOT_FRAMEABLE
        if scope["path"] in FRAMEABLE:
            # a shop's chat: framed only by the sites that shop allows (`services.embed_origins`), named by
            # `?shop=` (web/embed.js puts it there; a page that names another shop gets that shop's list)
            shop = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("shop", [None])[0]
            origins = await embed_origins.frame_ancestors(runtime_of(scope), shop)
            policy = (("Content-Security-Policy", "frame-ancestors " + (" ".join(origins) or "'none'")),)

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in policy:
                    headers[name] = value
            await send(message)

        await super().handle(scope, receive, send_with_policy)
