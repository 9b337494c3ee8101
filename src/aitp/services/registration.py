"""Registering capability versions at run time, and keeping every instance's registry in step with the store.

Shipped capabilities come from files; registered ones live in the store (`capability_versions`), so they
survive restarts and reach every instance sharing the store. An instance loads them at start-up, before
each registration, and when a lookup misses (`sync_on_miss`), so a version registered on instance B is
usable on instance A at its first use there.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from packaging.version import Version

from aitp import limits, render
from aitp.auth import CAPABILITIES_WRITE, Principal
from aitp.capabilities.compat import breaking_changes
from aitp.capabilities.registry import (
    AliasRefused,
    CapabilityRef,
    CompiledVersion,
    SchemaRejected,
    compile_version,
    version_text,
)
from aitp.errors import APIError, Conflict, InvalidRequest, PermissionDenied, Unprocessable
from aitp.models import RegisterCapabilityRequest
from aitp.runtime import Runtime, now
from aitp.store.base import CapabilityVersionRecord

log = logging.getLogger(__name__)

MISS_SYNC_INTERVAL = 1.0  # seconds: a flood of unknown URLs costs at most one store read a second
MAX_REPORTED_BREAKS = 10
# error codes that mean "this instance's registry does not know it", worth a sync before giving up
REGISTRY_MISS_CODES = frozenset({"unknown_capability", "capability_not_found", "capability_version_not_found"})

T = TypeVar("T")


async def sync_registry(rt: Runtime) -> int:
    """Add every stored registration this instance's registry lacks; returns how many were added."""
    rt.registry_synced_at = time.monotonic()
    added = 0
    for record in await rt.store.list_capability_versions():
        ref = CapabilityRef(record.id, Version(record.version))
        if rt.registry.get(ref) is not None:
            if not _same_as_known(rt, ref, record):
                log.warning("registered %s differs from the shipped file version; the file wins", ref)
            continue
        try:
            _install(rt, record, _compile(record))
        except (SchemaRejected, AliasRefused) as exc:  # e.g. stricter rules since it was registered
            log.error("registered %s cannot be loaded and is skipped: %s", ref, exc)
            continue
        added += 1
    return added


async def sync_on_miss(rt: Runtime) -> bool:
    """After a registry lookup missed: sync (at most once per interval); True if anything was added."""
    if time.monotonic() - rt.registry_synced_at < MISS_SYNC_INTERVAL:
        return False
    return await sync_registry(rt) > 0


async def retry_after_sync(rt: Runtime, attempt: Callable[[], T]) -> T:
    """`attempt()`; if it failed because the registry lacks a capability, sync and try once more."""
    try:
        return attempt()
    except APIError as exc:
        if exc.code not in REGISTRY_MISS_CODES or not await sync_on_miss(rt):
            raise
    return attempt()


async def register_capability(
    rt: Runtime, principal: Principal, body: RegisterCapabilityRequest
) -> tuple[dict[str, Any], bool]:
    """Register a capability version; returns (the capability, created). Re-posting identical content is a no-op."""
    if not principal.can(CAPABILITIES_WRITE):
        raise PermissionDenied(
            f"Registering capabilities needs an admin key or a key with the '{CAPABILITIES_WRITE}' scope.",
            code="missing_scope",
        )
    limits.check_schema(body.schema_, rt.settings)
    for i, example in enumerate(body.examples):
        limits.check_depth(example, rt.settings.max_json_depth, f"examples[{i}]")
    await sync_registry(rt)
    record = CapabilityVersionRecord(
        id=body.id,
        version=body.version,
        schema=body.schema_,
        examples=body.examples,
        aliases=body.aliases,
        title=body.title,
        description=body.description,
        openapi_root=body.openapi_root,
        created_at=now(),
        created_by=principal.actor,
    )
    ref = CapabilityRef(body.id, Version(body.version))
    if rt.registry.get(ref) is not None:
        if not _same_as_known(rt, ref, record):
            raise _immutable(ref)
        return render.capability(rt.registry.capability(ref.id)), False  # type: ignore[arg-type]

    compiled = _checked(rt, ref, record)
    stored = await rt.store.register_capability_version(record)
    created = stored == record
    if not created and _content(stored) != _content(record):  # another instance registered it first
        raise _immutable(ref)
    _install(rt, stored, compiled)
    return render.capability(rt.registry.capability(ref.id)), created  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ checks


def _compile(record: CapabilityVersionRecord) -> CompiledVersion:
    ref = CapabilityRef(record.id, Version(record.version))
    examples = {f"example-{i}": example for i, example in enumerate(record.examples)}
    return compile_version(ref, record.schema, record.openapi_root, examples)


def _checked(rt: Runtime, ref: CapabilityRef, record: CapabilityVersionRecord) -> CompiledVersion:
    """Compile and check a new version: a valid schema, valid examples, free aliases, semver kept."""
    try:
        compiled = _compile(record)
    except SchemaRejected as exc:
        param = "schema" + exc.pointer if exc.pointer else "schema"
        raise Unprocessable(f"The schema cannot be used: {exc}", param=param, code="invalid_schema") from None
    for i, example in enumerate(record.examples):
        issues = compiled.validate(example)
        if issues:
            listed = "; ".join(f"{issue.pointer or '/'}: {issue.message}" for issue in issues)
            raise Unprocessable(
                f"examples[{i}] does not validate against the schema: {listed}",
                param=f"examples[{i}]{issues[0].pointer}",
                code="invalid_example",
            )
    for i, url in enumerate(record.aliases):
        try:
            rt.registry.check_alias(url, ref)
        except AliasRefused as exc:
            error = Conflict if exc.taken else InvalidRequest
            raise error(
                f"aliases[{i}]: {exc}.", param=f"aliases[{i}]", code="alias_taken" if exc.taken else "invalid_alias"
            ) from None
    _check_semver(rt, compiled)
    return compiled


def _check_semver(rt: Runtime, compiled: CompiledVersion) -> None:
    """Within a major, each version accepts every message its predecessor accepted."""
    ref = compiled.version.ref
    same_major = [v for v in rt.registry.versions(ref.id) if v.major == ref.version.major]
    older = [v for v in same_major if v < ref.version]
    newer = [v for v in same_major if v > ref.version]
    pairs = []
    if older:
        pairs.append((CapabilityRef(ref.id, older[-1]), ref))
    if newer:
        pairs.append((ref, CapabilityRef(ref.id, newer[0])))
    schemas = {ref: compiled.version.schema}
    for old, new in pairs:
        old_schema = schemas.get(old) or rt.registry.get(old).schema  # type: ignore[union-attr]
        new_schema = schemas.get(new) or rt.registry.get(new).schema  # type: ignore[union-attr]
        breaks = breaking_changes(old_schema, new_schema)
        if not breaks:
            continue
        listed = "; ".join(f"{b.kind} at {b.pointer or '/'}: {b.message}" for b in breaks[:MAX_REPORTED_BREAKS])
        more = f" (and {len(breaks) - MAX_REPORTED_BREAKS} more)" if len(breaks) > MAX_REPORTED_BREAKS else ""
        next_major = f"{max(v.major for v in rt.registry.versions(ref.id)) + 1}.0.0"
        raise Unprocessable(
            f"{ref.id} {version_text(new.version)} rejects messages that {version_text(old.version)} accepted, which"
            f" a minor or patch version may not: {listed}{more}. Publish these changes as a new major version"
            f" ({next_major}) instead.",
            param="schema" + breaks[0].pointer if new == ref else "version",
            code="breaking_change",
        )


def _content(record: CapabilityVersionRecord) -> str:
    return json.dumps([record.schema, record.examples, record.openapi_root], sort_keys=True)


def _same_as_known(rt: Runtime, ref: CapabilityRef, record: CapabilityVersionRecord) -> bool:
    """Whether `record` carries what the registry already has for `ref` (schema and examples)."""
    known = rt.registry.get(ref)
    assert known is not None
    examples = sorted(json.dumps(e, sort_keys=True) for e in known.examples.values())
    return known.source == record.schema and examples == sorted(json.dumps(e, sort_keys=True) for e in record.examples)


def _immutable(ref: CapabilityRef) -> Conflict:
    return Conflict(
        f"{ref.id} {version_text(ref.version)} is already published with other content; published versions are"
        " immutable. Register the change under a new version.",
        param="version",
        code="capability_version_exists",
    )


def _install(rt: Runtime, record: CapabilityVersionRecord, compiled: CompiledVersion) -> None:
    ref = compiled.version.ref
    rt.registry.add_capability(ref.id, record.title, record.description)
    rt.registry.add_version(compiled)
    for url in record.aliases:
        rt.registry.add_alias(url, ref)
