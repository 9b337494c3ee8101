"""Comparison rules for objects: minProperties/maxProperties, required, properties, patternProperties,
additionalProperties/unevaluatedProperties, dependentRequired, dependentSchemas and propertyNames.
"""

from __future__ import annotations

from collections.abc import Iterator

from aitp.capabilities.compat.bounds import _count_bounds, _length_if
from aitp.capabilities.compat.breaks import (
    ADDITIONAL_PROPERTIES_CLOSED,
    CONSTRAINT_ADDED,
    PROPERTY_REMOVED,
    REQUIRED_ADDED,
    Break,
)
from aitp.capabilities.compat.budget import _spend
from aitp.capabilities.compat.old_side import _OldInfo
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.rules import _Rules
from aitp.capabilities.compat.subschemas import _DECLARING, _pattern_governed, _required, _schemas_for
from aitp.capabilities.compat.values import _dict, _strings_in


class _ObjectRules(_Rules):
    """The object keywords; property values recurse into the walk."""

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
