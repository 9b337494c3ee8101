"""Thread membership: members bring others in, actors update their own capabilities, leave or are removed."""

from __future__ import annotations

from aitp.errors import NotFound, PermissionDenied, thread_not_found
from aitp.events import payloads
from aitp.inputs import limits
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services import identities
from aitp.services.access import readable_thread, role_of
from aitp.services.capabilities import capabilities_changed
from aitp.services.requests import ActorDeclaration
from aitp.services.threads import actor_records
from aitp.store.base import ActorRecord, NewEvent, TooManyActors


async def inbox_cursor(rt: Runtime) -> int:
    """Where every actor's inbox stands now: following it from here on misses nothing written after."""
    return await rt.store.last_event_gid()


async def put_actor(
    rt: Runtime, principal: Principal, thread_id: str, body: ActorDeclaration
) -> tuple[ActorRecord, str]:
    """Add an actor (any member may), or replace an actor's declaration (only itself or an admin).
    Returns the actor as stored and the role it speaks in."""
    limits.check_capabilities(body.capabilities, rt.settings, "capabilities")
    view = await readable_thread(rt, principal, thread_id)
    if view.member(body.id) is None:
        # a cheap early refusal, against the thread as read; the store counts again in the join's transaction
        limits.check_actor_count(len(view.actors) + 1, rt.settings, "id")
        await identities.check_contacts(rt, principal, [identities.Named(body.id, "id")])
    if view.member(body.id) is not None and body.id != principal.actor and not principal.admin:
        raise PermissionDenied(
            f"Actor '{body.id}' is already a member; only it (or an admin) may change its capabilities.",
            param="id",
        )
    (record,) = actor_records(thread_id, [body], now(), "")
    role = role_of(record.id, view.thread)

    def event(actor: ActorRecord, joined: bool) -> NewEvent:
        kind = "thread.actor.joined" if joined else "thread.actor.updated"
        return NewEvent(kind, payloads.actor_payload(actor, role), now())

    try:
        result = await rt.store.put_actor(record, event, capabilities_changed(rt), max_actors=rt.settings.max_actors)
    except TooManyActors as exc:  # concurrent joins took the last seats since the thread was read
        raise limits.too_many_actors(exc.limit, exc.count, "id") from None
    if result is None:
        raise thread_not_found(thread_id)
    return result[0], role


async def remove_actor(rt: Runtime, principal: Principal, thread_id: str, actor_id: str) -> None:
    """An actor may leave; the thread's creator (or an admin) may remove anyone."""
    view = await readable_thread(rt, principal, thread_id)
    allowed = principal.admin or actor_id == principal.actor or view.thread.creator == principal.actor
    if not allowed:
        raise PermissionDenied(
            "Only the actor itself, the thread's creator or an admin may remove an actor.", param="actor_id"
        )
    left = NewEvent("thread.actor.left", payloads.removed_payload(actor_id), now())
    if await rt.store.remove_actor(thread_id, actor_id, left, capabilities_changed(rt)) is None:
        raise NotFound(f"Actor '{actor_id}' is not a member of this thread.", param="actor_id", code="actor_not_found")
