"""Capability negotiation: which version of each capability every actor of a thread can read.

AITP's rule: use the highest major version known to all parties. A declaration by URL for vX.Y.Z
means "major X" (receivers ignore unknown fields, so any X.* message is readable); a declaration
by range (`{"capability": id, "versions": ">=1.0.0,<3"}`) admits the versions the range contains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from aitp.capabilities.registry import Registry
from aitp.store.base import ActorRecord


@dataclass(frozen=True)
class Support:
    """One actor's declared support for one capability id."""

    majors: frozenset[int] = frozenset()
    ranges: tuple[SpecifierSet, ...] = ()

    def admits(self, version: Version) -> bool:
        return version.major in self.majors or any(version in spec for spec in self.ranges)

    def admits_major(self, major: int, known: Iterable[Version]) -> bool:
        """True if the actor reads major `major`: by URL, or a range holding one of its known versions."""
        if major in self.majors:
            return True
        candidates = [v for v in known if v.major == major] or [Version(f"{major}.0.0")]
        return any(self.admits(v) for v in candidates)


@dataclass
class ActorDeclarations:
    """An actor's declarations resolved against the registry."""

    actor: str
    support: dict[str, Support] = field(default_factory=dict)
    declared: dict[str, list[str]] = field(default_factory=dict)  # capability id → as declared
    unknown: list[dict[str, str]] = field(default_factory=list)  # declarations no capability matches


def resolve_declarations(registry: Registry, actor: ActorRecord) -> ActorDeclarations:
    result = ActorDeclarations(actor.id)
    for declaration in actor.capabilities:
        if "schema" in declaration:
            ref = registry.resolve(declaration["schema"])
            if ref is None:
                result.unknown.append(declaration)
                continue
            capability_id, shown = ref.id, declaration["schema"]
            current = result.support.get(capability_id, Support())
            result.support[capability_id] = Support(current.majors | {ref.version.major}, current.ranges)
        else:
            capability_id, shown = declaration["capability"], declaration["versions"]
            if registry.capability(capability_id) is None:
                result.unknown.append(declaration)
                continue
            current = result.support.get(capability_id, Support())
            result.support[capability_id] = Support(current.majors, (*current.ranges, SpecifierSet(shown)))
        result.declared.setdefault(capability_id, []).append(shown)
    return result


def negotiate(registry: Registry, actors: Sequence[ActorRecord]) -> dict[str, Any]:
    """The thread's capability table: per capability any actor declared, the version all can read
    (`capabilities`), and the declarations naming capabilities the registry does not know (`unknown`)."""
    resolved = resolve_all(registry, actors)
    capability_ids = sorted({cid for r in resolved for cid in r.support})
    table = []
    for capability_id in capability_ids:
        versions = registry.versions(capability_id)
        common = [v for v in versions if all(support_for(r, capability_id).admits(v) for r in resolved)]
        supported_by = [r.actor for r in resolved if any(support_for(r, capability_id).admits(v) for v in versions)]
        table.append(
            {
                "id": capability_id,
                "version": str(common[-1]) if common else None,
                "supported_by": supported_by,
                "unsupported_by": [r.actor for r in resolved if r.actor not in supported_by],
                "declared": {r.actor: r.declared[capability_id] for r in resolved if capability_id in r.declared},
            }
        )
    unknown = [{"actor": r.actor, "declaration": d} for r in resolved for d in r.unknown]
    return {"capabilities": table, "unknown": unknown}


def support_for(declarations: ActorDeclarations, capability_id: str) -> Support:
    return declarations.support.get(capability_id, Support())


def resolve_all(registry: Registry, actors: Sequence[ActorRecord]) -> list[ActorDeclarations]:
    return [resolve_declarations(registry, a) for a in actors]


def unable_to_read(
    registry: Registry, declarations: Sequence[ActorDeclarations], capability_id: str, major: int
) -> list[str]:
    """Actors that declared no support for `major` of the capability (senders included)."""
    known = registry.versions(capability_id)
    return [d.actor for d in declarations if not support_for(d, capability_id).admits_major(major, known)]
