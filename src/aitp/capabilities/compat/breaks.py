"""What a comparison reports: one `Break` per change that narrows what is accepted, and the kinds of change."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Break:
    pointer: str  # RFC 6901 pointer to a schema in the NEW document ("" = root); for a removal, the parent schema
    kind: str  # one of KINDS
    message: str  # human readable, names the property / value / bound
