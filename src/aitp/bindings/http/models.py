"""Wire models the HTTP faces share (pydantic only: the Python client reads them too)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, WithJsonSchema

from aitp.inputs.shapes import MAX_METADATA_KEY, MAX_METADATA_PAIRS, MAX_METADATA_VALUE


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None
    unsupported_by: list[str] | None = Field(
        default=None,
        description="`capability_not_supported` only: the thread's actors that cannot read the capability message.",
    )


class ErrorResponse(BaseModel):
    """The OpenAI error envelope; `param` names the offending field."""

    error: ErrorBody


# What the OpenAPI document says a request's `metadata` may hold, so that generated clients send what the
# server accepts (`aitp.inputs.shapes.check_metadata` enforces it; nothing here is checked twice): OpenAI's
# rules (string values of at most 512 characters, keys of 1 to 64, at most 16 pairs) beside the keys the
# server reads itself (`reserved`: their own schemas, not counted in the 16).
def metadata_schema(reserved: dict[str, dict[str, Any]] | None = None, *, nullable: bool = True) -> WithJsonSchema:
    """The schema of a `metadata` field (an object, or null when `nullable`) whose `reserved` keys take their own."""
    reserved = reserved or {}
    metadata: dict[str, Any] = {
        "type": "object",
        "properties": reserved,
        "additionalProperties": {"type": "string", "maxLength": MAX_METADATA_VALUE},
        "propertyNames": {"minLength": 1, "maxLength": MAX_METADATA_KEY, "pattern": "^[^\\u0000]*$"},
        "maxProperties": MAX_METADATA_PAIRS + len(reserved),
    }
    return WithJsonSchema({"anyOf": [metadata, {"type": "null"}]} if nullable else metadata)
