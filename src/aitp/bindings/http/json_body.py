"""Request bodies as the routes read them (`.route.ApiRoute`): JSON through
`aitp.inputs.strict_json.parse_json` before FastAPI validates it, so what no store can keep is refused with
a 400 naming the field; an empty body is read as `{}`, as OpenAI does.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request

from aitp.errors import InvalidRequest
from aitp.inputs.strict_json import parse_json

T = TypeVar("T")


def declares_json(content_type: str | None) -> bool:
    """FastAPI's rule: `application/json` or `application/*+json` bodies are read as JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


class StrictJSONRequest(Request):
    """A request whose JSON body has been read with `parse_json`; FastAPI gets that value from `json()`."""

    _value: Any = None

    async def json(self) -> Any:
        return self._value


def body_errors(exc: ValidationError) -> RequestValidationError:
    """pydantic's errors about a request body, as FastAPI raises them (each `loc` under "body")."""
    return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)])


async def read_body(request: Request, body_type: TypeAdapter[T]) -> T:
    """The request's required body as `body_type`, read by the rules every route of the API follows: an
    empty body is `{}` (`empty_body_refusal`), a body declared JSON goes through `parse_json`, any other
    body is not an object; the model validates what was sent as FastAPI does (`from_attributes`), so the
    refusals are the same as on a route FastAPI serves."""
    raw = await request.body()
    if not raw:
        refusal = empty_body_refusal(body_type)
        assert refusal is not None  # (a required body)
        raise refusal
    value = parse_json(raw) if declares_json(request.headers.get("content-type")) else raw
    try:
        return body_type.validate_python(value, from_attributes=True)
    except ValidationError as exc:
        raise body_errors(exc) from None


def empty_body_refusal(body_type: TypeAdapter[Any] | None) -> Exception | None:
    """What an empty body means for a route whose body is `body_type` (None: optional).

    An empty body is read as `{}`, as OpenAI does: where every field is optional it is that (None here);
    otherwise the refusal names the first missing parameter, as for `{}` (400 `missing_required_parameter`)."""
    if body_type is None:
        return None
    try:
        body_type.validate_python({})
    except ValidationError as exc:
        return body_errors(exc)
    # (a required body whose fields are all optional: none today)
    return InvalidRequest("The request body is missing: this route takes a JSON object.", code="missing_body")
