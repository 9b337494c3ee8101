"""Capability schema formats: plain JSON Schema, and OpenAPI documents whose root is a component schema.

AITP-01 and AITP-02 are published as OpenAPI 3.0 documents (`components/schemas`, root `PaymentProtocol` /
`DecisionProtocol`); the others as JSON Schema 2020-12. `to_json_schema` turns either into one JSON Schema
2020-12 document that a validator compiles as is:

- JSON Schema: returned unchanged (a copy), with `$schema` defaulted to 2020-12 when absent.
- OpenAPI 3.0: every schema under `components/schemas` is converted (`nullable: true` adds "null" to an
  explicit `type`; boolean `exclusiveMinimum`/`exclusiveMaximum` become the 2020-12 numeric form;
  `example` becomes `examples`; siblings of `$ref` are dropped, as OpenAPI 3.0 ignores them) and wrapped as
  `{"$ref": "#/components/schemas/<root>", "components": {"schemas": ...}}`, so the document's own
  `#/components/schemas/...` references keep resolving.
- OpenAPI 3.1: its schemas already are 2020-12; only wrapped.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
COMPONENTS_PREFIX = "#/components/schemas/"

SchemaFormat = Literal["json-schema", "openapi-3.0", "openapi-3.1"]

# keywords whose value is one schema / a list of schemas / a map of name -> schema (OpenAPI 3.0 subset
# plus the 2020-12 applicators, so a document mixing them is still walked completely)
_ONE_SCHEMA = ("items", "not", "additionalProperties", "contains", "if", "then", "else", "propertyNames")
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


class SchemaFormatError(ValueError):
    """A capability schema document that cannot be turned into JSON Schema."""


def detect_format(document: Any) -> SchemaFormat:
    """Which kind of document this is: an OpenAPI 3.0 / 3.1 document or (anything else) a JSON Schema."""
    if isinstance(document, dict) and isinstance(document.get("openapi"), str):
        version = document["openapi"].strip()
        if version.startswith("3.0"):
            return "openapi-3.0"
        if version.startswith("3.1"):
            return "openapi-3.1"
        raise SchemaFormatError(f"unsupported OpenAPI version {version!r} (3.0 and 3.1 are supported)")
    return "json-schema"


def is_openapi(document: Any) -> bool:
    return detect_format(document) != "json-schema"


def component_schemas(document: dict[str, Any]) -> dict[str, Any]:
    schemas = (document.get("components") or {}).get("schemas")
    if not isinstance(schemas, dict) or not schemas:
        raise SchemaFormatError("an OpenAPI capability document needs a non-empty components/schemas")
    return schemas


def find_openapi_root(document: dict[str, Any]) -> str:
    """The one component schema no other component references (the capability's root), else an error."""
    schemas = component_schemas(document)
    referenced: set[str] = set()
    for name, schema in schemas.items():
        referenced |= _component_refs(schema) - {name}  # a schema referring to itself is still a root
    roots = [name for name in schemas if name not in referenced]
    if len(roots) != 1:
        raise SchemaFormatError(
            f"cannot tell the root schema of this OpenAPI document (candidates: {', '.join(roots) or 'none'}); "
            'name it with "openapi_root" in capability.json'
        )
    return roots[0]


def _component_refs(node: Any) -> set[str]:
    """Names of the components/schemas entries that `node` refers to."""
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(COMPONENTS_PREFIX):
            found.add(ref[len(COMPONENTS_PREFIX) :].split("/", 1)[0])
        for value in node.values():
            found |= _component_refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _component_refs(value)
    return found


def to_json_schema(document: dict[str, Any], openapi_root: str | None = None) -> dict[str, Any]:
    """The JSON Schema 2020-12 document to compile for `document` (never modifies `document`)."""
    if not isinstance(document, dict):
        raise SchemaFormatError("a capability schema must be a JSON object")
    kind = detect_format(document)
    if kind == "json-schema":
        schema = copy.deepcopy(document)
        schema.setdefault("$schema", JSON_SCHEMA_2020_12)
        return schema
    schemas = component_schemas(document)
    root = openapi_root or find_openapi_root(document)
    if root not in schemas:
        raise SchemaFormatError(f"openapi_root {root!r} is not one of components/schemas: {', '.join(schemas)}")
    if kind == "openapi-3.0":
        converted = {name: convert_openapi30_schema(schema) for name, schema in schemas.items()}
    else:
        converted = copy.deepcopy(schemas)
    wrapped: dict[str, Any] = {"$schema": JSON_SCHEMA_2020_12}
    info = document.get("info")
    if isinstance(info, dict):
        for key in ("title", "description"):
            if isinstance(info.get(key), str):
                wrapped[key] = info[key]
    wrapped["$ref"] = COMPONENTS_PREFIX + root
    wrapped["components"] = {"schemas": converted}
    return wrapped


def convert_openapi30_schema(schema: Any) -> Any:
    """One OpenAPI 3.0 Schema Object (and everything under it) as JSON Schema 2020-12; returns a new object."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)  # `true`/`false` and anything malformed: left for the metaschema check
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}  # OpenAPI 3.0: "any properties added SHALL be ignored"
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE_SCHEMA and isinstance(value, dict):
            out[key] = convert_openapi30_schema(value)
        elif key in _SCHEMA_LIST and isinstance(value, list):
            out[key] = [convert_openapi30_schema(item) for item in value]
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            out[key] = {name: convert_openapi30_schema(item) for name, item in value.items()}
        elif key in ("nullable", "exclusiveMinimum", "exclusiveMaximum", "example"):
            continue  # handled below
        else:
            out[key] = copy.deepcopy(value)

    # nullable: true adds "null" to the allowed types, only where `type` is given (OpenAPI 3.0.3); an
    # `enum` must list null itself to admit it, so it is left as published
    if schema.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types if "null" in types else [*types, "null"]

    # OpenAPI 3.0 exclusiveMinimum/Maximum are booleans qualifying minimum/maximum
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = schema.get(exclusive)
        if isinstance(flag, bool):
            if flag and bound in out:
                out[exclusive] = out.pop(bound)
        elif flag is not None:
            out[exclusive] = copy.deepcopy(flag)  # already numeric (2020-12 style): keep

    if "example" in schema and "examples" not in out:
        out["examples"] = [copy.deepcopy(schema["example"])]
    return out
