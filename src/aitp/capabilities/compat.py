"""Semver compatibility of capability schemas: the changes that make a new version reject what the old accepted.

A new MINOR or PATCH version of a capability must accept every message the previous version of the same major
accepted. `breaking_changes(old, new)` compares two JSON Schema 2020-12 documents (OpenAPI documents already
converted by `schema_formats.to_json_schema`) and returns one `Break` per change that narrows what is accepted.

How the comparison works:

- Both documents are walked in parallel. A schema position is a *conjunction* of parts: the schema object
  itself, whatever its local `$ref` points at (resolved on each side independently) and its `allOf` members,
  flattened. Keywords are compared across the whole conjunction, so moving a constraint into a `$ref`'d
  definition or an `allOf` member is not a change.
- For every constraint on the new side the detector tries to prove the old side already implied it; when it
  cannot, it reports a break. It errs towards reporting: regexes, `not`, `if`, unknown keywords and the like
  count as breaks unless they are unchanged.
- `anyOf`/`oneOf` on the old side are expanded branch by branch; each old branch must be accepted whole by
  some new branch (tried recursively, not by index), else it is a `branch_removed`.
- Recursive schemas terminate: a pair of positions already being compared is assumed compatible (any real
  break in it is reported where the comparison of that pair started).

Deliberate leniency, as the registry's versioning rules state it: a property added as optional is not a
break even though the old schema, with `additionalProperties` open, accepted any value under that name.
`oneOf` branches are matched like `anyOf` ones; in addition a new or changed `oneOf` branch must be provably
disjoint from the others (by type, enum/const, or a required property the other forbids or gives other values),
since a value matching two branches fails `oneOf`.

Every `Break.pointer` points at a schema object in the NEW document: the one holding the constraint that
breaks, or for something removed (a property, a branch) the schema that used to hold it.

The work is bounded: at most MAX_COMPARISONS conjunctions and MAX_STEPS elementary steps (a child looked up,
a name matched against a pattern, a value compared, two branches checked for overlap) per call; past either,
the answer is one break saying compatibility cannot be shown. Value sets (enum, const) are compared by
hashing, not pairwise, and branch lists and patterns are built once per call, so ordinary schemas stay linear
(a 20,000-value enum took 56 s before; 1,000 oneOf branches 5 s; 1,500 names x 1,500 patterns 12 s).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, TypeGuard
from urllib.parse import unquote

import jsonschema_rs

REQUIRED_ADDED = "required_added"
PROPERTY_REMOVED = "property_removed"
ADDITIONAL_PROPERTIES_CLOSED = "additional_properties_closed"
TYPE_NARROWED = "type_narrowed"
ENUM_NARROWED = "enum_narrowed"
BRANCH_REMOVED = "branch_removed"
BOUNDS_TIGHTENED = "bounds_tightened"
PATTERN_CHANGED = "pattern_changed"
CONSTRAINT_ADDED = "constraint_added"

KINDS = (
    REQUIRED_ADDED,
    PROPERTY_REMOVED,
    ADDITIONAL_PROPERTIES_CLOSED,
    TYPE_NARROWED,
    ENUM_NARROWED,
    BRANCH_REMOVED,
    BOUNDS_TIGHTENED,
    PATTERN_CHANGED,
    CONSTRAINT_ADDED,
)

__all__ = [
    "ADDITIONAL_PROPERTIES_CLOSED",
    "BOUNDS_TIGHTENED",
    "BRANCH_REMOVED",
    "CONSTRAINT_ADDED",
    "ENUM_NARROWED",
    "KINDS",
    "PATTERN_CHANGED",
    "PROPERTY_REMOVED",
    "REQUIRED_ADDED",
    "TYPE_NARROWED",
    "Break",
    "breaking_changes",
]

# "fraction" stands for the non-integer numbers, so "number" = {"integer", "fraction"} and set arithmetic works
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "integer", "fraction"})
_NUMERIC = frozenset({"integer", "fraction"})

# keywords compared somewhere below (or consumed by flattening)
_HANDLED = frozenset(
    {
        "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "type", "enum", "const",
        "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern",
        "items", "prefixItems", "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems",
        "unevaluatedItems",
        "properties", "patternProperties", "additionalProperties", "unevaluatedProperties", "required",
        "dependentRequired", "dependentSchemas", "propertyNames", "minProperties", "maxProperties",
    }
)  # fmt: skip
# how a property subschema applies: these two mean the name is declared by that part
_DECLARING = frozenset({"properties", "patternProperties"})
# keywords that never reject anything (2020-12 annotations, identifiers, containers only reached through $ref,
# and OpenAPI leftovers)
_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs", "definitions",
        "components", "title", "description", "default", "examples", "example", "deprecated", "readOnly",
        "writeOnly", "format", "contentEncoding", "contentMediaType", "contentSchema", "discriminator", "xml",
        "externalDocs", "nullable",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Break:
    pointer: str  # RFC 6901 pointer to a schema in the NEW document ("" = root); for a removal, the parent schema
    kind: str  # one of KINDS
    message: str  # human readable, names the property / value / bound


def breaking_changes(old: dict[str, Any] | bool, new: dict[str, Any] | bool) -> list[Break]:
    """Every change that makes `new` reject a value `old` accepted; [] when `new` is backward compatible."""
    token = _work.set(_Work(MAX_STEPS))
    try:
        found = _Comparer().compare([_Part.root("o", old)], [_Part.root("n", new)])
    except (_TooComplex, RecursionError):
        # schemas come from whoever registers them: bound the work, and answer "not shown compatible"
        message = "schemas too complex or too deeply nested to compare; compatibility cannot be shown"
        return [Break("", CONSTRAINT_ADDED, message)]
    finally:
        _work.reset(token)
    return list(dict.fromkeys(found))


class _TooComplex(Exception):
    """The comparison needed more than MAX_COMPARISONS conjunctions (anyOf/oneOf combinations multiply)."""


MAX_COMPARISONS = 10_000  # the shipped schemas need about a hundred; this bounds the worst case to seconds
MAX_STEPS = 1_000_000  # elementary steps per call (a few µs each): the shipped schemas need a few thousand


class _Work:
    """What one `breaking_changes` call may still spend, and what it has learnt (patterns, branch lists)."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.patterns: dict[str, Any] = {}  # pattern -> compiled validator (None: does not compile)
        self.branches: dict[tuple[str, str], list[_Part]] = {}  # (part key, keyword) -> its branch parts


_work: ContextVar[_Work | None] = ContextVar("aitp_compat_work", default=None)


def _spend(count: int = 1) -> None:
    work = _work.get()
    if work is None:
        return
    work.steps -= count
    if work.steps < 0:
        raise _TooComplex


@dataclass(frozen=True, eq=False)
class _Part:
    """One schema object taking part in a conjunction, with where it lives."""

    side: str  # "o" / "n": which document; keeps keys of the two documents apart
    doc: Any  # the whole document, for $ref; None for synthetic parts
    pointer: str
    node: Any
    key: str  # identifies the constraint set: side + pointer, plus what was stripped from the node
    full: Any = None  # for a node with keywords stripped, the node as published

    @staticmethod
    def root(side: str, doc: Any) -> _Part:
        return _Part(side, doc, "", doc, f"{side}:")

    @staticmethod
    def synthetic(node: dict[str, Any]) -> _Part:
        return _Part("o", None, "", node, "!" + json.dumps(node, sort_keys=True))

    @property
    def base(self) -> str:
        """The key of the unmodified node at this place."""
        return self.key if self.doc is None else f"{self.side}:{self.pointer}"

    def get(self, keyword: str) -> Any:
        return self.node.get(keyword) if isinstance(self.node, dict) else None

    def has(self, keyword: str) -> bool:
        return isinstance(self.node, dict) and keyword in self.node

    def child(self, *path: str | int) -> _Part:
        _spend()
        node: Any = self.node
        for step in path:
            if isinstance(node, dict) and isinstance(step, str):
                node = node.get(step, True)
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                node = node[step]
            else:
                node = True
        pointer = self.pointer + "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in path)
        if self.doc is None:  # synthetic parents have synthetic children
            return _Part(self.side, None, pointer, node, "!" + json.dumps(node, sort_keys=True, default=str))
        return _Part(self.side, self.doc, pointer, node, f"{self.side}:{pointer}")

    def without(self, keyword: str) -> _Part:
        node = {k: v for k, v in self.node.items() if k != keyword}
        return _Part(self.side, self.doc, self.pointer, node, f"{self.key}|-{keyword}", self.published)

    @property
    def published(self) -> Any:
        return self.node if self.full is None else self.full


@dataclass(frozen=True)
class _OldInfo:
    """What the old conjunction is known to accept, as far as the keyword checks need it."""

    types: frozenset[str]  # expanded type names (see _ALL_TYPES)
    values: list[Any] | None  # the only values accepted (enum/const), None when not finite

    def accepts(self, *types: str) -> bool:
        return bool(self.types & set(types))


@dataclass(frozen=True)
class _Label:
    """An old anyOf/oneOf branch being compared on its own."""

    keyword: str
    pointer: str
    index: int
    summary: str  # what the branch is about, for messages: "'payment'", "title 'Quote'", ...


class _Comparer:
    def __init__(self) -> None:
        self._budget = MAX_COMPARISONS
        self._memo: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Break]] = {}
        self._active: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()

    def compare(self, old: list[_Part], new: list[_Part]) -> list[Break]:
        """Breaks for the conjunction `new` against the conjunction `old` (both flattened here)."""
        old, new = _flatten(old), _flatten(new)
        key = (tuple(sorted(p.key for p in old)), tuple(sorted(p.key for p in new)))
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return []  # recursion: assume compatible; a real break shows up at this pair's first comparison
        self._active.add(key)
        try:
            found = [*self._exclusive(old, new), *self._expand(old, new, (), frozenset())]
            result = list(dict.fromkeys(found))
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def accepts_all(self, old: list[_Part], new: list[_Part]) -> bool:
        return not self.compare(old, new)

    def _expand(
        self, old: list[_Part], new: list[_Part], labels: tuple[_Label, ...], done: frozenset[str]
    ) -> list[Break]:
        """Split the old side at its first anyOf/oneOf: each old branch must be accepted on its own."""
        for index, part in enumerate(old):
            for keyword in ("anyOf", "oneOf"):
                branches = part.get(keyword)
                if not isinstance(branches, list):
                    continue
                rest = old[:index] + [part.without(keyword)] + old[index + 1 :]
                split = f"{part.base}|{keyword}"
                if not branches or split in done:
                    return self._expand(rest, new, labels, done)  # invalid or split already: drop it, stay lenient
                found: list[Break] = []
                for number in range(len(branches)):
                    # _flatten keeps the stripped node: a branch referring back to it cannot bring the anyOf back
                    branch = part.child(keyword, number)
                    merged = _flatten(rest + [branch])
                    label = _Label(keyword, branch.pointer, number, _summary(_flatten([branch])))
                    found += self._expand(merged, new, (*labels, label), done | {split})
                return found
        return self._compare_conjunction(old, new, labels)

    def _compare_conjunction(self, old: list[_Part], new: list[_Part], labels: tuple[_Label, ...]) -> list[Break]:
        self._budget -= 1
        if self._budget < 0:
            raise _TooComplex
        _spend(len(old) + len(new))
        if any(p.node is False for p in old):
            return []  # the old side accepts nothing
        info = _old_info(old)
        found: list[Break] = []
        for part in new:
            if part.node is False:
                found.append(Break(part.pointer, CONSTRAINT_ADDED, "schema is false: it now rejects every value"))
        found += self._types(info, new)
        found += self._enums(info, new)
        if info.accepts(*_NUMERIC):
            found += self._numbers(old, info, new)
        if info.accepts("string"):
            found += self._strings(old, info, new)
        if info.accepts("array"):
            found += self._arrays(old, info, new)
        if info.accepts("object"):
            found += self._objects(old, info, new)
        found += self._negations(old, new)
        found += self._conditionals(old, new)
        found += self._disjunctions(old, info, new, labels)
        found += self._unknown(old, new)
        return found

    # -- type, enum, const -------------------------------------------------------------------------------------

    def _types(self, info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        for part in new:
            allowed = _types_of(part.get("type"))
            if allowed is None:
                continue
            if info.values is not None:
                for value in info.values:
                    if _value_type(value) not in allowed:
                        yield Break(part.pointer, TYPE_NARROWED, f"type no longer allows {_show(value)}")
            elif missing := info.types - allowed:
                yield Break(part.pointer, TYPE_NARROWED, f"type no longer allows {_type_names(missing)}")

    def _enums(self, info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        domain = info.values
        if domain is None and info.types <= {"null", "boolean"}:
            domain = [v for t, v in (("null", None), ("boolean", False), ("boolean", True)) if t in info.types]
        for part in new:
            for keyword in ("enum", "const"):
                if not part.has(keyword):
                    continue
                allowed = [part.get("const")] if keyword == "const" else part.get("enum")
                if not isinstance(allowed, list):
                    continue
                if domain is None:
                    shown = _show(allowed[0]) if keyword == "const" and allowed else _show(allowed)
                    yield Break(part.pointer, ENUM_NARROWED, f"{keyword} {shown} added where any value was allowed")
                    continue
                _spend(len(allowed) + len(domain))
                accepted = {_normal(a) for a in allowed}
                for value in domain:
                    if _normal(value) not in accepted:
                        yield Break(part.pointer, ENUM_NARROWED, f"{keyword} no longer allows {_show(value)}")

    # -- numbers -------------------------------------------------------------------------------------------------

    def _numbers(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if _is_number(v)]
        integers_only = not info.accepts("fraction")
        for lower, keywords in ((True, ("minimum", "exclusiveMinimum")), (False, ("maximum", "exclusiveMaximum"))):
            old_bound = _tightest(old, keywords, lower, integers_only)
            for part in new:
                for keyword in keywords:
                    limit = part.get(keyword)
                    if not _is_number(limit):
                        continue
                    exclusive = keyword.startswith("exclusive")
                    if values is not None:
                        for value in values:
                            if not _within(value, limit, exclusive, lower):
                                yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {limit} rejects {value}")
                        continue
                    bound = _normalize_bound(limit, exclusive, lower, integers_only)
                    if old_bound is None:
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} added ({limit})")
                    elif _tighter(bound, old_bound[0], lower):
                        verb = "raised" if lower else "lowered"
                        was = old_bound[1] if old_bound[2] == keyword else f"{old_bound[2]} {old_bound[1]}"
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {verb} from {was} to {limit}")
        olds = [m for p in old if _is_number(m := p.get("multipleOf")) and m > 0]
        for part in new:
            step = part.get("multipleOf")
            if not _is_number(step) or step <= 0:
                continue
            if values is not None:
                for value in values:
                    if not _is_multiple(value, step):
                        yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf {step} rejects {value}")
            elif any(_is_multiple(o, step) for o in olds) or (integers_only and _is_multiple(1, step)):
                continue
            elif olds:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf changed from {olds[0]} to {step}")
            else:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"multipleOf added ({step})")

    # -- strings -------------------------------------------------------------------------------------------------

    def _strings(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if isinstance(v, str)]
        measure = _length_if(str)
        yield from _count_bounds(old, new, "minLength", True, values, measure)
        yield from _count_bounds(old, new, "maxLength", False, values, measure)
        old_patterns = [p.get("pattern") for p in old if isinstance(p.get("pattern"), str)]
        for part in new:
            pattern = part.get("pattern")
            if not isinstance(pattern, str) or pattern in old_patterns:
                continue
            if values is not None:
                for value in values:
                    if _search(pattern, value) is not True:
                        yield Break(part.pointer, PATTERN_CHANGED, f"pattern {pattern!r} rejects {_show(value)}")
            elif old_patterns:
                yield Break(part.pointer, PATTERN_CHANGED, f"pattern changed from {old_patterns[0]!r} to {pattern!r}")
            else:
                yield Break(part.pointer, PATTERN_CHANGED, f"pattern {pattern!r} added")

    # -- arrays --------------------------------------------------------------------------------------------------

    def _arrays(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if isinstance(v, list)]
        measure = _length_if(list)
        yield from _count_bounds(old, new, "minItems", True, values, measure)
        yield from _count_bounds(old, new, "maxItems", False, values, measure)
        if any(p.get("uniqueItems") is True for p in new) and not any(p.get("uniqueItems") is True for p in old):
            old_max = [m for p in old if _is_count(m := p.get("maxItems"))]
            holder = next(p for p in new if p.get("uniqueItems") is True)
            if values is not None:
                for value in values:
                    if len({_normal(v) for v in value}) != len(value):
                        yield Break(holder.pointer, BOUNDS_TIGHTENED, f"uniqueItems rejects {_show(value)}")
            elif not (old_max and min(old_max) <= 1):
                yield Break(holder.pointer, BOUNDS_TIGHTENED, "uniqueItems added")

        # positions covered by some prefixItems, then the tail that only `items` covers
        width = max((len(p.get("prefixItems")) for p in old + new if isinstance(p.get("prefixItems"), list)), default=0)
        for index in [*range(width), None]:
            new_items = _item_parts(new, index)
            if new_items:
                yield from self.compare(_item_parts(old, index), new_items)

        for part in new:
            if not part.has("contains"):
                continue
            yield from self._contains(old, part)

        if not any(p.has("items") for p in new):
            olds = [p.child("unevaluatedItems") for p in old if p.has("unevaluatedItems")]
            for part in new:
                if not part.has("unevaluatedItems"):
                    continue
                target = [part.child("unevaluatedItems")]
                if olds:
                    yield from self.compare(olds, target)
                elif not self.accepts_all([], target):
                    yield Break(part.pointer, CONSTRAINT_ADDED, "unevaluatedItems added")

    def _contains(self, old: list[_Part], part: _Part) -> Iterator[Break]:
        least, most = part.get("minContains"), part.get("maxContains")
        least = least if _is_count(least) else 1
        most = most if _is_count(most) else None
        if least == 0 and most is None:
            return
        wanted = part.child("contains")
        for candidate in (p for p in old if p.has("contains")):
            had = candidate.child("contains")
            if not self.accepts_all([had], [wanted]):
                continue  # an element the old `contains` counted might not count for the new one
            had_least = candidate.get("minContains")
            had_least = had_least if _is_count(had_least) else 1
            if least > had_least:
                yield Break(part.pointer, BOUNDS_TIGHTENED, f"minContains raised from {had_least} to {least}")
            if most is not None:
                had_most = candidate.get("maxContains")
                if not (_is_count(had_most) and had_most <= most and self.accepts_all([wanted], [had])):
                    yield Break(part.pointer, BOUNDS_TIGHTENED, f"maxContains {most} added or lowered")
            return
        yield Break(part.pointer, CONSTRAINT_ADDED, "contains added or changed")

    # -- objects -------------------------------------------------------------------------------------------------

    def _objects(self, old: list[_Part], info: _OldInfo, new: list[_Part]) -> Iterator[Break]:
        values = None if info.values is None else [v for v in info.values if isinstance(v, dict)]
        measure = _length_if(dict)
        yield from _count_bounds(old, new, "minProperties", True, values, measure)
        yield from _count_bounds(old, new, "maxProperties", False, values, measure)

        old_required = _required(old)
        reported: set[str] = set()
        for part in new:
            for name in _strings_in(part.get("required")):
                if name not in old_required and name not in reported:
                    reported.add(name)
                    yield Break(part.pointer, REQUIRED_ADDED, f"property {name!r} became required")

        yield from self._properties(old, new)
        yield from self._pattern_properties(old, new)
        yield from self._additional(old, new)

        for part in new:
            dependent = part.get("dependentRequired")
            if not isinstance(dependent, dict):
                continue
            for trigger, names in dependent.items():
                implied = old_required | {
                    n for p in old for n in _strings_in(_dict(p.get("dependentRequired")).get(trigger))
                }
                for name in _strings_in(names):
                    if name not in implied and name != trigger:
                        message = f"property {name!r} now required when {trigger!r} is present"
                        yield Break(part.pointer, CONSTRAINT_ADDED, message)
        # dependentSchemas: the old side, with its own dependent schema if any, must satisfy the new one
        for part in new:
            schemas = part.get("dependentSchemas")
            if not isinstance(schemas, dict):
                continue
            for trigger in schemas:
                had = [p.child("dependentSchemas", trigger) for p in old if trigger in _dict(p.get("dependentSchemas"))]
                yield from self.compare(old + had, [part.child("dependentSchemas", trigger)])
        for part in new:
            if part.has("propertyNames"):
                had = [p.child("propertyNames") for p in old if p.has("propertyNames")]
                yield from self.compare([*had, _Part.synthetic({"type": "string"})], [part.child("propertyNames")])

    def _properties(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        old_open = not any(p.has("additionalProperties") or p.has("unevaluatedProperties") for p in old)
        names = list(dict.fromkeys(n for p in old + new for n in _dict(p.get("properties"))))
        _spend(len(names))
        for name in names:
            new_schemas = _schemas_for(new, name, new_side=True)
            if not new_schemas:
                continue
            old_schemas = _schemas_for(old, name, new_side=False)
            declared_in_old = any(via in _DECLARING for via, _ in old_schemas)
            declared_in_new = any(via in _DECLARING for via, _ in new_schemas)
            if not declared_in_old and old_open:
                continue  # an added optional property: lenient by policy (see the module docstring)
            if any(p.node is False for _, p in old_schemas):
                continue  # the old side rejected this property too
            if declared_in_old and not declared_in_new:
                closed = next((p for via, p in new_schemas if p.node is False), None)
                if closed is not None:
                    holder = closed.pointer.rsplit("/", 1)[0]
                    keyword = closed.pointer.rsplit("/", 1)[1]
                    yield Break(holder, PROPERTY_REMOVED, f"property {name!r} removed while {keyword} is false")
                    continue
            yield from self.compare([p for _, p in old_schemas], [p for _, p in new_schemas])

    def _pattern_properties(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        """Names matching a patternProperties key (and no declared property), key by key."""
        old_keys = {k for p in old for k in _dict(p.get("patternProperties"))}
        new_keys = {k for p in new for k in _dict(p.get("patternProperties"))}
        old_open = not any(p.has("additionalProperties") for p in old)
        for key in sorted(old_keys | new_keys):
            wanted = _pattern_governed(new, key, new_side=True)
            if not wanted or (key not in old_keys and old_open):
                continue  # nothing to satisfy, or an open old object: like an added optional property
            had = _pattern_governed(old, key, new_side=False)
            if any(p.node is False for p in had):
                continue  # the old side rejected such names too
            closed = next((p for p in wanted if p.node is False and p.pointer.endswith("/additionalProperties")), None)
            if key not in new_keys and closed is not None:
                message = f"pattern property {key!r} removed while additionalProperties is false"
                yield Break(closed.pointer.rsplit("/", 1)[0], PROPERTY_REMOVED, message)
                continue
            yield from self.compare(had, wanted)

    def _additional(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        """Names neither schema declares: additionalProperties, then unevaluatedProperties."""
        # for names no schema declares, old additionalProperties and unevaluatedProperties are equivalent
        had_keywords = ("additionalProperties", "unevaluatedProperties")
        for keyword in had_keywords:
            holders = [p for p in new if p.has(keyword)]
            if not holders or (keyword == "unevaluatedProperties" and any(p.has("additionalProperties") for p in new)):
                continue  # with additionalProperties somewhere, every property counts as evaluated
            had = [p.child(k) for p in old for k in had_keywords if p.has(k)]
            if any(p.node is False for p in had):
                continue  # the old side accepted no undeclared names
            wanted = [p.child(keyword) for p in holders]
            closed = next((p for p in wanted if p.node is False), None)
            if closed is not None:
                was = "restricted" if had else "open"
                message = f"{keyword} became false (was {was})"
                yield Break(closed.pointer.rsplit("/", 1)[0], ADDITIONAL_PROPERTIES_CLOSED, message)
            elif had:
                yield from self.compare(had, wanted)
            elif not self.accepts_all([], wanted):
                message = f"{keyword} restricted to a schema (was open)"
                yield Break(holders[0].pointer, ADDITIONAL_PROPERTIES_CLOSED, message)

    # -- not, if/then/else, anyOf/oneOf, unknown keywords ----------------------------------------------------

    def _negations(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        for part in new:
            if not part.has("not"):
                continue
            negated = part.child("not")
            # not B ⊆ not A exactly when A ⊆ B: compare the other way round
            if any(self.accepts_all([negated], [p.child("not")]) for p in old if p.has("not")):
                continue
            yield Break(part.pointer, CONSTRAINT_ADDED, "'not' added or changed")

    def _conditionals(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        for part in new:
            if not part.has("if"):
                continue
            same_if = [p for p in old if p.has("if") and _json_equal(p.get("if"), part.get("if"))]
            for branch in ("then", "else"):
                if not part.has(branch):
                    continue
                wanted = [part.child(branch)]
                if same_if:
                    had = [p.child(branch) for p in same_if if p.has(branch)]
                    # the old side with its own branch must satisfy the new branch (stricter than needed: sound)
                    yield from self.compare(old + had, wanted)
                elif not self.accepts_all(old, wanted):
                    yield Break(part.pointer, CONSTRAINT_ADDED, f"conditional 'if'/'{branch}' added or changed")

    def _disjunctions(
        self, old: list[_Part], info: _OldInfo, new: list[_Part], labels: tuple[_Label, ...]
    ) -> Iterator[Break]:
        for part in new:
            for keyword in ("anyOf", "oneOf"):
                branches = part.get(keyword)
                if not isinstance(branches, list) or not branches:
                    continue
                candidates = list(_branches(part, keyword))
                if labels and labels[-1].index < len(candidates):
                    candidates.insert(0, candidates.pop(labels[-1].index))  # same index first: usually the match
                tried: list[tuple[_Part, list[Break]]] = []
                for candidate in candidates:
                    result = self.compare(old, [candidate])
                    if not result:
                        break
                    tried.append((candidate, result))
                else:
                    if self._covered_piecewise(old, info, candidates):
                        continue
                    closest, reasons = min(tried, key=lambda pair: len(pair[1]))
                    detail = "; ".join(f"{b.message} at {b.pointer or '/'}" for b in reasons[:2])
                    if labels:
                        label = labels[-1]
                        message = (
                            f"old {label.keyword} branch {label.pointer}{label.summary} is accepted by no branch of "
                            f"the new {keyword} (closest {closest.pointer}: {detail})"
                        )
                        yield Break(part.pointer, BRANCH_REMOVED, message)
                    else:
                        message = (
                            f"{keyword} rejects values the old schema accepted (closest {closest.pointer}: {detail})"
                        )
                        yield Break(part.pointer, CONSTRAINT_ADDED, message)

    def _exclusive(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        """oneOf rejects a value matching two branches: a new or changed branch must not overlap another one."""
        # an old oneOf already split into branches still tells which branches were exclusive
        published = [_Part(p.side, p.doc, p.pointer, p.published, p.base) for p in old]
        old_lists = [_branches(p, "oneOf") for p in published if _branches(p, "oneOf")]
        for part in new:
            branches = _branches(part, "oneOf")
            if len(branches) < 2:
                continue
            # branches unchanged from one old oneOf (one new branch per old one) did not overlap before either
            unchanged = max((self._matched(had, branches) for had in old_lists), key=len, default=set())
            # the rest of the schema applies to both branches (a `type`, a `required` discriminator, ...)
            context = [q.without("oneOf") if q is part else q for q in new]
            for branch in branches:
                if id(branch) in unchanged:
                    continue
                _spend(len(branches))
                other = next((o for o in branches if o is not branch and not _disjoint(branch, o, context)), None)
                if other is not None:
                    message = (
                        f"oneOf branch {branch.pointer} is new or changed and may overlap {other.pointer}: "
                        "a value matching both is rejected"
                    )
                    yield Break(part.pointer, CONSTRAINT_ADDED, message)
                    break

    def _matched(self, had: list[_Part], branches: list[_Part]) -> set[int]:
        """ids of the new branches paired, one to one, with an equivalent old branch."""
        free = list(had)
        paired: set[int] = set()
        for branch in branches:
            _spend(len(free))
            twin = next((o for o in free if self._equivalent(o, branch)), None)
            if twin is not None:
                free.remove(twin)
                paired.add(id(branch))
        return paired

    def _equivalent(self, a: _Part, b: _Part) -> bool:
        return self.accepts_all([a], [b]) and self.accepts_all([b], [a])

    def _covered_piecewise(self, old: list[_Part], info: _OldInfo, candidates: list[_Part]) -> bool:
        """Whether each old value / each old type alone is accepted by some branch ({"type": [a, b]} vs anyOf)."""
        if info.values is not None:
            pieces = [{"const": value} for value in info.values]
        else:
            names = {"number" if t == "fraction" else t for t in info.types}
            if "number" in names:
                names.discard("integer")
            pieces = [{"type": name} for name in sorted(names)]
        if len(pieces) < 2:
            return False
        return all(any(self.accepts_all([*old, _Part.synthetic(piece)], [c]) for c in candidates) for piece in pieces)

    def _unknown(self, old: list[_Part], new: list[_Part]) -> Iterator[Break]:
        for part in new:
            if not isinstance(part.node, dict):
                continue
            ref = part.get("$ref")
            if isinstance(ref, str) and _resolve(part, ref) is None and not any(p.get("$ref") == ref for p in old):
                yield Break(part.pointer, CONSTRAINT_ADDED, f"$ref {ref!r} cannot be resolved within the document")
            for keyword, value in part.node.items():
                if keyword in _HANDLED or keyword in _ANNOTATIONS or keyword.startswith("x-"):
                    continue
                if any(p.has(keyword) and _json_equal(p.get(keyword), value) for p in old):
                    continue
                message = f"keyword {keyword!r} added or changed; it cannot be shown to accept the same values"
                yield Break(part.pointer, CONSTRAINT_ADDED, message)


# -- conjunctions and $ref --------------------------------------------------------------------------------------


def _flatten(parts: Iterable[_Part]) -> list[_Part]:
    """The parts plus everything their `$ref`s and `allOf`s add, once each; `true` and non-schemas dropped.

    A node given with a keyword stripped (an old anyOf being split) is not added again in full when a `$ref`
    leads back to it.
    """
    parts = list(parts)
    out: dict[str, _Part] = {}
    stripped = {p.base for p in parts if p.key != p.base}

    def add(part: _Part) -> None:
        _spend()
        if part.key in out or not (isinstance(part.node, dict) or part.node is False):
            return
        if part.key == part.base and part.base in stripped:
            return
        out[part.key] = part
        if part.node is False:
            return
        ref = part.get("$ref")
        if isinstance(ref, str) and (target := _resolve(part, ref)) is not None:
            add(target)
        members = part.get("allOf")
        if isinstance(members, list):
            for number in range(len(members)):
                add(part.child("allOf", number))

    for part in parts:
        add(part)
    return list(out.values())


def _resolve(part: _Part, ref: str) -> _Part | None:
    """The part a local `$ref` ("#", "#/...") points at in the part's own document; None for anything else."""
    if part.doc is None or not (ref == "#" or ref.startswith("#/")):
        return None
    pointer = unquote(ref[1:])
    node = part.doc
    for raw in pointer.split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    return _Part(part.side, part.doc, pointer, node, f"{part.side}:{pointer}")


def _disjoint(a: _Part, b: _Part, context: list[_Part]) -> bool:
    """Whether no value can match both a and b (each with `context`): by types, enums, required properties."""
    left, right = _flatten([a, *context]), _flatten([b, *context])
    if any(p.node is False for p in left + right):
        return True
    left_info, right_info = _old_info(left), _old_info(right)
    common = left_info.types & right_info.types
    if not common or _values_disjoint(left_info, right_info):
        return True
    if common != {"object"}:
        return False  # some non-object value may match both
    for one, two in ((left, right), (right, left)):
        for name in _required(one):
            # unsure regex matches: assume a pattern allows the name, and assume no pattern narrows its value
            allowing = [p for _, p in _schemas_for(two, name, new_side=True)]
            if any(p.node is False for p in _flatten(allowing)):
                return True  # required by one, forbidden by the other
            if name in _required(two):
                ours = _old_info(_flatten([p for _, p in _schemas_for(one, name, new_side=False)]))
                other = _old_info(_flatten([p for _, p in _schemas_for(two, name, new_side=False)]))
                if not ours.types & other.types or _values_disjoint(ours, other):
                    return True  # a discriminator: both require it, with values that cannot agree
    return False


def _values_disjoint(a: _OldInfo, b: _OldInfo) -> bool:
    if a.values is None or b.values is None:
        return False
    _spend(len(a.values) + len(b.values))
    return not {_normal(x) for x in a.values} & {_normal(y) for y in b.values}


def _summary(parts: list[_Part]) -> str:
    """A few words naming a branch: its title, else the properties it requires, else its type."""
    for part in parts:
        if isinstance(part.get("title"), str):
            return f" ({part.get('title')!r})"
    required = sorted(_required(parts))
    if required:
        return f" (requiring {', '.join(repr(n) for n in required[:3])}{', ...' if len(required) > 3 else ''})"
    types = [t for p in parts if (t := p.get("type")) is not None]
    return f" (type {_show(types[0])})" if types else ""


def _old_info(old: list[_Part]) -> _OldInfo:
    types = set(_ALL_TYPES)
    values: list[Any] | None = None
    for part in old:
        allowed = _types_of(part.get("type"))
        if allowed is not None:
            types &= allowed
        for keyword in ("enum", "const"):
            if not part.has(keyword):
                continue
            listed = [part.get("const")] if keyword == "const" else part.get("enum")
            if not isinstance(listed, list):
                continue
            _spend(len(listed))
            if values is None:
                values = list(listed)
            else:
                kept = {_normal(x) for x in listed}
                values = [v for v in values if _normal(v) in kept]
    if values is not None:
        # keep only the values the old side really accepts: a value it rejects anyway must not count as a break
        _spend(len(values) * len(old))
        values = [v for v in values if _value_type(v) in types and not any(_rejects(p, v) for p in old)]
        types = {_value_type(v) for v in values}
    return _OldInfo(frozenset(types), values)


def _rejects(part: _Part, value: Any) -> bool:
    """Whether one of the part's value-level keywords surely rejects `value` (structure is not looked at)."""
    node = part.node
    if not isinstance(node, dict):
        return node is False
    if _is_number(value):
        for keyword, lower in (
            ("minimum", True),
            ("exclusiveMinimum", True),
            ("maximum", False),
            ("exclusiveMaximum", False),
        ):
            limit = node.get(keyword)
            if _is_number(limit) and not _within(value, limit, keyword.startswith("exclusive"), lower):
                return True
        step = node.get("multipleOf")
        if _is_number(step) and step > 0 and not _is_multiple(value, step):
            return True
    sized = {str: ("minLength", "maxLength"), list: ("minItems", "maxItems"), dict: ("minProperties", "maxProperties")}
    for kind, (least, most) in sized.items():
        if isinstance(value, kind):
            low, high = node.get(least), node.get(most)
            if (_is_count(low) and len(value) < low) or (_is_count(high) and len(value) > high):
                return True
    if isinstance(value, str) and isinstance(node.get("pattern"), str) and _search(node["pattern"], value) is False:
        return True
    if isinstance(value, dict) and any(name not in value for name in _strings_in(node.get("required"))):
        return True
    return False


# -- properties and items ---------------------------------------------------------------------------------------


def _schemas_for(parts: list[_Part], name: str, new_side: bool) -> list[tuple[str, _Part]]:
    """(via, subschema) for every part constraining the value of property `name`, 2020-12 rules per part.

    unevaluatedProperties (which sees through $ref and allOf) counts only when no part declares the name and
    no part has additionalProperties (which evaluates every name).
    """
    out: list[tuple[str, _Part]] = []
    for part in parts:
        declared = False
        _spend(1 + len(_dict(part.get("patternProperties"))))
        if name in _dict(part.get("properties")):
            out.append(("properties", part.child("properties", name)))
            declared = True
        for pattern in _dict(part.get("patternProperties")):
            # an unusable regex: assume it matches on the new side (a constraint), not on the old (no permission)
            matched = _search(pattern, name)
            if matched or (matched is None and new_side):
                out.append(("patternProperties", part.child("patternProperties", pattern)))
                declared = True
        if not declared and part.has("additionalProperties"):
            out.append(("additionalProperties", part.child("additionalProperties")))
    if not any(via in _DECLARING for via, _ in out) and not any(p.has("additionalProperties") for p in parts):
        out += [
            ("unevaluatedProperties", p.child("unevaluatedProperties")) for p in parts if p.has("unevaluatedProperties")
        ]
    return out


def _branches(part: _Part, keyword: str) -> list[_Part]:
    """The parts of `part`'s anyOf/oneOf branches, built once per call (a list of 1,000 is asked for often)."""
    work = _work.get()
    cached = None if work is None else work.branches.get((part.key, keyword))
    if cached is not None:
        return cached
    listed = part.get(keyword)
    found = [part.child(keyword, number) for number in range(len(listed))] if isinstance(listed, list) else []
    if work is not None:
        work.branches[(part.key, keyword)] = found
    return found


def _pattern_governed(parts: list[_Part], key: str, new_side: bool) -> list[_Part]:
    """Subschemas constraining a property named to match patternProperties `key` (and no declared name).

    A part without that key constrains it through its additionalProperties, unless another of its patterns
    may match instead: assumed so on the old side, not on the new (so unsure cases count as breaks).
    """
    out: list[_Part] = []
    for part in parts:
        patterns = _dict(part.get("patternProperties"))
        if key in patterns:
            out.append(part.child("patternProperties", key))
        elif part.has("additionalProperties") and (new_side or not patterns):
            out.append(part.child("additionalProperties"))
    return out


def _item_parts(parts: list[_Part], index: int | None) -> list[_Part]:
    """Subschemas constraining array position `index` (None: positions past every prefixItems)."""
    out: list[_Part] = []
    for part in parts:
        prefix = part.get("prefixItems")
        width = len(prefix) if isinstance(prefix, list) else 0
        if index is not None and index < width:
            out.append(part.child("prefixItems", index))
        elif part.has("items"):
            out.append(part.child("items"))
    return out


def _required(parts: list[_Part]) -> set[str]:
    return {name for part in parts for name in _strings_in(part.get("required"))}


# -- bounds -----------------------------------------------------------------------------------------------------


def _count_bounds(
    old: list[_Part],
    new: list[_Part],
    keyword: str,
    lower: bool,
    values: list[Any] | None,
    measure: Callable[[Any], int | None],
) -> Iterator[Break]:
    """minLength/maxLength, minItems/maxItems, minProperties/maxProperties."""
    olds = [b for p in old if _is_count(b := p.get(keyword))]
    for part in new:
        limit = part.get(keyword)
        if not _is_count(limit):
            continue
        if values is not None:
            for value in values:
                size = measure(value)
                if size is not None and (size < limit if lower else size > limit):
                    yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} {limit} rejects {_show(value)}")
            continue
        if lower:
            was = max(olds, default=0)
            if limit > was:
                text = f"{keyword} raised from {was} to {limit}" if olds else f"{keyword} added ({limit})"
                yield Break(part.pointer, BOUNDS_TIGHTENED, text)
        elif not olds:
            yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} added ({limit})")
        elif limit < min(olds):
            yield Break(part.pointer, BOUNDS_TIGHTENED, f"{keyword} lowered from {min(olds)} to {limit}")


def _length_if(kind: type[str] | type[list[Any]] | type[dict[str, Any]]) -> Callable[[Any], int | None]:
    """Length of values of one JSON type (strings: code points, as JSON Schema counts them)."""

    def measure(value: Any) -> int | None:
        return len(value) if isinstance(value, kind) else None

    return measure


def _tightest(
    parts: list[_Part], keywords: tuple[str, str], lower: bool, integers_only: bool
) -> tuple[tuple[float, bool], Any, str] | None:
    """The old side's effective bound as (normalized bound, published value, keyword), None when unbounded."""
    best: tuple[tuple[float, bool], Any, str] | None = None
    for part in parts:
        for keyword in keywords:
            limit = part.get(keyword)
            if not _is_number(limit):
                continue
            bound = _normalize_bound(limit, keyword.startswith("exclusive"), lower, integers_only)
            if best is None or _tighter(bound, best[0], lower):
                best = (bound, limit, keyword)
    return best


def _normalize_bound(limit: float, exclusive: bool, lower: bool, integers_only: bool) -> tuple[float, bool]:
    """(value, exclusive); for integer-only values an inclusive integer, so `> 0` and `>= 1` compare equal."""
    if not integers_only or not math.isfinite(limit):
        return (limit, exclusive)
    if lower:
        return (math.floor(limit) + 1 if exclusive and limit == math.floor(limit) else math.ceil(limit), False)
    return (math.ceil(limit) - 1 if exclusive and limit == math.ceil(limit) else math.floor(limit), False)


def _tighter(bound: tuple[float, bool], than: tuple[float, bool], lower: bool) -> bool:
    (value, exclusive), (other, other_exclusive) = bound, than
    if value != other:
        return value > other if lower else value < other
    return exclusive and not other_exclusive


def _within(value: float, limit: float, exclusive: bool, lower: bool) -> bool:
    if lower:
        return value > limit if exclusive else value >= limit
    return value < limit if exclusive else value <= limit


def _is_multiple(value: float, step: float) -> bool:
    try:
        return Decimal(str(value)) % Decimal(str(step)) == 0
    except (InvalidOperation, ArithmeticError):
        return False


# -- JSON values --------------------------------------------------------------------------------------------


def _types_of(declared: Any) -> frozenset[str] | None:
    """Expanded type names allowed by a `type` value; None when it does not restrict (absent or malformed)."""
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else None
    if names is None:
        return None
    out: set[str] = set()
    for name in names:
        if name == "number":
            out |= _NUMERIC
        elif name in _ALL_TYPES and name != "fraction":
            out.add(name)
    return frozenset(out)


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "fraction"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_names(types: Iterable[str]) -> str:
    present = set(types)
    if _NUMERIC <= present:
        present = (present - _NUMERIC) | {"number"}
    elif "fraction" in present:
        present = (present - {"fraction"}) | {"non-integer number"}
    return ", ".join(repr(t) for t in sorted(present))


def _normal(value: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, but true != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_normal(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _normal(v)) for k, v in value.items()))
    return ("other", repr(value))


def _json_equal(a: Any, b: Any) -> bool:
    return bool(_normal(a) == _normal(b))


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> TypeGuard[int | float]:
    return _is_number(value) and value >= 0 and float(value).is_integer()


def _strings_in(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, default=str)


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when the pattern does not compile."""
    work = _work.get()
    _spend(1 + len(text) // 64)
    if work is None:
        validator = _pattern_validator(pattern)
    elif pattern in work.patterns:
        validator = work.patterns[pattern]
    else:
        _spend(10 + len(pattern))  # compiling costs more than matching
        validator = work.patterns[pattern] = _pattern_validator(pattern)
    return None if validator is None else bool(validator.is_valid(text))


@functools.lru_cache(maxsize=1024)
def _pattern_validator(pattern: str) -> Any:
    """The registry's engine (jsonschema_rs with the linear-time `regex` crate), not Python's `re`: the dialect
    messages are validated with, and no catastrophic backtracking on a pattern someone registered."""
    try:
        return jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=jsonschema_rs.RegexOptions())
    except (ValueError, TypeError):
        return None
