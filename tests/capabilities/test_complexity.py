"""complexity.expansion: a sound bound of how many subschemas can check one message node (issue 14, item 2).

Every figure asserted here is exact for these schemas, counted by hand: the bound counts a schema node once
per in-place path reaching it ($ref, allOf/anyOf/oneOf, not, if/then/else), and follows each property name
or array position on its own (a name only meets the subschemas declared for it, plus the patterns and
additional ones).
"""

from __future__ import annotations

from typing import Any

import pytest

from aitp.capabilities import complexity
from aitp.capabilities.complexity import SchemaTooComplex, expansion
from aitp.capabilities.registry import Registry, default_directory

DEPTH = 32


def recursive(keyword: str, branches: int = 2) -> dict[str, Any]:
    """A root `keyword` of identical branches whose property `a` refers back to the root."""
    return {keyword: [{"type": "object", "properties": {"a": {"$ref": "#"}}} for _ in range(branches)]}


def chain(levels: int, keyword: str = "anyOf") -> dict[str, Any]:
    """$defs d0..d{levels}: each a `keyword` of two references to the next (2^levels paths, no recursion)."""
    defs: dict[str, Any] = {f"d{i}": {keyword: [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "string"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def test_the_shipped_schemas_are_far_below_the_default_limit() -> None:
    registry = Registry.from_directory(default_directory())
    for info in registry.capabilities():
        for version in info.versions:
            schema = registry.get(
                registry.resolve(f"https://aitp.dev/capabilities/{info.id}/v{version}/schema.json")
            ).schema  # type: ignore[arg-type,union-attr]
            assert expansion(schema, DEPTH, 1000).worst <= 20, info.id


def test_a_plain_object_counts_each_node_once() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(3000)}}
    found = expansion(schema, DEPTH, 10)
    assert (found.worst, found.nodes) == (1, 3001)  # 3,000 names, each meets its own subschema only


def test_in_place_paths_multiply() -> None:
    # d3: 1; each $ref to d(k+1): 1 + its target; d(k): 1 + its two $refs; the root: 1 + d0
    assert expansion(chain(3), DEPTH, 1000).worst == 1 + (1 + 2 * (1 + (1 + 2 * (1 + (1 + 2 * (1 + 1))))))
    with pytest.raises(SchemaTooComplex, match="depth 0 can be checked by more than 1,000 subschemas"):
        expansion(chain(12), DEPTH, 1000)  # 2^13 checks of one string: is_valid alone goes exponential
    with pytest.raises(SchemaTooComplex):
        expansion(chain(12, "allOf"), DEPTH, 1000)


@pytest.mark.parametrize("keyword", ["oneOf", "anyOf", "allOf"])
def test_recursion_through_two_branches_doubles_per_level(keyword: str) -> None:
    # depth 0: the root and its 2 branches; depth d: 2^d paths, each to a $ref node, the root and its 2 branches
    assert expansion(recursive(keyword), 0, 10**9).worst == 3
    assert expansion(recursive(keyword), 5, 10**9).worst == 4 * 2**5
    with pytest.raises(SchemaTooComplex, match=r"at depth 8 .*more than 1,000") as refused:
        expansion(recursive(keyword), DEPTH, 1000)
    assert refused.value.pointer.startswith(f"/{keyword}/")


def test_recursion_through_one_path_does_not_grow() -> None:
    tree = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "left": {"$ref": "#"}, "right": {"$ref": "#"}},
    }
    assert expansion(tree, DEPTH, 10).worst == 2  # a child is `left` or `right`, never both
    any_json: dict[str, Any] = {
        "$defs": {
            "v": {
                "anyOf": [
                    {"type": ["string", "number", "boolean", "null"]},
                    {"type": "array", "items": {"$ref": "#/$defs/v"}},
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}},
                ]
            }
        },
        "$ref": "#/$defs/v",
    }
    assert expansion(any_json, DEPTH, 10).worst == 5


def test_additional_properties_do_not_apply_to_declared_names() -> None:
    # `a` meets properties/a only; any other name additionalProperties only: 2 per level, not 3 doubling
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}}, "additionalProperties": {"$ref": "#"}}
    assert expansion(schema, DEPTH, 10).worst == 2
    # patterns are assumed to match every name: they add up
    patterned = {"type": "object", "properties": {"a": {"$ref": "#"}}, "patternProperties": {"^a": {"$ref": "#"}}}
    with pytest.raises(SchemaTooComplex):
        expansion(patterned, DEPTH, 1000)


def test_items_after_a_prefix_do_not_apply_to_the_prefix() -> None:
    schema = {"type": "array", "prefixItems": [{"$ref": "#"}], "items": {"$ref": "#"}}
    assert expansion(schema, DEPTH, 10).worst == 2


def test_references_by_anchor_id_and_dynamic_ref_are_followed() -> None:
    anchored = {"$defs": {"x": {"$anchor": "X", "type": "string"}}, "properties": {"a": {"$ref": "#X"}}}
    assert expansion(anchored, DEPTH, 10).worst == 2
    identified = {
        "$id": "https://example.com/root.json",
        "$defs": {"x": {"$id": "x.json", "type": "string"}},
        "properties": {"a": {"$ref": "x.json"}, "b": {"$ref": "https://example.com/x.json#"}},
    }
    assert expansion(identified, DEPTH, 10).worst == 2
    dynamic = {
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
    }
    assert expansion(dynamic, DEPTH, 10).worst == 2  # one target, counted once


def test_an_in_place_cycle_is_refused() -> None:
    with pytest.raises(SchemaTooComplex, match="cycle"):
        expansion({"allOf": [{"$ref": "#"}]}, DEPTH, 1000)
    with pytest.raises(SchemaTooComplex, match="cycle"):
        expansion(
            {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
            DEPTH,
            1000,
        )


def test_the_analysis_itself_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema too involved to analyse within MAX_ANALYSIS_STEPS is refused, not analysed at length."""
    monkeypatch.setattr(complexity, "MAX_ANALYSIS_STEPS", 5_000)
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}}
    with pytest.raises(SchemaTooComplex, match="too involved"):
        expansion(schema, DEPTH, 1000)


def test_the_nesting_limit_bounds_the_depth_looked_at() -> None:
    # only the depths messages can reach count: 2^(d+2) grows until the nesting limit, then stops
    assert [expansion(recursive("oneOf"), depth, 10**12).worst for depth in (1, 2, 3, 32)] == [8, 16, 32, 2**34]
