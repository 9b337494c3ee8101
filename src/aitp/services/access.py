"""Who may see and touch a thread. Non-members get 404, never 403, so thread ids do not leak."""

from __future__ import annotations

from dataclasses import dataclass, field

from aitp.capabilities.negotiate import ActorDeclarations, resolve_all
from aitp.capabilities.registry import Registry
from aitp.errors import InvalidRequest, PermissionDenied, thread_not_found
from aitp.principals import Principal
from aitp.recent import Recent
from aitp.runtime import Runtime
from aitp.store.base import ActorRecord, ThreadRecord

# How long a thread's actors, read for posting a message, may be reused. A change to the thread's record
# or actors made through this process forgets them at once; one made by another process, when the event
# tailer sees it. (The append rechecks the author's membership in its own transaction.)
VIEW_TTL = 1.0
MAX_VIEWS = 10_000


def role_of(actor_id: str, thread: ThreadRecord) -> str:
    """AITP: persons (the thread's creator, and the actors it marked as persons) speak as `user`, every other
    actor as `assistant`."""
    return "user" if actor_id == thread.creator or actor_id in thread.persons else "assistant"


@dataclass
class ThreadView:
    """A thread with its current actors, as loaded for one request (or reused: see `readable_thread`)."""

    thread: ThreadRecord
    actors: list[ActorRecord]
    _declarations: tuple[int, list[ActorDeclarations]] | None = field(default=None, repr=False, compare=False)

    def member(self, actor_id: str) -> ActorRecord | None:
        return next((a for a in self.actors if a.id == actor_id), None)

    def declarations(self, registry: Registry) -> list[ActorDeclarations]:
        """The actors' capability declarations resolved against `registry` (once per registry change)."""
        if self._declarations is None or self._declarations[0] != registry.generation:
            self._declarations = (registry.generation, resolve_all(registry, self.actors))
        return self._declarations[1]


def thread_views(rt: Runtime) -> Recent[str, ThreadView]:
    """This process's recently read threads (`rt.state(thread_views)`), each forgotten when the hub says
    its record or actors may have changed."""
    views: Recent[str, ThreadView] = Recent(VIEW_TTL, MAX_VIEWS)
    rt.hub.add_listener(views.forget)
    rt.hub.members_of = lambda thread_id: _member_ids(views.peek(thread_id))  # whose inboxes a message wakes
    return views


def _member_ids(view: ThreadView | None) -> list[str] | None:
    return None if view is None else [actor.id for actor in view.actors]


async def readable_thread(rt: Runtime, principal: Principal, thread_id: str, *, recent: bool = False) -> ThreadView:
    """The thread if the principal is a member (or admin); 404 otherwise.

    `recent`: a view read up to `VIEW_TTL` ago will do, unless the thread changed since (then this
    process forgot it: at once for its own writes, within the event tailer's delay for other processes').
    The view is shared by the requests that reuse it: read it, never change it."""
    if recent:
        view = await rt.state(thread_views).get(thread_id, lambda: _load_view(rt, thread_id))
    else:
        view = await _load_view(rt, thread_id)
    if view is None:
        raise thread_not_found(thread_id)
    if not principal.admin and view.member(principal.actor) is None:
        raise thread_not_found(thread_id)
    return view


async def _load_view(rt: Runtime, thread_id: str) -> ThreadView | None:
    found = await rt.store.get_thread_with_actors(thread_id)
    return None if found is None else ThreadView(*found)


def own_or_admin(principal: Principal, actor: str, what: str, param: str = "actor") -> None:
    """403 unless the caller is `actor` itself or an admin: what an actor says of itself (its profile, contact
    policy, A2A settings) is its own to read or change."""
    if actor != principal.actor and not principal.admin:
        raise PermissionDenied(f"Only the actor itself (or an admin) may {what}.", param=param)


def acting_actor(principal: Principal, requested: object, param: str = "metadata.actor") -> str:
    """The actor a write is made as: the key's own, or (admin only) the one requested."""
    if requested is None or requested == principal.actor:
        return principal.actor
    if not isinstance(requested, str) or not requested:
        raise InvalidRequest("`actor` must be a non-empty string.", param=param)
    if not principal.admin:
        raise PermissionDenied(
            f"This key acts as '{principal.actor}' and cannot write as '{requested}'.",
            param=param,
            code="actor_impersonation",
        )
    return requested
