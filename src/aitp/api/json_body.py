"""Request bodies read strictly by the routes: JSON through `aitp.inputs.strict_json.parse_json` before
FastAPI validates it, so what no store can keep is refused with a 400 naming the field; an empty body is
read as `{}`, as OpenAI does.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from aitp.api.deps import get_admin, needs_admin
from aitp.context import principal_of
from aitp.errors import InvalidRequest
from aitp.inputs.strict_json import parse_json


def declares_json(content_type: str | None) -> bool:
    """FastAPI's rule: `application/json` or `application/*+json` bodies are read as JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


class StrictJSONRequest(Request):
    """A request whose JSON body has been read with `parse_json`; FastAPI gets that value from `json()`."""

    _value: Any = None

    async def json(self) -> Any:
        return self._value


def empty_body_refusal(body_type: TypeAdapter[Any] | None) -> Exception | None:
    """What an empty body means for a route whose body is `body_type` (None: optional).

    An empty body is read as `{}`, as OpenAI does: where every field is optional it is that (None here);
    otherwise the refusal names the first missing parameter, as for `{}` (400 `missing_required_parameter`)."""
    if body_type is None:
        return None
    try:
        body_type.validate_python({})
    except ValidationError as exc:
        return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)])
    # (a required body whose fields are all optional: none today)
    return InvalidRequest("The request body is missing: this route takes a JSON object.", code="missing_body")


class StrictJSONRoute(APIRoute):
    """An APIRoute whose JSON body goes through `parse_json` before FastAPI validates it.

    An admin route refuses other keys before the body is read; an empty body means `{}` (`empty_body_refusal`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        if self.body_field is None:
            return handle
        admin_only = needs_admin(self.dependant)
        required = self.body_field.field_info.is_required()
        body_type = TypeAdapter(self.body_field.field_info.annotation) if required else None

        async def handler(request: Request) -> Response:
            if admin_only:
                await get_admin(principal_of(request.scope))  # 403 before any body error
            # Read once, here: a second read of the stream would wait for a body that never comes.
            body = await request.body()
            if not body:
                if (refusal := empty_body_refusal(body_type)) is not None:
                    raise refusal
                return await handle(request)
            if not declares_json(request.headers.get("content-type")):
                return await handle(request)
            strict = StrictJSONRequest(request.scope, request.receive)
            strict._body = body
            # Refusals are raised here, outside FastAPI's body reading, which would turn them into a bare 400.
            strict._value = parse_json(body)
            return await handle(strict)

        return handler
