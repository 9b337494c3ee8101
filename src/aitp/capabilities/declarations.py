"""Capability declarations as actors send them, normalised to one stored shape.

Accepted forms: a URL string, `{"schema": url}`, `{"$schema": url}` (all stored as
`{"schema": url}`), and a version range `{"capability": id, "versions": ">=1.0.0,<3"}`
(`packaging` specifier syntax, stored as given).
"""

from __future__ import annotations

from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from aitp.errors import InvalidRequest
from aitp.inputs.shapes import MAX_URL_LENGTH


def normalize_declaration(value: Any, param: str) -> dict[str, str]:
    """Return the stored form of one declaration, or raise InvalidRequest naming `param`."""
    if isinstance(value, str):
        return {"schema": _url(value, param)}
    if isinstance(value, dict):
        if "capability" in value:
            return _range(value, param)
        urls = [value[k] for k in ("schema", "$schema") if k in value]
        if len(urls) == 1:
            key = "schema" if "schema" in value else "$schema"
            return {"schema": _url(urls[0], f"{param}.{key}")}
        if len(urls) == 2 and urls[0] == urls[1]:
            return {"schema": _url(urls[0], f"{param}.schema")}
    raise InvalidRequest(
        'A capability declaration must be a schema URL string, {"schema": url}, {"$schema": url} '
        'or {"capability": id, "versions": range}.',
        param=param,
        code="invalid_capability_declaration",
    )


def _url(value: Any, param: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(
            "A capability schema URL must be a non-empty string.", param=param, code="invalid_capability_declaration"
        )
    if len(value) > MAX_URL_LENGTH:
        raise InvalidRequest(
            f"A capability schema URL may be at most {MAX_URL_LENGTH} characters.",
            param=param,
            code="invalid_capability_declaration",
        )
    return value.strip()


def _range(value: dict[str, Any], param: str) -> dict[str, str]:
    unknown = sorted(set(value) - {"capability", "versions"})
    if unknown:
        raise InvalidRequest(
            f"Unknown key '{unknown[0]}' in a capability range declaration.",
            param=f"{param}.{unknown[0]}",
            code="invalid_capability_declaration",
        )
    capability = value.get("capability")
    if not isinstance(capability, str) or not capability:
        raise InvalidRequest(
            "`capability` must be a capability id such as 'aitp-02-decisions'.",
            param=f"{param}.capability",
            code="invalid_capability_declaration",
        )
    versions = value.get("versions", "")
    if not isinstance(versions, str):
        raise InvalidRequest(
            "`versions` must be a version range string such as '>=1.0.0,<3'.",
            param=f"{param}.versions",
            code="invalid_capability_declaration",
        )
    try:
        SpecifierSet(versions)
    except InvalidSpecifier as exc:
        raise InvalidRequest(
            f"Invalid version range {versions!r}: {exc}",
            param=f"{param}.versions",
            code="invalid_capability_declaration",
        ) from None
    return {"capability": capability, "versions": versions}
