"""The thread between an A2A caller and an agent for a context: a client's `contextId` (its own string, or
the id of a thread it is in with the agent) names one thread; a message without one opens a new thread.

A new thread has the caller (declaring the capabilities it asked for that the registry knows) and the agent
(declaring its A2A capabilities) as actors; the caller created it, so it speaks as `user`. In a thread that
exists, the capabilities a message asks for that the caller has not declared there are added to its
declaration (how a client that was refused an answer declares what it lacks). A client's own context ids are
per caller and agent (`store.a2a`): two callers' "ctx-1" are two threads.

A message that opens a new context is posted once per caller, agent and A2A messageId (`open_once`): the
first reserves the messageId (an idempotency record, scope `a2a:{caller}`), and one sent again finds the
task the first opened among the caller's threads opened since.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterable

from aitp.errors import Conflict, NotFound
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import actors, threads
from aitp.services import messages as message_service
from aitp.services.access import readable_thread
from aitp.services.idempotency import PENDING_TIMEOUT
from aitp.services.requests import ActorDeclaration, NewMessage, NewThread
from aitp.store.a2a import A2AAgentRecord
from aitp.store.base import MessageRecord
from aitp.store.idempotency import IdempotencyRecord

THREAD_PREFIX = "thread_"
SCOPE = "a2a:"  # idempotency scopes of A2A messageIds: never an API key's id
SEARCHED_THREADS = 2000  # at most this many of the caller's newest threads are looked at for a message sent again
CLOCK_SKEW = 2  # seconds: a thread opened by the first request may carry a time a little before its reservation


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


def _declared_ids(rt: Runtime, declarations: list[dict[str, str]]) -> set[str]:
    ids = set()
    for declaration in declarations:
        ref = rt.registry.resolve(declaration["schema"]) if "schema" in declaration else None
        ids.add(ref.id if ref is not None else declaration.get("capability", ""))
    return ids


async def declare(rt: Runtime, principal: Principal, thread_id: str, capabilities: Iterable[str]) -> None:
    """Add to the caller's declaration in a thread the known capabilities it asks for and lacks there."""
    asked = {url: ref.id for url in capabilities if (ref := rt.registry.resolve(url)) is not None}
    if not asked:
        return
    view = await readable_thread(rt, principal, thread_id)
    me = view.member(principal.actor)
    if me is None:
        return
    have = _declared_ids(rt, me.capabilities)
    missing: dict[str, str] = {}  # capability -> the first URL asking for it
    for url, capability in asked.items():
        if capability not in have:
            missing.setdefault(capability, url)
    if missing:
        body = ActorDeclaration(id=me.id, client_id=me.client_id, capabilities=[*me.capabilities, *missing.values()])
        await actors.put_actor(rt, principal, thread_id, body)


async def thread_for(
    rt: Runtime, principal: Principal, agent: A2AAgentRecord, context_id: str | None, capabilities: Iterable[str]
) -> str:
    """The thread of the context, opened (and the context bound to it) when there is none yet; in a thread
    that exists, the capabilities asked for are declared for the caller (`declare`)."""
    if context_id:
        found = await existing_thread(rt, principal, agent, context_id)
        if found is not None:
            await declare(rt, principal, found, capabilities)
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


def _reservation(rt: Runtime, principal: Principal, agent: A2AAgentRecord, message_id: str) -> IdempotencyRecord:
    now = time.time()
    return IdempotencyRecord(
        scope=f"{SCOPE}{principal.actor}",
        key=hashlib.sha256(f"{agent.actor}\n{message_id}".encode()).hexdigest(),
        fingerprint="a2a SendMessage",
        token=uuid.uuid4().hex,
        created_at=now,
        expires_at=now + rt.settings.idempotency_ttl_hours * 3600,
    )


async def open_once(
    rt: Runtime,
    principal: Principal,
    agent: A2AAgentRecord,
    capabilities: Iterable[str],
    first: NewMessage,
    message_id: str,
    is_it: Callable[[MessageRecord], bool],
) -> tuple[MessageRecord, bool]:
    """`open_with`, once per caller, agent and A2A `message_id`, and whether the message was sent before:
    then it is the message the first request posted (`is_it` says whether a thread's first message is it).
    409 naming `message.messageId` while the first request has not posted it yet."""
    claim = _reservation(rt, principal, agent, message_id)
    ttl = claim.expires_at - claim.created_at
    held = await rt.store.idempotency.claim(claim, pending_timeout=ttl)  # kept until it expires
    if held is not None:
        sent = await _sent_since(rt, principal, agent, held.created_at - CLOCK_SKEW, is_it)
        if sent is not None:
            return sent, True
        # not posted: the first request is under way, or died before its write (then this one takes over)
        if await rt.store.idempotency.claim(claim, pending_timeout=PENDING_TIMEOUT) is not None:
            raise Conflict(
                "A message with this messageId is still being sent; send it again shortly.",
                param="message.messageId",
                code="message_in_progress",
            )
    try:
        return await open_with(rt, principal, agent, capabilities, first), False
    except BaseException:
        await rt.store.idempotency.release(claim.scope, claim.key, claim.token)  # refused: a retry runs again
        raise


async def _sent_since(
    rt: Runtime, principal: Principal, agent: A2AAgentRecord, since: float, is_it: Callable[[MessageRecord], bool]
) -> MessageRecord | None:
    """The first message of the caller's threads with the agent opened at `since` or later that `is_it`."""
    after: str | None = None
    for _ in range(SEARCHED_THREADS // 100):
        found, has_more = await threads.list_threads(rt, principal, limit=100, order="desc", after=after, before=None)
        for thread, members in found:
            if thread.created_at < since:
                return None
            if thread.creator != principal.actor or all(a.id != agent.actor for a in members):
                continue
            page, _ = await message_service.list_messages(
                rt, principal, thread.id, limit=1, order="asc", after=None, before=None
            )
            if page and page[0].actor == principal.actor and is_it(page[0]):
                return page[0]
        if not has_more or not found:
            return None
        after = found[-1][0].id
    return None


async def threads_with(rt: Runtime, principal: Principal, agent: A2AAgentRecord, limit: int) -> list[str]:
    """The caller's most recent threads (at most `limit` looked at) that the agent is in."""
    found, _ = await threads.list_threads(rt, principal, limit=limit, order="desc", after=None, before=None)
    return [thread.id for thread, actors in found if any(a.id == agent.actor for a in actors)]
