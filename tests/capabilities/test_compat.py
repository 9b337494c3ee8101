"""Breaking-change detection between two versions of a capability schema (aitp.capabilities.compat).

The tables below are the specification: each breaking pair names the kinds it must report and a witness, a
value the old schema accepts and the new one rejects; each compatible pair lists values the old schema accepts,
and jsonschema checks the new one accepts them too, so the tables hold for real validators and not only for the
detector.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest

from aitp.capabilities import compat
from aitp.capabilities.compat import (
    BRANCH_REMOVED,
    CONSTRAINT_ADDED,
    KINDS,
    PROPERTY_REMOVED,
    REQUIRED_ADDED,
    TYPE_NARROWED,
    Break,
    breaking_changes,
    comparer,
    detect,
    logic_rules,
    parts,
    subschemas,
)
from aitp.capabilities.compat import values as compat_values
from aitp.capabilities.registry import CapabilityRef, Registry, default_directory
from aitp.capabilities.schema_formats import to_json_schema

Schema = dict[str, Any] | bool
NO_VALUE = object()


@dataclass(frozen=True)
class Case:
    name: str
    old: Schema
    new: Schema
    kinds: frozenset[str]  # empty: compatible
    witness: Any = NO_VALUE  # breaking: accepted by old, rejected by new
    accepted: tuple[Any, ...] = ()  # compatible: accepted by old, so by new too
    pointer: str | None = None  # where every break must point, when given


def breaking(
    name: str, old: Schema, new: Schema, *kinds: str, witness: Any = NO_VALUE, pointer: str | None = None
) -> Case:
    return Case(name, old, new, frozenset(kinds), witness=witness, pointer=pointer)


def compatible(name: str, old: Schema, new: Schema, *accepted: Any) -> Case:
    return Case(name, old, new, frozenset(), accepted=accepted)


def openapi30(schemas: dict[str, Any], root: str = "Root") -> dict[str, Any]:
    """An OpenAPI 3.0 capability document converted the way the registry converts it."""
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "components": {"schemas": schemas}}
    return to_json_schema(document, root)


OBJECT_COLOR: dict[str, Any] = {"type": "object", "properties": {"color": {"type": "string"}}}
DEFS_OLD: dict[str, Any] = {
    "type": "array",
    "items": {"$ref": "#/$defs/Item"},
    "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "string"}}}},
}
DEFS_NEW = copy.deepcopy(DEFS_OLD)
DEFS_NEW["$defs"]["Item"]["required"] = ["id"]
MESSAGES_OLD: dict[str, Any] = {
    "anyOf": [
        {"type": "object", "properties": {"quote": {"type": "object"}}, "required": ["quote"]},
        {"type": "object", "properties": {"payment": {"type": "object"}}, "required": ["payment"]},
    ]
}
MESSAGES_NEW = {"anyOf": [MESSAGES_OLD["anyOf"][0]]}
PAYMENT: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"$ref": "#/components/schemas/Amount"}},
    "required": ["amount"],
}
PAYMENT_OLD = openapi30({"Root": PAYMENT, "Amount": {"type": "number", "minimum": 0, "nullable": True}})
PAYMENT_NEW = openapi30(  # amount no longer nullable, and > 0
    {"Root": PAYMENT, "Amount": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}
)
PAYMENT_WIDER = openapi30(  # amount may be a string too, memo added, amount no longer required
    {
        "Root": {
            "type": "object",
            "properties": {**PAYMENT["properties"], "memo": {"type": "string", "nullable": True}},
        },
        "Amount": {"type": ["number", "string"], "nullable": True},
    }
)
PROTOCOL_OLD = openapi30(
    {
        "Protocol": {"anyOf": [{"$ref": "#/components/schemas/Quote"}, {"$ref": "#/components/schemas/Payment"}]},
        "Quote": {"type": "object", "properties": {"quote": {"type": "object"}}, "required": ["quote"]},
        "Payment": {"type": "object", "properties": {"payment": {"type": "object"}}, "required": ["payment"]},
    },
    root="Protocol",
)
PROTOCOL_NEW = copy.deepcopy(PROTOCOL_OLD)
PROTOCOL_NEW["components"]["schemas"]["Protocol"]["anyOf"].pop()
SIGNING: dict[str, Any] = {  # AITP-05 style: a oneOf discriminated by an enum property the parent requires
    "type": "object",
    "properties": {
        "signing_type": {"type": "string", "enum": ["personal_sign", "typed_data"]},
        "message": {"type": "string"},
        "typed_data": {"type": "object"},
    },
    "required": ["signing_type"],
    "oneOf": [
        {"properties": {"signing_type": {"enum": ["personal_sign"]}}, "required": ["message"]},
        {"properties": {"signing_type": {"enum": ["typed_data"]}}, "required": ["typed_data"]},
    ],
}
SIGNING_WIDER = copy.deepcopy(SIGNING)
SIGNING_WIDER["properties"]["signing_type"]["enum"].append("eth_sign")
SIGNING_WIDER["properties"]["hash"] = {"type": "string"}
SIGNING_WIDER["oneOf"].append({"properties": {"signing_type": {"enum": ["eth_sign"]}}, "required": ["hash"]})
TREE: dict[str, Any] = {
    "$ref": "#/$defs/node",
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
        }
    },
}
TREE_INTEGERS = copy.deepcopy(TREE)
TREE_INTEGERS["$defs"]["node"]["properties"]["value"] = {"type": "integer"}

BREAKING = [
    breaking(
        "required added",
        OBJECT_COLOR,
        {**OBJECT_COLOR, "required": ["color"]},
        REQUIRED_ADDED,
        witness={},
        pointer="",
    ),
    breaking(
        "required added to a nested object",
        {"type": "object", "properties": {"shipping": OBJECT_COLOR}},
        {"type": "object", "properties": {"shipping": {**OBJECT_COLOR, "required": ["color"]}}},
        REQUIRED_ADDED,
        witness={"shipping": {}},
        pointer="/properties/shipping",
    ),
    breaking(
        "required added through a $ref into $defs",
        DEFS_OLD,
        DEFS_NEW,
        REQUIRED_ADDED,
        witness=[{}],
        pointer="/$defs/Item",
    ),
    breaking(
        "OpenAPI components: nullable dropped and minimum made exclusive",
        PAYMENT_OLD,
        PAYMENT_NEW,
        TYPE_NARROWED,
        "bounds_tightened",
        witness={"amount": 0},
    ),
    breaking(
        "OpenAPI components: message type removed from the root anyOf",
        PROTOCOL_OLD,
        PROTOCOL_NEW,
        BRANCH_REMOVED,
        witness={"payment": {}},
        pointer="/components/schemas/Protocol",
    ),
    breaking(
        "property removed from a closed object",
        {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        PROPERTY_REMOVED,
        witness={"b": 1},
        pointer="",
    ),
    breaking(
        "property removed under unevaluatedProperties false",
        {"type": "object", "properties": {"a": {}, "b": {}}, "unevaluatedProperties": False},
        {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
        PROPERTY_REMOVED,
        witness={"b": 1},
    ),
    breaking(
        "additionalProperties closed",
        OBJECT_COLOR,
        {**OBJECT_COLOR, "additionalProperties": False},
        "additional_properties_closed",
        witness={"size": 3},
        pointer="",
    ),
    breaking(
        "additionalProperties restricted to a schema",
        OBJECT_COLOR,
        {**OBJECT_COLOR, "additionalProperties": {"type": "string"}},
        "additional_properties_closed",
        witness={"size": 3},
    ),
    breaking(
        "type narrowed",
        {"type": ["string", "integer"]},
        {"type": "string"},
        TYPE_NARROWED,
        witness=7,
    ),
    breaking("number to integer", {"type": "number"}, {"type": "integer"}, TYPE_NARROWED, witness=1.5),
    breaking(
        "type added where there was none",
        {"minLength": 1},
        {"type": "string", "minLength": 1},
        TYPE_NARROWED,
        witness=7,
    ),
    breaking(
        "type narrowed inside items",
        {"type": "array", "items": {"type": ["string", "null"]}},
        {"type": "array", "items": {"type": "string"}},
        TYPE_NARROWED,
        witness=[None],
        pointer="/items",
    ),
    breaking(
        "enum value removed",
        {"enum": ["red", "green", "blue"]},
        {"enum": ["red", "green"]},
        "enum_narrowed",
        witness="blue",
    ),
    breaking(
        "const added",
        {"type": "string"},
        {"type": "string", "const": "v1"},
        "enum_narrowed",
        witness="v2",
    ),
    breaking(
        "anyOf branch removed",
        MESSAGES_OLD,
        MESSAGES_NEW,
        BRANCH_REMOVED,
        witness={"payment": {}},
        pointer="",
    ),
    breaking(
        "anyOf branch narrowed (matched by content, not index)",
        {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"n": {"type": "number"}}}]},
        {"anyOf": [{"type": "object", "properties": {"n": {"type": "integer"}}}, {"type": "string"}]},
        BRANCH_REMOVED,
        witness={"n": 0.5},
    ),
    breaking(
        "oneOf branch added that overlaps an existing one",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "integer"}]},
        CONSTRAINT_ADDED,
        witness=1,
    ),
    breaking(
        "maximum lowered in a nested property",
        {"type": "object", "properties": {"age": {"type": "integer", "maximum": 10}}},
        {"type": "object", "properties": {"age": {"type": "integer", "maximum": 5}}},
        "bounds_tightened",
        witness={"age": 7},
        pointer="/properties/age",
    ),
    breaking(
        "minLength added inside items",
        {"type": "array", "items": {"type": "string"}},
        {"type": "array", "items": {"type": "string", "minLength": 1}},
        "bounds_tightened",
        witness=[""],
        pointer="/items",
    ),
    breaking(
        "maximum made exclusive",
        {"type": "number", "maximum": 5},
        {"type": "number", "exclusiveMaximum": 5},
        "bounds_tightened",
        witness=5,
    ),
    breaking(
        "maxItems added", {"type": "array"}, {"type": "array", "maxItems": 2}, "bounds_tightened", witness=[1, 2, 3]
    ),
    breaking(
        "uniqueItems added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        "bounds_tightened",
        witness=[1, 1],
    ),
    breaking(
        "multipleOf changed to one the old is not a multiple of",
        {"type": "integer", "multipleOf": 2},
        {"type": "integer", "multipleOf": 4},
        "bounds_tightened",
        witness=2,
    ),
    breaking(
        "prefixItems position narrowed",
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        TYPE_NARROWED,
        witness=["a", 0.5],
        pointer="/prefixItems/1",
    ),
    breaking(
        "patternProperties schema narrowed",
        {"type": "object", "patternProperties": {"^x-": {"type": ["string", "number"]}}},
        {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
        TYPE_NARROWED,
        witness={"x-a": 1},
        pointer="/patternProperties/^x-",
    ),
    breaking(
        "pattern added", {"type": "string"}, {"type": "string", "pattern": "^[a-z]+$"}, "pattern_changed", witness="A"
    ),
    breaking(
        "pattern changed",
        {"type": "string", "pattern": "^a"},
        {"type": "string", "pattern": "^ab"},
        "pattern_changed",
        witness="ac",
    ),
    breaking(
        "not added",
        {"type": "object"},
        {"type": "object", "not": {"required": ["legacy"]}},
        CONSTRAINT_ADDED,
        witness={"legacy": 1},
    ),
    breaking(
        "allOf member with not added",
        {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]},
        {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}, {"not": {"required": ["b"]}}]},
        CONSTRAINT_ADDED,
        witness={"b": 1},
        pointer="/allOf/1",
    ),
    breaking(
        "allOf member adding a requirement",
        {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]},
        {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["a"]}]},
        REQUIRED_ADDED,
        witness={},
        pointer="/allOf/1",
    ),
    breaking(
        "if/then added",
        {"type": "object"},
        {"type": "object", "if": {"required": ["kind"]}, "then": {"required": ["id"]}},
        CONSTRAINT_ADDED,
        witness={"kind": "x"},
    ),
    breaking(
        "dependentRequired added",
        {"type": "object"},
        {"type": "object", "dependentRequired": {"card": ["cvv"]}},
        CONSTRAINT_ADDED,
        witness={"card": "4111"},
    ),
    breaking(
        "property schema became false",
        {"type": "object", "properties": {"a": {}}},
        {"type": "object", "properties": {"a": False}},
        CONSTRAINT_ADDED,
        witness={"a": 1},
        pointer="/properties/a",
    ),
    breaking("true to false", True, False, CONSTRAINT_ADDED, witness=1, pointer=""),
    breaking("true to a typed schema", True, {"type": "string"}, TYPE_NARROWED, witness=1),
    breaking(
        "anyOf added that no branch covers",
        {"type": "object"},
        {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        CONSTRAINT_ADDED,
        witness={},
    ),
    breaking(
        "unknown assertion keyword added",
        {"type": "string"},
        {"type": "string", "x-custom": 1, "someNewKeyword": 3},
        CONSTRAINT_ADDED,
        # validators ignore unknown keywords, so no witness: the detector is only being conservative
    ),
    breaking(
        "recursive schema: value narrowed deep in the tree",
        TREE,
        TREE_INTEGERS,
        TYPE_NARROWED,
        witness={"value": 1, "children": [{"value": 0.5}]},
        pointer="/$defs/node/properties/value",
    ),
]

COMPATIBLE = [
    compatible(
        "optional property added",
        OBJECT_COLOR,
        {"type": "object", "properties": {"color": {"type": "string"}, "size": {"type": "integer"}}},
        {},
        {"color": "red"},
        {"color": "red", "size": 3},
        # {"size": "L"} is accepted by old and rejected by new: an added optional property is allowed by policy
    ),
    compatible(
        "enum widened",
        {"enum": ["red", "green"]},
        {"enum": ["red", "green", "blue"]},
        "red",
        "green",
    ),
    compatible("const to an enum holding it", {"const": "a"}, {"type": "string", "enum": ["a", "b"]}, "a"),
    compatible(
        "type added that the old enum satisfies", {"enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]}, "a"
    ),
    compatible(
        "anyOf branch added",
        {"anyOf": [{"type": "string"}]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "x",
    ),
    compatible(
        "anyOf branches reordered",
        MESSAGES_OLD,
        {"anyOf": list(reversed(MESSAGES_OLD["anyOf"]))},
        {"quote": {}},
        {"payment": {}},
    ),
    compatible(
        "type list split into anyOf branches",
        {"type": ["string", "integer"]},
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "x",
        3,
    ),
    compatible(
        "bounds relaxed",
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 5}, "s": {"minLength": 2}}},
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}, "s": {"minLength": 1}},
        },
        {"n": 1, "s": "ab"},
        {"n": 5},
    ),
    compatible(
        "exclusiveMinimum 0 to minimum 1 for integers",
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "integer", "minimum": 1},
        1,
        2,
    ),
    compatible("multipleOf 4 to 2", {"type": "integer", "multipleOf": 4}, {"type": "integer", "multipleOf": 2}, 4, 8),
    compatible(
        "required removed",
        {**OBJECT_COLOR, "required": ["color"]},
        OBJECT_COLOR,
        {"color": "red"},
    ),
    compatible(
        "integer to number",
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        {"type": "object", "properties": {"n": {"type": "number"}}},
        {"n": 1},
    ),
    compatible(
        "description, title, examples and format changed",
        {"type": "string", "description": "old", "title": "A"},
        {"type": "string", "description": "new", "title": "B", "examples": ["x"], "format": "email", "$comment": "c"},
        "not an email",
    ),
    compatible(
        "additionalProperties opened",
        {**OBJECT_COLOR, "additionalProperties": False},
        OBJECT_COLOR,
        {"color": "red"},
    ),
    compatible(
        "property removed from an open object",
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"a": "x", "b": "y"},
    ),
    compatible(
        "inline schema moved into $defs",
        {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
        DEFS_OLD,
        [{"id": "a"}],
    ),
    compatible(
        "allOf members reordered",
        {"allOf": [{"type": "object"}, {"required": ["a"]}]},
        {"allOf": [{"required": ["a"]}, {"type": "object"}]},
        {"a": 1},
    ),
    compatible(
        "OpenAPI components: nullable added, type widened, optional property added, required removed",
        PAYMENT_OLD,
        PAYMENT_WIDER,
        {"amount": 3},
        {"amount": None},
    ),
    compatible(
        "pattern the old enum values all match",
        {"enum": ["ab", "ac"]},
        {"type": "string", "pattern": "^a"},
        "ab",
        "ac",
    ),
    compatible(
        "oneOf branch added, disjoint by its discriminator",
        SIGNING,
        SIGNING_WIDER,
        {"signing_type": "personal_sign", "message": "hi"},
        {"signing_type": "typed_data", "typed_data": {}, "message": "both keys"},
    ),
    compatible(
        "pattern unchanged, maxLength dropped",
        {"type": "string", "pattern": "^a", "maxLength": 9},
        {"type": "string", "pattern": "^a"},
        "ab",
    ),
    compatible("false to anything", False, {"type": "string"}),
    compatible("anything to true", {"type": "string", "minLength": 3}, True, "abc"),
    compatible("identical recursive schemas", TREE, copy.deepcopy(TREE), {"value": 1, "children": [{"value": 2}]}),
]


def _validator(schema: Schema) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("case", BREAKING, ids=lambda c: c.name)
def test_breaking_pairs(case: Case) -> None:
    found = breaking_changes(case.old, case.new)
    assert {b.kind for b in found} == case.kinds, found
    if case.pointer is not None:
        assert {b.pointer for b in found} == {case.pointer}, found


@pytest.mark.parametrize("case", [c for c in BREAKING if c.witness is not NO_VALUE], ids=lambda c: c.name)
def test_breaking_witness_is_real(case: Case) -> None:
    assert _validator(case.old).is_valid(case.witness)
    assert not _validator(case.new).is_valid(case.witness)


@pytest.mark.parametrize("case", COMPATIBLE, ids=lambda c: c.name)
def test_compatible_pairs(case: Case) -> None:
    assert breaking_changes(case.old, case.new) == []


@pytest.mark.parametrize("case", [c for c in COMPATIBLE if c.accepted], ids=lambda c: c.name)
def test_compatible_instances_still_accepted(case: Case) -> None:
    old, new = _validator(case.old), _validator(case.new)
    for instance in case.accepted:
        assert old.is_valid(instance), instance  # the table lists values the old version accepts
        assert new.is_valid(instance), instance


def test_table_covers_every_kind() -> None:
    assert set(KINDS) == {kind for case in BREAKING for kind in case.kinds}
    assert len(BREAKING) >= 12 and len(COMPATIBLE) >= 8


def test_messages_name_what_changed() -> None:
    def messages(old: Schema, new: Schema) -> list[str]:
        return [b.message for b in breaking_changes(old, new)]

    assert messages(OBJECT_COLOR, {**OBJECT_COLOR, "required": ["color"]}) == ["property 'color' became required"]
    assert messages({"enum": ["red", "blue"]}, {"enum": ["blue"]}) == ["enum no longer allows 'red'"]
    assert messages({"maximum": 10}, {"maximum": 5}) == ["maximum lowered from 10 to 5"]
    assert messages({"minimum": 1}, {"minimum": 3}) == ["minimum raised from 1 to 3"]
    removed = messages(
        {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
    )
    assert removed == ["property 'b' removed while additionalProperties is false"]
    (branch,) = messages(MESSAGES_OLD, MESSAGES_NEW)
    assert branch.startswith("old anyOf branch /anyOf/1 (requiring 'payment') is accepted by no branch")


def test_openapi_breaks_point_into_components() -> None:
    found = breaking_changes(PAYMENT_OLD, PAYMENT_NEW)
    assert {b.pointer for b in found} == {"/components/schemas/Amount"}


def test_change_inside_one_message_type_names_the_closest_branch() -> None:
    new = copy.deepcopy(MESSAGES_OLD)
    new["anyOf"][1]["required"] = ["payment", "id"]
    (found,) = breaking_changes(MESSAGES_OLD, new)
    assert found.kind == BRANCH_REMOVED and found.pointer == ""
    assert "/anyOf/1" in found.message and "property 'id' became required" in found.message


def test_several_breaks_are_all_reported() -> None:
    old = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "string"}}}
    new = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3}},
        "required": ["a"],
    }
    found = breaking_changes(old, new)
    assert {(b.pointer, b.kind) for b in found} == {
        ("/properties/a", TYPE_NARROWED),
        ("/properties/b", "bounds_tightened"),
        ("", REQUIRED_ADDED),
    }
    assert len(found) == len(set(found))


def test_recursive_schemas_terminate() -> None:
    assert breaking_changes(TREE, copy.deepcopy(TREE)) == []
    mutual = {
        "$defs": {
            "a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}},
            "b": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}},
        },
        "anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#"}],
        "properties": {"self": {"$ref": "#"}},
    }
    assert breaking_changes(mutual, copy.deepcopy(mutual)) == []
    looping = {"$ref": "#/$defs/x", "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}}
    assert breaking_changes(looping, copy.deepcopy(looping)) == []
    assert breaking_changes(looping, TREE)  # a reference loop accepts anything; the tree does not


def test_unused_definitions_are_not_compared() -> None:
    old = {"type": "string", "$defs": {"unused": {"type": "string"}}}
    new = {"type": "string", "$defs": {"unused": {"type": "integer", "required": ["x"]}}}
    assert breaking_changes(old, new) == []


@pytest.fixture(scope="module")
def shipped() -> dict[str, dict[str, Any]]:
    """Every shipped (capability, version) schema as the registry compiles it, keyed "id@version"."""
    registry = Registry.from_directory(default_directory())
    schemas: dict[str, dict[str, Any]] = {}
    for info in registry.capabilities():
        for version in registry.versions(info.id):
            loaded = registry.get(CapabilityRef(info.id, version))
            assert loaded is not None
            schemas[f"{info.id}@{version}"] = loaded.schema
    assert schemas
    return schemas


def test_every_shipped_schema_is_compatible_with_itself(shipped: dict[str, dict[str, Any]]) -> None:
    for name, schema in shipped.items():
        assert breaking_changes(schema, schema) == [], name
        assert breaking_changes(schema, copy.deepcopy(schema)) == [], name


def test_shipped_schemas_compared_with_each_other_do_not_crash(shipped: dict[str, dict[str, Any]]) -> None:
    for old in shipped.values():
        for new in shipped.values():
            assert all(b.kind in KINDS for b in breaking_changes(old, new))


ODD = [
    True,
    False,
    {},
    {"type": 5, "enum": "x", "required": "a", "properties": [1], "items": 3, "allOf": {"a": 1}, "anyOf": []},
    {"$ref": "https://example.com/remote.json"},
    {"$ref": "#/nowhere"},
    {"$ref": "#anchor", "minimum": "3", "maxLength": -1, "multipleOf": 0, "pattern": "(unclosed"},
    {"properties": {"a": None, "b": 1.5}, "patternProperties": {"[": {}}, "prefixItems": "x", "contains": 1},
    {
        "not": True,
        "if": False,
        "then": [],
        "dependentRequired": {"a": "b"},
        "dependentSchemas": [],
        "futureKeyword": {},
    },
]


@pytest.mark.parametrize("old", ODD, ids=lambda s: str(s)[:40])
@pytest.mark.parametrize("new", ODD, ids=lambda s: str(s)[:40])
def test_odd_input_does_not_crash(old: Schema, new: Schema) -> None:
    found = breaking_changes(old, new)
    assert all(isinstance(b, Break) and b.kind in KINDS for b in found)
    if old == new:
        assert found == []


def test_too_much_work_is_one_conservative_break(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comparer, "MAX_COMPARISONS", 3)
    (found,) = breaking_changes(MESSAGES_OLD, copy.deepcopy(MESSAGES_OLD))
    assert (found.pointer, found.kind) == ("", CONSTRAINT_ADDED) and "too complex" in found.message


def test_deep_nesting_is_one_conservative_break() -> None:
    def nested(depth: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(depth):
            schema = {"type": "object", "properties": {"x": schema}}
        return schema

    assert breaking_changes(nested(50), nested(50)) == []
    (found,) = breaking_changes(nested(5000), nested(5000))
    assert found.kind == CONSTRAINT_ADDED


def test_patterns_use_the_validation_engine() -> None:
    # the regex crate (no catastrophic backtracking) decides whether old enum values still match
    slow_for_backtracking = "^(a+)+$"
    assert breaking_changes({"enum": ["a" * 40 + "!"]}, {"pattern": slow_for_backtracking}) != []
    assert breaking_changes({"enum": ["aaa"]}, {"pattern": slow_for_backtracking}) == []


def test_break_is_frozen() -> None:
    (found,) = breaking_changes({"type": "number"}, {"type": "integer"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.kind = "other"  # type: ignore[misc]


# ------------------------------------------------------------------------- bounded work (issue 14)


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: calls.append(a) or original(*a, **k))
    return calls


def test_enum_values_are_compared_by_hashing_not_pairwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 values compared pairwise took 56 s; 2,000 here made 2 million comparisons."""
    calls = _count(monkeypatch, logic_rules, "_json_equal")
    values = [f"v{i}" for i in range(2000)]
    assert breaking_changes({"enum": values}, {"enum": values[::-1]}) == []
    narrowed = breaking_changes({"enum": values}, {"enum": values[1:]})
    assert [b.kind for b in narrowed] == [compat.ENUM_NARROWED] and "'v0'" in narrowed[0].message
    both = {"allOf": [{"enum": values}, {"enum": values[::2]}]}  # the old side's values: an intersection
    assert breaking_changes(both, {"enum": values[::2]}) == []
    assert len(calls) <= 10


def test_branch_lists_are_built_once_per_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each old oneOf branch looked for its match among the new branches rebuilt as a fresh list: 1,000
    branches took 5 s."""
    calls = _count(monkeypatch, parts._Part, "child")

    def branch(i: int) -> dict[str, Any]:
        return {"type": "object", "required": ["k"], "properties": {"k": {"const": f"t{i}"}}}

    old = {"oneOf": [branch(i) for i in range(300)]}
    assert breaking_changes(old, {"oneOf": [*old["oneOf"], branch(300)]}) == []
    assert len(calls) <= 40 * 300


def test_each_pattern_is_compiled_once_per_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    """More patterns than the shared cache holds were compiled again for every property name."""
    compat_values._pattern_validator.cache_clear()
    compiles = _count(monkeypatch, compat_values.jsonschema_rs, "validator_for")
    patterns = {f"^x{i}_": {"type": "string"} for i in range(1100)}
    old = {
        "type": "object",
        "properties": {f"n{i}": {"type": "string"} for i in range(5)},
        "patternProperties": patterns,
    }
    new = copy.deepcopy(old)
    new["properties"]["n5"] = {"type": "string"}
    assert breaking_changes(old, new) == []
    assert len(compiles) <= 1100


def test_the_work_of_one_comparison_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_STEPS elementary steps the answer is 'cannot be shown compatible', and no more work is done."""
    monkeypatch.setattr(detect, "MAX_STEPS", 2_000)
    searches = _count(monkeypatch, subschemas, "_search")
    patterns = {f"^x{i}_": {"type": "string"} for i in range(300)}
    old = {
        "type": "object",
        "properties": {f"n{i}": {"type": "string"} for i in range(300)},
        "patternProperties": patterns,
    }
    new = copy.deepcopy(old)
    new["properties"]["n300"] = {"type": "string"}
    breaks = breaking_changes(old, new)
    assert [b.kind for b in breaks] == [CONSTRAINT_ADDED] and "cannot be shown" in breaks[0].message
    assert len(searches) <= 2_000
