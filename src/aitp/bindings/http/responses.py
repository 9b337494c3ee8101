"""What the HTTP faces answer with: JSON rendered by orjson (the bindings render records as plain dicts
already in wire shape), and the OpenAI list page."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse


class FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def page(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """The OpenAI list envelope of a cursor page: pass `last_id` as `after` (or `first_id` as `before`)."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }
