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

The package, each part importing only parts above it in this list: `breaks` (the result: `Break` and its kinds),
`budget` (the work bound), `values` (JSON values, regex matching), `parts` (schema positions, conjunctions,
`$ref`), `subschemas` (what constrains a property, an item, a branch), `bounds` (bound arithmetic, size bounds),
`old_side` (what the old conjunction accepts), `rules` and the rules by keyword (`scalar_rules`, `array_rules`,
`object_rules`, `logic_rules`), `comparer` (the walk) and `detect` (the entry point, `breaking_changes`).
"""

from __future__ import annotations

from aitp.capabilities.compat.breaks import (
    ADDITIONAL_PROPERTIES_CLOSED,
    BOUNDS_TIGHTENED,
    BRANCH_REMOVED,
    CONSTRAINT_ADDED,
    ENUM_NARROWED,
    KINDS,
    PATTERN_CHANGED,
    PROPERTY_REMOVED,
    REQUIRED_ADDED,
    TYPE_NARROWED,
    Break,
)
from aitp.capabilities.compat.detect import breaking_changes

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
