"""How much work a capability schema can make one message cost: refused at registration when unbounded.

jsonschema-rs validates a message by applying subschemas to the message's nodes. A subschema applies to the
node its parent applies to (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`:
"in place") or to one of that node's children (`properties`, `items`, ...: "descending"). When in-place paths
multiply, one node is checked many times over:

- a chain of `$defs` each `anyOf: [{$ref: next}, {$ref: next}]` makes one scalar face 2^n applications;
- a root `oneOf` of two branches each referring back to the root (`$ref: "#"`) under a property makes the
  node at depth d face 2^d applications.

`is_valid` remembers the results of recursive references, so accepting such a message may stay cheap; but
reporting why a message is invalid (`validate`, `iter_errors`) collects the errors of every branch of every
failing `anyOf`/`oneOf`, with no memory: a 200-byte message nested 17 levels took seconds to refuse, and 32
levels (the nesting limit) would take hours. So the registry refuses such schemas up front.

`expansion(schema, max_depth, limit)` computes a sound upper bound of the number of subschema applications
any single node of any message nested at most `max_depth` levels can receive, and raises `SchemaTooComplex`
when it exceeds `limit`. Validating (or reporting the errors of) a message of n nodes then costs at most
about `limit` x n subschema applications, whatever the schema.

The bound, per schema node s and depth k: F_0(s) = the number of in-place paths from s (s included);
F_k(s) = the largest, over the name (or index) of a child, of the sum, over the in-place paths from s to a
node d and every descending edge of d that applies to that child, of F_{k-1} of the edge's target. The edges
applying to a name: the property of that name, every pattern (assumed to match), `additionalProperties` of
a schema not declaring it, `unevaluatedProperties`; to an index: its `prefixItems` entry, `items` of a
schema whose prefix is shorter, `contains`, `unevaluatedItems`. Taking the largest child per level
separately for each node can only over-count, never under-count. A cycle of in-place edges alone
(`{"$ref": "#"}` under `allOf`) is refused: it never reaches the message's children and its count has no
bound.

Everything here is linear in the schema for ordinary schemas and bounded by `MAX_ANALYSIS_STEPS` otherwise
(a schema too involved to analyse within it is refused as too complex).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

MAX_ANALYSIS_STEPS = 3_000_000  # elementary steps of the analysis itself (about a second of Python)
DEFAULT_BASE = "urn:aitp:analysis:root"

# in-place applicators: the subschema applies to the same message node
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
# descending applicators: the subschema applies to children of the message node
_ANY_NAME_ONE = ("unevaluatedProperties", "propertyNames")
_ANY_INDEX_ONE = ("contains", "unevaluatedItems")
# keywords holding subschemas that apply only through a $ref (walked to find $id and anchors)
_CONTAINERS = ("$defs", "definitions")

# edge kinds: a named property / a prefix position; any name / any index (patterns and the like are assumed
# to match every name); names the owner does not declare / positions past the owner's prefix
NAME, INDEX, ANY_NAME, ANY_INDEX, MORE_NAMES, MORE_INDEXES = "n", "i", "*n", "*i", "+n", "+i"


class SchemaTooComplex(ValueError):
    """A schema whose validation (or error reporting) could cost more than the limit allows."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer


@dataclass
class _Node:
    pointer: str
    in_place: list[str] = field(default_factory=list)  # pointers of subschemas applying to the same node
    # (kind, label, target pointer): NAME / INDEX with the property name / index; ANY_NAME / ANY_INDEX with
    # None; MORE_NAMES / MORE_INDEXES (additionalProperties, items after prefixItems) with this node's pointer
    descending: list[tuple[str, Any, str]] = field(default_factory=list)
    declared: tuple[Any, ...] = ()  # the names (or prefix positions) MORE_NAMES (MORE_INDEXES) skip


@dataclass
class Expansion:
    worst: int  # most applications one message node can receive (an upper bound), capped at limit + 1
    depth: int  # the message depth at which that happens
    nodes: int  # subschemas analysed


class _Steps:
    def __init__(self, budget: int) -> None:
        self.left = budget

    def spend(self, count: int = 1) -> None:
        self.left -= count
        if self.left < 0:
            raise SchemaTooComplex(
                "the schema is too involved to bound what validating a message against it costs "
                f"(more than {MAX_ANALYSIS_STEPS:,} analysis steps); simplify its $ref and anyOf/oneOf/allOf structure"
            )


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _lookup(document: Any, pointer: str) -> tuple[bool, Any]:
    node = document
    if not pointer:
        return True, node
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node


def _strip_fragment(uri: str) -> str:
    return urldefrag(uri)[0]


def _join(base: str, reference: str) -> str:
    if reference.startswith("#"):
        return _strip_fragment(base) + reference
    joined = urljoin(base, reference)
    return joined if joined else reference


class _Graph:
    """The schema's subschemas (by JSON pointer into the document) and the edges between them."""

    def __init__(self, document: Any, steps: _Steps) -> None:
        self.document = document
        self.steps = steps
        self.nodes: dict[str, _Node] = {}
        self.resources: dict[str, str] = {}  # base URI (no fragment) -> pointer of the resource's root
        self.anchors: dict[tuple[str, str], str] = {}  # (base URI, anchor) -> pointer
        self.dynamic: dict[str, list[str]] = {}  # $dynamicAnchor name -> pointers
        self.recursive: list[str] = []  # pointers of schemas with "$recursiveAnchor": true
        self._bases: dict[str, str] = {}
        root_base = DEFAULT_BASE
        if isinstance(document, dict) and isinstance(document.get("$id"), str):
            root_base = _strip_fragment(_join(DEFAULT_BASE, document["$id"])) or DEFAULT_BASE
        self.resources[DEFAULT_BASE] = ""
        self._index("", document, root_base)

    # -------------------------------------------------------------- resources ($id, anchors)

    def _index(self, pointer: str, node: Any, base: str) -> None:
        """Record every $id, $anchor and $dynamicAnchor at schema positions under `node` (iteratively)."""
        stack = [(pointer, node, base)]
        while stack:
            pointer, node, base = stack.pop()
            self.steps.spend()
            if not isinstance(node, dict):
                continue
            identifier = node.get("$id")
            if isinstance(identifier, str):
                joined = _join(base, identifier)
                resource, fragment = urldefrag(joined)
                if resource:
                    base = resource
                    self.resources.setdefault(resource, pointer)
                if fragment and not fragment.startswith("/"):  # draft 7: "$id": "#name" is an anchor
                    self.anchors.setdefault((base, fragment), pointer)
            self._bases[pointer] = base
            self.resources.setdefault(base, pointer)
            for keyword in ("$anchor", "$dynamicAnchor"):
                name = node.get(keyword)
                if isinstance(name, str):
                    self.anchors.setdefault((base, name), pointer)
                    if keyword == "$dynamicAnchor":
                        self.dynamic.setdefault(name, []).append(pointer)
            if node.get("$recursiveAnchor") is True:
                self.recursive.append(pointer)
            for child_pointer, child in _subschemas(pointer, node, include_containers=True):
                stack.append((child_pointer, child, base))

    def base_at(self, pointer: str) -> str:
        """The base URI in effect at `pointer` (for nodes reached only through a $ref pointer)."""
        known = self._bases.get(pointer)
        if known is not None:
            return known
        base = self._bases.get("", DEFAULT_BASE)
        node = self.document
        walked = ""
        for raw in pointer.split("/")[1:] if pointer else []:
            token = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
            walked += "/" + raw
            if walked in self._bases:
                base = self._bases[walked]
            elif isinstance(node, dict) and isinstance(node.get("$id"), str):
                base = _strip_fragment(_join(base, node["$id"])) or base
        self._bases[pointer] = base
        return base

    def resolve(self, pointer: str, reference: str) -> str:
        """The pointer of the subschema a reference made at `pointer` names; SchemaTooComplex if not found."""
        uri = _join(self.base_at(pointer), reference)
        resource, fragment = urldefrag(uri)
        fragment = unquote(fragment)
        root = self.resources.get(resource)
        if root is None:
            if not resource and reference.startswith("#"):
                root = ""
            else:
                raise SchemaTooComplex(f"cannot follow $ref {reference!r} to bound validation cost", pointer)
        if not fragment:
            target = root
        elif fragment.startswith("/"):
            target = root + fragment
        else:
            anchored = self.anchors.get((resource, fragment))
            if anchored is None:
                raise SchemaTooComplex(f"cannot follow $ref {reference!r} to bound validation cost", pointer)
            target = anchored
        found, _ = _lookup(self.document, target)
        if not found:
            raise SchemaTooComplex(f"cannot follow $ref {reference!r} to bound validation cost", pointer)
        return target

    # ------------------------------------------------------------------------ edges

    def build(self) -> None:
        pending = [""]
        while pending:
            pointer = pending.pop()
            if pointer in self.nodes:
                continue
            self.steps.spend()
            _, value = _lookup(self.document, pointer)
            node = self.nodes[pointer] = _Node(pointer)
            if not isinstance(value, dict):
                continue  # true / false (or not a schema at all: the metaschema check refuses those)
            for keyword in _IN_PLACE_ONE:
                if isinstance(value.get(keyword), (dict, bool)):
                    node.in_place.append(f"{pointer}/{keyword}")
            for keyword in _IN_PLACE_LIST:
                if isinstance(value.get(keyword), list):
                    node.in_place += [f"{pointer}/{keyword}/{i}" for i in range(len(value[keyword]))]
            for keyword in (*_IN_PLACE_MAP, "dependencies"):
                if isinstance(value.get(keyword), dict):
                    node.in_place += [
                        f"{pointer}/{keyword}/{_escape(name)}"
                        for name, sub in value[keyword].items()
                        if isinstance(sub, (dict, bool))
                    ]
            reference = value.get("$ref")
            if isinstance(reference, str):
                node.in_place.append(self.resolve(pointer, reference))
            # a dynamic reference lands on one of its possible targets: each is counted once (a sum: sound)
            dynamic = value.get("$dynamicRef")
            if isinstance(dynamic, str):
                targets = {self.resolve(pointer, dynamic), *self.dynamic.get(urldefrag(dynamic)[1], [])}
                node.in_place += sorted(targets)
            recursive = value.get("$recursiveRef")
            if isinstance(recursive, str):
                node.in_place += sorted({self.resolve(pointer, recursive), *self.recursive})
            properties = value.get("properties")
            if isinstance(properties, dict):
                for name, sub in properties.items():
                    if isinstance(sub, (dict, bool)):
                        node.descending.append((NAME, name, f"{pointer}/properties/{_escape(name)}"))
            patterns = value.get("patternProperties")
            if isinstance(patterns, dict):
                for name, sub in patterns.items():
                    if isinstance(sub, (dict, bool)):
                        node.descending.append((ANY_NAME, None, f"{pointer}/patternProperties/{_escape(name)}"))
            for keyword in _ANY_NAME_ONE:
                if isinstance(value.get(keyword), (dict, bool)):
                    node.descending.append((ANY_NAME, None, f"{pointer}/{keyword}"))
            if isinstance(value.get("additionalProperties"), (dict, bool)):
                node.descending.append((MORE_NAMES, pointer, f"{pointer}/additionalProperties"))
                node.declared = tuple(properties) if isinstance(properties, dict) else ()
            prefix = 0
            for keyword in ("prefixItems", "items"):
                if isinstance(value.get(keyword), list):  # "items" as a list: drafts before 2020-12
                    prefix = max(prefix, len(value[keyword]))
                    for i in range(len(value[keyword])):
                        node.descending.append((INDEX, i, f"{pointer}/{keyword}/{i}"))
            for keyword in ("items", "additionalItems"):
                if isinstance(value.get(keyword), (dict, bool)):
                    node.descending.append((MORE_INDEXES, pointer, f"{pointer}/{keyword}"))
                    node.declared = (*node.declared, *range(prefix))
            for keyword in _ANY_INDEX_ONE:
                if isinstance(value.get(keyword), (dict, bool)):
                    node.descending.append((ANY_INDEX, None, f"{pointer}/{keyword}"))
            self.steps.spend(len(node.in_place) + len(node.descending))
            pending += node.in_place
            pending += [target for _, _, target in node.descending]


def _subschemas(pointer: str, node: dict[str, Any], include_containers: bool) -> Iterator[tuple[str, Any]]:
    for keyword in (
        *_IN_PLACE_ONE,
        *_ANY_NAME_ONE,
        *_ANY_INDEX_ONE,
        "additionalProperties",
        "additionalItems",
        "items",
    ):
        if isinstance(node.get(keyword), dict):
            yield f"{pointer}/{keyword}", node[keyword]
    for keyword in (*_IN_PLACE_LIST, "prefixItems", "items"):
        if isinstance(node.get(keyword), list):
            for i, sub in enumerate(node[keyword]):
                yield f"{pointer}/{keyword}/{i}", sub
    maps = ("properties", "patternProperties", *_IN_PLACE_MAP, "dependencies")
    for keyword in (*maps, *_CONTAINERS) if include_containers else maps:
        if isinstance(node.get(keyword), dict):
            for name, sub in node[keyword].items():
                yield f"{pointer}/{keyword}/{_escape(name)}", sub


def _in_place_order(graph: _Graph, steps: _Steps) -> list[str]:
    """The nodes in post-order of the in-place edges (children first); SchemaTooComplex on an in-place cycle."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for start in graph.nodes:
        if state.get(start):
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        state[start] = 1
        while stack:
            pointer, index = stack[-1]
            children = graph.nodes[pointer].in_place
            if index < len(children):
                stack[-1] = (pointer, index + 1)
                child = children[index]
                steps.spend()
                seen = state.get(child)
                if seen == 1:
                    raise SchemaTooComplex(
                        f"{child or '/'} applies to the same message node again through $ref/allOf/anyOf/oneOf "
                        "without descending into it: a cycle that can never be evaluated to an end",
                        child,
                    )
                if not seen:
                    state[child] = 1
                    stack.append((child, 0))
            else:
                stack.pop()
                state[pointer] = 2
                order.append(pointer)
    return order


def expansion(schema: Any, max_depth: int, limit: int) -> Expansion:
    """The bound described in the module docstring; SchemaTooComplex when it exceeds `limit`."""
    steps = _Steps(MAX_ANALYSIS_STEPS)
    graph = _Graph(schema, steps)
    graph.build()
    order = _in_place_order(graph, steps)
    cap = limit + 1  # counts saturate here: enough to refuse, and numbers stay small

    def too_many(count: int, depth: int, where: str) -> SchemaTooComplex:
        shown = f"more than {limit:,}" if count > limit else f"{count:,}"
        return SchemaTooComplex(
            f"a message node at depth {depth} can be checked by {shown} subschemas (limit {limit:,}): "
            f"$ref, allOf/anyOf/oneOf and recursion multiply here (around {where or '/'}), so validating or "
            "reporting the errors of one message could take very long",
            where,
        )

    # closure counts and, per node, the descending edges of its in-place closure with their multiplicity;
    # a node that only refers on (`{"$ref": ...}`, no descending edge of its own) shares its target's edges
    closure: dict[str, int] = {}
    groups: dict[str, dict[tuple[str, Any, str], int]] = {}
    for pointer in order:  # children before parents
        node = graph.nodes[pointer]
        if not node.descending and len(node.in_place) == 1:
            closure[pointer] = min(cap, 1 + closure[node.in_place[0]])
            groups[pointer] = groups[node.in_place[0]]
        else:
            count = 1
            merged: dict[tuple[str, Any, str], int] = {}
            for edge in node.descending:
                merged[edge] = min(cap, merged.get(edge, 0) + 1)
            for child in node.in_place:
                count = min(cap, count + closure[child])
                child_groups = groups[child]
                steps.spend(len(child_groups) + 1)
                for edge, weight in child_groups.items():
                    merged[edge] = min(cap, merged.get(edge, 0) + weight)
            closure[pointer] = count
            groups[pointer] = merged
        if closure[pointer] > limit:
            raise too_many(closure[pointer], 0, pointer)

    entries = {""} | {target for node in graph.nodes.values() for _, _, target in node.descending}
    active = [entry for entry in entries if groups[entry]]  # the others reach no child: 0 below depth 0
    distinct = list({id(groups[entry]): groups[entry] for entry in active}.values())
    previous = {entry: closure[entry] for entry in entries}
    worst, worst_depth = previous[""], 0
    for depth in range(1, max_depth + 1):
        results: dict[int, int] = {}
        for group in distinct:
            named: dict[tuple[str, Any], int] = {}
            skipped: dict[tuple[str, Any], int] = {}  # what MORE_* edges do not add for a declared label
            wild = {ANY_NAME: 0, ANY_INDEX: 0, MORE_NAMES: 0, MORE_INDEXES: 0}
            for (kind, label, target), weight in group.items():
                value = weight * previous[target]
                if not value:
                    continue
                if kind in (NAME, INDEX):
                    named[(kind, label)] = named.get((kind, label), 0) + value
                    continue
                wild[kind] += value
                if kind in (MORE_NAMES, MORE_INDEXES):
                    declared = graph.nodes[label].declared
                    steps.spend(len(declared))
                    each = NAME if kind == MORE_NAMES else INDEX
                    for name in declared:
                        if isinstance(name, str) == (each == NAME):
                            skipped[(each, name)] = skipped.get((each, name), 0) + value
            steps.spend(len(group) + 1)
            fresh = {NAME: wild[ANY_NAME] + wild[MORE_NAMES], INDEX: wild[ANY_INDEX] + wild[MORE_INDEXES]}
            best = max(fresh.values())
            for key, value in named.items():
                best = max(best, value + fresh[key[0]] - skipped.get(key, 0))
            results[id(group)] = min(cap, best)
        current = dict.fromkeys(entries, 0)
        for entry in active:
            current[entry] = results[id(groups[entry])]
        if current[""] > worst:
            worst, worst_depth = current[""], depth
        if current[""] > limit:
            culprit = max((e for e in entries if e), key=lambda e: (current[e], -len(e)), default="")
            raise too_many(current[""], depth, culprit)
        if current == previous or current[""] == 0:
            break
        previous = current
    return Expansion(worst=worst, depth=worst_depth, nodes=len(graph.nodes))
