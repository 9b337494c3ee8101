"""Recognising and checking capability messages inside a message's content parts.

A text part whose value is a JSON object with a `$schema` key is a capability message; anything
else (plain text, JSON without `$schema`) stays plain text. A `$schema` that is not a string is refused:
the part claims to be a capability message without naming one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from packaging.version import Version

from aitp.capabilities.negotiate import ActorDeclarations, unable_to_read
from aitp.capabilities.registry import CapabilityRef, Registry
from aitp.errors import Unprocessable, pointer_param
from aitp.inputs.limits import check_depth

# the first issue only: is_valid decides, then one error is built (iter_errors builds them all, each with a
# copy of its part of the message: an invalid 243 KB message cost 10x a valid one, see registry.validate)
MAX_REPORTED_ISSUES = 1


@functools.lru_cache(maxsize=256)
def _shown(version: Version) -> str:
    return str(version)  # packaging rebuilds the text on every str(): ~1% of a capability POST


@dataclass(frozen=True)
class CapabilityPart:
    index: int
    schema_url: str
    message: dict[str, Any]

    @property
    def type(self) -> str | None:
        """The message type: its first top-level key other than `$schema` (e.g. `request_decision`)."""
        return next((k for k in self.message if k != "$schema"), None)


class CapabilityNotSupported(Unprocessable):
    """422 `capability_not_supported`: actors of the thread (`unsupported_by`) cannot read a capability message.

    The refusal names them (`details`). When the sender reads the message and only recipients do not, the members are
    told too (`services.messages`): they are the ones who can declare the capability."""

    default_code = "capability_not_supported"

    def __init__(
        self,
        message: str,
        *,
        param: str,
        sender: str,
        part: CapabilityPart,
        ref: CapabilityRef,
        unsupported_by: list[str],
    ) -> None:
        super().__init__(message, param=param)
        self.sender = sender
        self.part = part
        self.ref = ref
        self.unsupported_by = unsupported_by

    @property
    def by_recipients(self) -> bool:
        """True when the sender reads the message and some recipients do not."""
        return self.sender not in self.unsupported_by

    def details(self) -> dict[str, Any]:
        return {"unsupported_by": list(self.unsupported_by)}


def capability_parts(content: Sequence[dict[str, Any]], where: str = "content") -> list[CapabilityPart]:
    """The capability parts of `content` (found at `where` in the request body, for `param`)."""
    parts = []
    for index, part in enumerate(content):
        if part.get("type") != "text":
            continue
        value = part["text"]["value"]
        if not value.lstrip().startswith("{") or '"$schema"' not in value:
            continue  # cheap reject before parsing
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(parsed, dict) or "$schema" not in parsed:
            continue
        if not isinstance(parsed["$schema"], str):
            raise Unprocessable(
                f"{where}[{index}].$schema must be a schema URL (a string), got "
                f"{orjson.dumps(parsed['$schema']).decode()[:80]}: a JSON object with a $schema key is a "
                "capability message.",
                param=f"{where}[{index}].$schema",
                code="invalid_capability_message",
            )
        parts.append(CapabilityPart(index, parsed["$schema"], parsed))
    return parts


def _validation_target(registry: Registry, ref: CapabilityRef) -> CapabilityRef | None:
    """The registered version to validate against: the exact one, else the newest of that major."""
    if registry.get(ref) is not None:
        return ref
    same_major = [v for v in registry.versions(ref.id) if v.major == ref.version.major]
    return CapabilityRef(ref.id, same_major[-1]) if same_major else None


def check_parts(
    registry: Registry,
    content: Sequence[dict[str, Any]],
    *,
    sender: str,
    declarations: Sequence[ActorDeclarations],
    accept_unknown: bool,
    max_depth: int,
    where: str = "content",
) -> tuple[list[dict[str, Any] | None] | None, list[tuple[CapabilityPart, str]]]:
    """Validate every capability part. Returns the message's `aitp` summary (None if it has no
    capability part) and the validated parts with their capability id.

    Raises 400 `nesting_too_deep` (before any validation: deep JSON is what makes validators slow), 422
    `unknown_capability`, `invalid_capability_message` or `capability_not_supported` (`CapabilityNotSupported`).
    """
    parts = capability_parts(content, where)
    if not parts:
        return None, []
    for part in parts:
        check_depth(part.message, max_depth, f"{where}[{part.index}]")
    summary: list[dict[str, Any] | None] = [None] * len(content)
    validated: list[tuple[CapabilityPart, str]] = []
    for part in parts:
        param = f"{where}[{part.index}]"
        ref = registry.resolve(part.schema_url)
        target = None if ref is None else _validation_target(registry, ref)
        if ref is None or target is None:
            if not accept_unknown:
                raise Unprocessable(
                    f"{param}: no registered capability matches $schema {part.schema_url!r}.",
                    param=f"{param}.$schema",
                    code="unknown_capability",
                )
            summary[part.index] = {
                "capability": None,
                "version": None,
                "type": part.type,
                "validated": False,
                "schema": part.schema_url,
            }
            continue
        issues = registry.validate(target, part.message, limit=MAX_REPORTED_ISSUES)
        if issues:
            at = [pointer_param(param, i.pointer, part.message) for i in issues]
            listed = "; ".join(f"{where}: {i.message}" for where, i in zip(at, issues, strict=True))
            raise Unprocessable(
                f"{param} is not a valid {ref.id} v{target.version} message: {listed}",
                param=at[0],
                code="invalid_capability_message",
            )
        cannot = unable_to_read(registry, declarations, ref.id, ref.version.major)
        if cannot:
            if sender in cannot:
                text = (
                    f"{param}: the sender '{sender}' has not declared {ref.id} major version {ref.version.major}; "
                    "declare it among its capabilities in this thread before sending such messages."
                )
            else:
                text = (
                    f"{param}: {', '.join(repr(a) for a in cannot)} cannot read {ref.id} major version "
                    f"{ref.version.major}; send plain text or a version every actor supports (the thread's "
                    "negotiated capabilities)."
                )
            raise CapabilityNotSupported(
                text, param=f"{param}.$schema", sender=sender, part=part, ref=ref, unsupported_by=list(cannot)
            )
        summary[part.index] = {
            "capability": ref.id,
            "version": _shown(ref.version),
            "type": part.type,
            "validated": True,
            "schema": part.schema_url,
        }
        validated.append((part, ref.id))
    return summary, validated
