"""Request bodies as the routes read them (`aitp.api.route.ApiRoute`): JSON through
`aitp.inputs.strict_json.parse_json` before FastAPI validates it, so what no store can keep is refused with
a 400 naming the field; an empty body is read as `{}`, as OpenAI does.
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request

from aitp.errors import InvalidRequest


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
