"""The capability registry as clients see it, and each thread's negotiated capability table."""

from __future__ import annotations

from functools import partial
from typing import Any

from packaging.version import InvalidVersion, Version

from aitp.capabilities.negotiate import negotiate
from aitp.capabilities.registry import CapabilityInfo, CapabilityRef, CapabilityVersion
from aitp.errors import NotFound
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services.access import readable_thread
from aitp.services.registration import retry_after_sync
from aitp.store.base import ActorRecord, MembershipFollowUp, NewEvent


def list_capabilities(rt: Runtime) -> list[CapabilityInfo]:
    return rt.registry.capabilities()


def _info(rt: Runtime, capability_id: str) -> CapabilityInfo:
    info = rt.registry.capability(capability_id)
    if info is None:
        raise NotFound(
            f"No capability registered with id '{capability_id}'.", param="capability_id", code="capability_not_found"
        )
    return info


async def get_capability(rt: Runtime, capability_id: str) -> CapabilityInfo:
    return await retry_after_sync(rt, partial(_info, rt, capability_id))


async def get_schema(rt: Runtime, capability_id: str, version: str) -> dict[str, Any]:
    """The schema document exactly as published for that version."""
    return (await retry_after_sync(rt, partial(_version, rt, capability_id, version))).source


async def get_examples(rt: Runtime, capability_id: str, version: str) -> CapabilityVersion:
    """The version whose example messages are asked for."""
    return await retry_after_sync(rt, partial(_version, rt, capability_id, version))


def _version(rt: Runtime, capability_id: str, version: str) -> CapabilityVersion:
    _info(rt, capability_id)
    try:
        parsed = Version(version.removeprefix("v"))
    except InvalidVersion:
        parsed = None
    found = None if parsed is None else rt.registry.get(CapabilityRef(capability_id, parsed))
    if found is None:
        raise NotFound(
            f"Capability '{capability_id}' has no version '{version}'.",
            param="version",
            code="capability_version_not_found",
        )
    return found


async def thread_capabilities(rt: Runtime, principal: Principal, thread_id: str) -> dict[str, Any]:
    """The thread's negotiated capability table (`aitp.capabilities.negotiate.negotiate`)."""
    view = await readable_thread(rt, principal, thread_id)
    return negotiate(rt.registry, view.actors)


def capabilities_changed(rt: Runtime) -> MembershipFollowUp:
    """A membership follow-up: a `thread.capabilities.updated` event when the table changes."""

    def follow_up(before: list[ActorRecord], after: list[ActorRecord]) -> NewEvent | None:
        old, new = negotiate(rt.registry, before), negotiate(rt.registry, after)
        if old == new:
            return None
        return NewEvent("thread.capabilities.updated", new, now())

    return follow_up
