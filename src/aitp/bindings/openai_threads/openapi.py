"""The OpenAPI document as the service really answers.

FastAPI documents a 422 with its own `{"detail": [...]}` body on every route that takes input. This
service answers invalid input with 400 and the error envelope instead (`.errors`), and lists a
422, with the envelope, only on routes that can give one; so the stock entry is removed. The key, checked
by the context middleware rather than by the routes, is declared on every route that takes a principal.
(Routes declared `@idempotent` declare the `Idempotency-Key` header themselves: `aitp.bindings.http.route`.)
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from aitp.bindings.http.deps import needs_key

STOCK_SCHEMAS = ("HTTPValidationError", "ValidationError")
_STOCK_REF = "#/components/schemas/HTTPValidationError"


def install(app: FastAPI) -> None:
    """Serve (and cache) the document without FastAPI's stock validation-error responses."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()  # `build` caches the document it returns
            drop_stock_validation_errors(document)
            declare_bearer_key(document, app.routes)
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def drop_stock_validation_errors(document: dict[str, Any]) -> None:
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            schema = responses.get("422", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if schema.get("$ref") == _STOCK_REF:
                del responses["422"]
    schemas = document.get("components", {}).get("schemas", {})
    for name in STOCK_SCHEMAS:
        schemas.pop(name, None)


BEARER = "HTTPBearer"
BEARER_SCHEME = {
    "type": "http",
    "description": "An aitp API key: `Authorization: Bearer aitp_...`",
    "scheme": "bearer",
}


def declare_bearer_key(document: dict[str, Any], routes: list[BaseRoute]) -> None:
    """The bearer key scheme, required by the operation of every route that takes a principal."""
    document.setdefault("components", {}).setdefault("securitySchemes", {})[BEARER] = BEARER_SCHEME
    paths = document.get("paths", {})
    for route in routes:
        if isinstance(route, APIRoute) and route.include_in_schema and needs_key(route.dependant):
            for method in route.methods or ():
                operation = paths.get(route.path_format, {}).get(method.lower())
                if operation is not None:
                    operation["security"] = [{BEARER: []}]
