"""Registering capability versions at run time, and keeping every instance's registry in step with the store.

Shipped capabilities come from files; registered ones live in the store (`capability_versions`), so they
survive restarts and reach every instance sharing the store. An instance loads them at start-up, before
each registration, and then follows the store in the background (`follow`, for the app's lifetime), so
a version registered on instance B is usable on instance A within `FOLLOW_INTERVAL`, and no post waits
for a sync. A read of the registry that misses (a capability's page, schema or examples: `$schema` URLs
must resolve on every instance) syncs first (`retry_after_sync`), at most once per `MISS_SYNC_INTERVAL`.

What a schema costs is bounded before the server spends it: the cost of validating against it
(`complexity`, in `compile_version`), and the CPU time and memory of compiling it, tried first in a child
process with hard limits (`trial`); over any of them, registration answers 422 `schema_too_complex`. A stored
version that cannot be loaded (over today's limits, invalid, an alias now taken, anything) is logged and set
aside, once per content: the others load and the server starts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from packaging.version import Version

from aitp.capabilities import trial
from aitp.capabilities.compat import breaking_changes
from aitp.capabilities.registry import (
    AliasRefused,
    CapabilityInfo,
    CapabilityRef,
    CompiledVersion,
    SchemaRejected,
    SchemaTooComplex,
    compile_version,
    version_text,
)
from aitp.config import Settings
from aitp.errors import APIError, Conflict, InvalidRequest, PermissionDenied, Unprocessable, pointer_param
from aitp.inputs import limits
from aitp.principals import CAPABILITIES_WRITE, Principal
from aitp.runtime import Runtime, now
from aitp.services.requests import NewCapabilityVersion
from aitp.store.capabilities import CapabilityVersionRecord

log = logging.getLogger(__name__)

FOLLOW_INTERVAL = 1.0  # seconds: how long a version registered through another instance may be unknown here
MISS_SYNC_INTERVAL = 1.0  # seconds: a flood of unknown ids costs at most one store read a second
MAX_REPORTED_BREAKS = 10
# error codes of registry reads that mean "this instance's registry does not know it", worth a sync first
REGISTRY_MISS_CODES = frozenset({"capability_not_found", "capability_version_not_found"})

T = TypeVar("T")


class _Syncs:
    """This process's registry syncs with the store (`rt.state(_Syncs)`)."""

    def __init__(self, rt: Runtime) -> None:
        self.last = float("-inf")  # time.monotonic() of the last sync
        self.registering = asyncio.Lock()  # one registration (or background sync) at a time in this process
        # (id, version) of the stored versions already installed, compared, set aside or found malformed: a stored
        # version never changes (the first registration of an id and version wins), so a sync looks at each once
        self.seen: set[tuple[str, str]] = set()


async def sync_registry(rt: Runtime) -> int:
    """Add every stored registration this instance's registry lacks; returns how many were added.

    New ones are tried (`trial`) together in one child process, then compiled here. One that cannot be
    loaded, for whatever reason, is logged and set aside (not tried again while its content is the same):
    it never stops the others, nor the server's start.
    """
    syncs = rt.state(_Syncs)
    syncs.last = time.monotonic()
    fresh: list[tuple[CapabilityRef, CapabilityVersionRecord]] = []
    for record in await rt.store.capabilities.all(skip=syncs.seen):
        try:
            ref = CapabilityRef(record.id, Version(record.version))
        except Exception as exc:  # noqa: BLE001 - a malformed record is skipped like any unloadable one
            syncs.seen.add((record.id, record.version))
            log.error("registered capability %r %r cannot be loaded and is skipped: %s", record.id, record.version, exc)
            continue
        if rt.registry.get(ref) is not None:
            syncs.seen.add((record.id, record.version))
            if not _same_as_known(rt, ref, record):
                log.warning("registered %s differs from the shipped file version; the file wins", ref)
            continue
        if rt.registry.is_set_aside(ref, _content(record)):
            syncs.seen.add((record.id, record.version))
            continue
        fresh.append((ref, record))
    if not fresh:
        return 0
    try:
        verdicts = await trial.run([_trial_item(record) for _, record in fresh], _budget(rt.settings))
    except Exception:  # noqa: BLE001 - no trial at all: each is compiled here, its CPU time measured
        log.exception("trial compiles failed; compiling %d stored version(s) without a memory limit", len(fresh))
        verdicts = [trial.UNCHECKED] * len(fresh)
    added = 0
    for (ref, record), verdict in zip(fresh, verdicts, strict=True):
        syncs.seen.add((record.id, record.version))
        if rt.registry.get(ref) is not None:  # a concurrent sync got there first
            continue
        try:
            _install(rt, record, await _compile_measured(record, rt.settings, verdict))
        except Exception as exc:  # noqa: BLE001 - e.g. stricter rules since it was registered, an alias taken
            log.error("registered %s cannot be loaded and is set aside: %s", ref, exc)
            rt.registry.set_aside(ref, _content(record), str(exc))
            continue
        added += 1
    return added


async def follow(rt: Runtime, interval: float = FOLLOW_INTERVAL) -> None:
    """Sync every `interval` seconds, for the process's lifetime (one store read when nothing is new), one
    sync or registration at a time. Registrations are not in the event log, so the hub's tailer cannot tell
    when one was made elsewhere: the registry follows the store on its own, and posts never sync."""
    while True:
        await asyncio.sleep(interval)
        try:
            async with rt.state(_Syncs).registering:
                await sync_registry(rt)
        except Exception:  # a store hiccup must not stop following for good
            log.exception("syncing the capability registry with the store failed; trying again in %gs", interval)


async def sync_on_miss(rt: Runtime) -> bool:
    """After a registry lookup missed: sync (at most once per interval); True if anything was added."""
    if time.monotonic() - rt.state(_Syncs).last < MISS_SYNC_INTERVAL:
        return False
    return await sync_registry(rt) > 0


async def retry_after_sync(rt: Runtime, attempt: Callable[[], T]) -> T:
    """`attempt()`, a read of the registry; if it failed because the registry lacks a capability, sync and
    try once more."""
    try:
        return attempt()
    except APIError as exc:
        if exc.code not in REGISTRY_MISS_CODES or not await sync_on_miss(rt):
            raise
    return attempt()


async def register_capability(
    rt: Runtime, principal: Principal, body: NewCapabilityVersion
) -> tuple[CapabilityInfo, bool]:
    """Register a capability version; returns (the capability, created). Re-posting identical content is a no-op."""
    if not principal.can(CAPABILITIES_WRITE):
        raise PermissionDenied(
            f"Registering capabilities needs an admin key or a key with the '{CAPABILITIES_WRITE}' scope.",
            code="missing_scope",
        )
    limits.check_schema(body.schema_, rt.settings)
    for i, example in enumerate(body.examples):
        limits.check_depth(example, rt.settings.max_json_depth, f"examples[{i}]")
    # one registration at a time in this process: checking takes a trial compile (the event loop serves others
    # meanwhile), and a version must be checked against the neighbours as they will be when it is installed
    async with rt.state(_Syncs).registering:
        return await _register(rt, principal, body)


async def _register(rt: Runtime, principal: Principal, body: NewCapabilityVersion) -> tuple[CapabilityInfo, bool]:
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
        return rt.registry.capability(ref.id), False  # type: ignore[return-value]

    compiled = await _checked(rt, ref, record)
    stored = await rt.store.capabilities.register(record)
    created = stored == record
    if not created and _content(stored) != _content(record):  # another instance registered it first
        raise _immutable(ref)
    _install(rt, stored, compiled)
    return rt.registry.capability(ref.id), created  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------ checks


def _budget(settings: Settings) -> trial.Budget:
    return trial.Budget(
        seconds=settings.max_schema_compile_seconds,
        bytes=settings.max_schema_compile_bytes,
        max_expansion=settings.max_schema_expansion,
        max_depth=settings.max_json_depth,
    )


def _trial_item(record: CapabilityVersionRecord) -> dict[str, Any]:
    return {"id": record.id, "version": record.version, "schema": record.schema, "openapi_root": record.openapi_root}


def _over_budget(verdict: trial.Verdict, settings: Settings) -> str:
    if verdict.reason == "memory":
        limit = f"{settings.max_schema_compile_bytes / (1 << 20):g} MiB of memory"
    else:
        limit = f"{settings.max_schema_compile_seconds:g} s of CPU time"
    return f"compiling it takes more than this server allows ({limit}); split or simplify the schema"


def _compile(record: CapabilityVersionRecord, settings: Settings) -> CompiledVersion:
    ref = CapabilityRef(record.id, Version(record.version))
    examples = {f"example-{i}": example for i, example in enumerate(record.examples)}
    return compile_version(
        ref,
        record.schema,
        record.openapi_root,
        examples,
        max_expansion=settings.max_schema_expansion,
        max_depth=settings.max_json_depth,
    )


async def _compile_measured(
    record: CapabilityVersionRecord, settings: Settings, verdict: trial.Verdict
) -> CompiledVersion:
    """Compile what the trial found within budget, on a worker thread (the event loop keeps running between
    the Python parts); what it refused is refused here without compiling. Without a trial (`verdict.checked`
    False) the CPU time is measured here instead, and a compile over budget refused."""
    if not verdict.within:
        raise SchemaTooComplex(_over_budget(verdict, settings))
    if verdict.rejected == "too_complex":
        raise SchemaTooComplex(verdict.detail, verdict.pointer)
    if verdict.rejected:
        raise SchemaRejected(verdict.detail, verdict.pointer)

    def compile_timed() -> tuple[CompiledVersion, float]:
        started = time.thread_time()
        compiled = _compile(record, settings)
        return compiled, time.thread_time() - started

    compiled, seconds = await asyncio.to_thread(compile_timed)
    if not verdict.checked and seconds > settings.max_schema_compile_seconds:
        raise SchemaTooComplex(_over_budget(trial.Verdict(False, "time", seconds), settings))
    return compiled


async def _checked(rt: Runtime, ref: CapabilityRef, record: CapabilityVersionRecord) -> CompiledVersion:
    """Compile and check a new version: within budget, a valid schema, valid examples, free aliases, semver kept."""
    (verdict,) = await trial.run([_trial_item(record)], _budget(rt.settings))
    try:
        compiled = await _compile_measured(record, rt.settings, verdict)
    except SchemaTooComplex as exc:
        param = pointer_param("schema", exc.pointer, record.schema)
        raise Unprocessable(f"The schema is too complex: {exc}", param=param, code="schema_too_complex") from None
    except SchemaRejected as exc:
        param = pointer_param("schema", exc.pointer, record.schema)
        raise Unprocessable(f"The schema cannot be used: {exc}", param=param, code="invalid_schema") from None
    for i, example in enumerate(record.examples):
        issues = compiled.validate(example)
        if issues:
            at = [pointer_param(f"examples[{i}]", issue.pointer, example) for issue in issues]
            listed = "; ".join(f"{where}: {issue.message}" for where, issue in zip(at, issues, strict=True))
            raise Unprocessable(
                f"examples[{i}] does not validate against the schema: {listed}",
                param=at[0],
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
    await _check_semver(rt, compiled)
    return compiled


async def _check_semver(rt: Runtime, compiled: CompiledVersion) -> None:
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
        breaks = await asyncio.to_thread(breaking_changes, old_schema, new_schema)  # bounded (compat.budget.MAX_STEPS)
        if not breaks:
            continue
        listed = "; ".join(
            f"{b.kind} at {pointer_param('schema', b.pointer, new_schema)}: {b.message}"
            for b in breaks[:MAX_REPORTED_BREAKS]
        )
        more = f" (and {len(breaks) - MAX_REPORTED_BREAKS} more)" if len(breaks) > MAX_REPORTED_BREAKS else ""
        next_major = f"{max(v.major for v in rt.registry.versions(ref.id)) + 1}.0.0"
        raise Unprocessable(
            f"{ref.id} {version_text(new.version)} rejects messages that {version_text(old.version)} accepted, which"
            f" a minor or patch version may not: {listed}{more}. Publish these changes as a new major version"
            f" ({next_major}) instead.",
            param=pointer_param("schema", breaks[0].pointer, new_schema) if new == ref else "version",
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
