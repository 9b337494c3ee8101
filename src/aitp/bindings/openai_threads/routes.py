"""The API's routes, as one flat list in the order they are tried, and which requests need no key.

Each module declares its routes on an `APIRouter` (for the decorators) and they are taken out of it here:
FastAPI 0.165 keeps an included router whole and matches a request through it twice, ~60 µs per request
(a tenth of a POST message, bench/ingest.py). Messages first: the hottest routes are tried first.
"""

from __future__ import annotations

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from aitp.bindings.http.deps import needs_key
from aitp.bindings.openai_threads import (
    actors,
    capabilities,
    codes,
    customer_sessions,
    events,
    fetch,
    identities,
    keys,
    messages,
    presence,
    profiles,
    threads,
    webhooks,
)

PREFIX = "/v1/"  # every route of the API is under it; outside it: the web UI, /health, the OpenAPI document


def api_routes() -> list[BaseRoute]:
    # identities last: its GET /v1/actors/{actor_id:path} would take /v1/actors/me/... routes of the others
    modules = (
        messages,
        threads,
        actors,
        profiles,
        presence,
        capabilities,
        events,
        keys,
        fetch,
        codes,
        customer_sessions,
        webhooks,
        identities,
    )
    return [route for module in modules for route in module.router.routes]


class NoKeyNeeded:
    """Whether a request needs no key: it is outside the API, or a route of the API serves it without asking
    who the caller is (a capability version's schema and examples: `$schema` URLs must resolve for anyone).
    Only requests with a method such a route takes are matched against them."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self.routes = [
            route
            for route in routes
            if isinstance(route, APIRoute) and route.path.startswith(PREFIX) and not needs_key(route.dependant)
        ]
        self.methods = {method for route in self.routes for method in route.methods or ()}

    def __call__(self, scope: Scope) -> bool:
        if not scope["path"].startswith(PREFIX):
            return True
        if scope["type"] != "http" or scope["method"] not in self.methods:
            return False
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes)
