"""The thread between an A2A caller and an agent for a context: a client's `contextId` (its own string, or
the id of a thread it is in with the agent) names one thread; a message without one opens a new thread.

A new thread has the caller (declaring the capabilities it asked for that the registry knows) and the agent
(declaring its A2A capabilities) as actors; the caller created it, so it speaks as `user`. In a thread that
exists, the capabilities a message asks for that the caller has not declared there are added to its
declaration (how a client that was refused an answer declares what it lacks). A client's own context ids are
per caller and agent (`store.a2a`): two callers' "ctx-1" are two threads.

A message that opens a new context is posted once per caller, agent and A2A messageId (`open_once`): the
thread's write keeps the messageId (an idempotency record, scope `a2a:{caller}`) with where the message is,
and one sent again finds the task the first opened there.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable

import orjson

from aitp.errors import InvalidRequest, NotFound
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services import actors, threads
from aitp.services import messages as message_service
from aitp.services.access import readable_thread
from aitp.services.requests import ActorDeclaration, NewMessage, NewThread
from aitp.store.a2a import A2AAgentRecord
from aitp.store.base import KeyTaken, MessageRecord, ThreadRecord
from aitp.store.idempotency import IdempotencyRecord

THREAD_PREFIX = "thread_"
SCOPE = "a2a:"  # idempotency scopes of A2A messageIds: never an API key's id
FINGERPRINT = "a2a SendMessage"


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
    rt: Runtime,
    principal: Principal,
    agent: A2AAgentRecord,
    capabilities: Iterable[str],
    first: NewMessage,
    once: threads.Once | None = None,
) -> MessageRecord:
    """A new context: its thread opened with its first message in one write (the message as stored).
    A context the client names goes through `thread_for` instead: the thread is bound to it before anything
    is posted, so a thread that loses the race to bind is deleted before any actor saw a message in it."""
    body = _new_thread(rt, principal, agent, capabilities, first)
    # its refusals name the message's fields as a message posted into a thread does (`content[0]...`)
    _, _, (record,) = await threads.create_thread_with_messages(rt, principal, body, lambda _: "", once)
    return record


def _key(principal: Principal, agent: A2AAgentRecord, message_id: str) -> tuple[str, str]:
    return f"{SCOPE}{principal.actor}", hashlib.sha256(f"{agent.actor}\n{message_id}".encode()).hexdigest()


async def open_once(
    rt: Runtime,
    principal: Principal,
    agent: A2AAgentRecord,
    capabilities: Iterable[str],
    first: NewMessage,
    message_id: str,
) -> tuple[MessageRecord, bool]:
    """`open_with`, once per caller, agent and A2A `message_id`, and whether the message was sent before:
    then it is the message the first request posted. The key is kept in the thread's own write (no write of
    its own), with where the message is; a message whose thread was deleted since cannot be sent again (400
    naming `message.messageId`)."""
    scope, key = _key(principal, agent, message_id)

    def kept(thread: ThreadRecord, messages: list[MessageRecord]) -> IdempotencyRecord:
        now = time.time()
        where = orjson.dumps({"thread_id": thread.id, "message_id": messages[0].id}).decode()
        expires_at = now + rt.settings.idempotency_ttl_hours * 3600
        return IdempotencyRecord(scope, key, FINGERPRINT, uuid.uuid4().hex, now, expires_at, status=200, body=where)

    try:
        return await open_with(rt, principal, agent, capabilities, first, kept), False
    except KeyTaken:
        pass
    held = await rt.store.idempotency.get(scope, key)
    sent = None if held is None else await _sent(rt, principal, held)
    if sent is None:
        raise InvalidRequest(
            f"A message with messageId {message_id!r} was sent before and its task is gone (its context was"
            " deleted): send it with a new messageId.",
            param="message.messageId",
            code="message_id_reused",
        )
    return sent, True


async def _sent(rt: Runtime, principal: Principal, held: IdempotencyRecord) -> MessageRecord | None:
    """The message a kept key names, if it is still there."""
    try:
        where = orjson.loads(held.body or "")
        return await message_service.get_message(rt, principal, where["thread_id"], where["message_id"])
    except (orjson.JSONDecodeError, KeyError, TypeError, NotFound):
        return None
