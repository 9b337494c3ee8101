"""A short way through the app for the hottest routes: a request one of them matches goes from the app's
error middleware straight to the route, past the rest of FastAPI's chain, with the same rules and errors.

Before its route, every request of the app passes FastAPI's middleware and its router, which tries each
route's pattern in turn and wraps the route in more layers (`Route.handle`). `Lane` serves a few routes
(A2A's `POST /a2a/{actor}`, the Threads API's `POST .../messages`) with the layers that do something for
them only, each route through:

- the route's own `matches`, as the router would try it (a lane's route must be the first of the app's
  routes that can match such a request);
- a `ContextMiddleware` of its own (key 401, rate 429, body 413, refusals rendered as elsewhere);
- an `ExceptionMiddleware` with the app's handlers (an `APIError` is its envelope, as on any route);
  what no handler takes goes on to the app's error middleware, outside the lane: the app's 500;
- FastAPI's exit stack, which FastAPI's route handlers need.

Every other request goes on through the whole chain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from aitp.context import ContextMiddleware


class Lane:
    """ASGI middleware: a request one of `routes` matches goes to it with `context`'s rules and the app's
    exception `handlers` (the 500 one stays the error middleware's), the rest to `app`."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Sequence[BaseRoute],
        context: dict[str, Any],
        handlers: Mapping[Any, Callable[..., Any]],
    ) -> None:
        self.app = app
        handled = {key: handler for key, handler in handlers.items() if key not in (500, Exception)}
        self.routes = [(route, self._served(route, context, handled)) for route in routes]

    @staticmethod
    def _served(route: BaseRoute, context: dict[str, Any], handlers: dict[Any, Any]) -> ASGIApp:
        async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            await route.app(scope, receive, send)  # type: ignore[attr-defined]  # as it is now (tests swap it)

        # FastAPI's exit stack: what FastAPI's own route handler asserts it finds (uploaded files close on it)
        return ContextMiddleware(ExceptionMiddleware(AsyncExitStackMiddleware(endpoint), handlers=handlers), **context)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route, served in self.routes:
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child)
                    await served(scope, receive, send)
                    return
        await self.app(scope, receive, send)
