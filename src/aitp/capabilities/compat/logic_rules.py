"""Comparison rules for `not`, `if`/`then`/`else`, new-side `anyOf`/`oneOf` (each old conjunction must be accepted
by some new branch; a new or changed `oneOf` branch must be disjoint from the others) and unknown keywords (any
keyword not handled by some rule or known to be an annotation counts as a break unless unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator

from aitp.capabilities.compat.breaks import BRANCH_REMOVED, CONSTRAINT_ADDED, Break
from aitp.capabilities.compat.budget import _spend
from aitp.capabilities.compat.old_side import _old_info, _OldInfo
from aitp.capabilities.compat.parts import _flatten, _Label, _Part, _resolve
from aitp.capabilities.compat.rules import _Rules
from aitp.capabilities.compat.subschemas import _branches, _required, _schemas_for
from aitp.capabilities.compat.values import _json_equal, _normal

# keywords compared by some rule of this package (or consumed by flattening)
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


class _LogicRules(_Rules):
    """The keywords combining schemas, and the catch-all for keywords no rule handles."""

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
