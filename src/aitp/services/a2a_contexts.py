"""The thread between an A2A caller and an agent for a context: a client's `contextId` (its own string, or
the id of a thread it is in with the agent) names one thread; a message without one opens a new thread.

A new thread has the caller (declaring the capabilities it asked for that the registry knows) and the agent
(declaring its A2A capabilities) as actors; the caller created it, so it speaks as `user`. A client's own
context ids are per caller and agent (`store.a2a`): two callers' "ctx-1" are two threads.
"""

from __future__ import annotations

from collections.abc import Iterable

from aitp.errors import NotFound
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import threads
from aitp.services.access import readable_thread
from aitp.services.requests import ActorDeclaration, NewMessage, NewThread
from aitp.store.a2a import A2AAgentRecord
from aitp.store.base import MessageRecord

THREAD_PREFIX = "thread_"


async def existing_thread(rt: Runtime, principal: Principal, agent: A2AAgentRecord, context_id: str) -> str | None:
    """The thread `context_id` names for this caller and agent, if any."""
    bound = await rt.store.a2a.context(principal.actor, agent.actor, context_id)
    if bound is not None:
        return bound
    if context_id.startswith(THREAD_PREFIX):
        try:
            view = await readable_thread(rt, principal, context_id)
        except NotFound:
            return None
        if view.member(agent.actor) is not None:
            return context_id
    return None


def _new_thread(
    rt: Runtime, principal: Principal, agent: A2AAgentRecord, capabilities: Iterable[str], first: NewMessage | None
) -> NewThread:
    own = [url for url in dict.fromkeys(capabilities) if rt.registry.resolve(url) is not None]
    actors = [ActorDeclaration(id=principal.actor, capabilities=own)]
    if agent.actor != principal.actor:
        actors.append(ActorDeclaration(id=agent.actor, capabilities=list(agent.capabilities)))
    return NewThread(actors=actors, messages=None if first is None else [first])


async def thread_for(
    rt: Runtime, principal: Principal, agent: A2AAgentRecord, context_id: str | None, capabilities: Iterable[str]
) -> str:
    """The thread of the context, opened (and the context bound to it) when there is none yet."""
    if context_id:
        found = await existing_thread(rt, principal, agent, context_id)
        if found is not None:
            return found
    thread, _ = await threads.create_thread(rt, principal, _new_thread(rt, principal, agent, capabilities, None))
    if not context_id:
        return thread.id
    bound = await rt.store.a2a.bind_context(principal.actor, agent.actor, context_id, thread.id)
    if bound != thread.id:  # another request opened the context first: its thread is the context's
        await threads.delete_thread(rt, principal, thread.id)
    return bound


async def open_with(
    rt: Runtime, principal: Principal, agent: A2AAgentRecord, capabilities: Iterable[str], first: NewMessage
) -> MessageRecord:
    """A new context: its thread opened with its first message in one write (the message as stored).
    A context the client names goes through `thread_for` instead: the thread is bound to it before anything
    is posted, so a thread that loses the race to bind is deleted before any actor saw a message in it."""
    body = _new_thread(rt, principal, agent, capabilities, first)
    # its refusals name the message's fields as a message posted into a thread does (`content[0]...`)
    _, _, (record,) = await threads.create_thread_with_messages(rt, principal, body, lambda _: "")
    return record


async def threads_with(rt: Runtime, principal: Principal, agent: A2AAgentRecord, limit: int) -> list[str]:
    """The caller's most recent threads (at most `limit` looked at) that the agent is in."""
    found, _ = await threads.list_threads(rt, principal, limit=limit, order="desc", after=None, before=None)
    return [thread.id for thread, actors in found if any(a.id == agent.actor for a in actors)]
