"""Which subschemas constrain what, in a conjunction: the value of a property (2020-12 rules for properties,
patternProperties, additionalProperties, unevaluatedProperties), an array position, an anyOf/oneOf branch;
and the property names a conjunction requires.
"""

from __future__ import annotations

from aitp.capabilities.compat.budget import _spend, _work
from aitp.capabilities.compat.parts import _Part
from aitp.capabilities.compat.values import _dict, _search, _show, _strings_in

# how a property subschema applies: these two mean the name is declared by that part
_DECLARING = frozenset({"properties", "patternProperties"})


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
