"""Threads: create (actors given apart or, as AITP-T01 sends them, in metadata), read, modify metadata, delete,
list mine."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from aitp.capabilities.correlate import Correlation, correlate
from aitp.capabilities.declarations import normalize_declaration
from aitp.errors import (
    InvalidRequest,
    NotFound,
    PermissionDenied,
    most_specific_error,
    param_of,
    param_path,
    thread_not_found,
)
from aitp.events import payloads
from aitp.ids import new_id
from aitp.inputs import limits
from aitp.inputs.shapes import check_metadata
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services import identities, turns
from aitp.services import messages as message_service
from aitp.services.access import ThreadView, readable_thread, thread_views
from aitp.services.paging import cursor_page
from aitp.services.requests import ActorDeclaration, NewMessage, NewThread, ThreadChanges
from aitp.store.base import ActorRecord, DuplicateRef, MessageRecord, NewEvent, Order, ThreadRecord
from aitp.store.idempotency import IdempotencyRecord

# Keys of a thread's metadata that the server owns (AITP-T01 carries them in metadata).
RESERVED_METADATA = ("actors", "parent_id")

_actor_list = TypeAdapter(list[ActorDeclaration])

# A thread's metadata as a face shows it (the user's keys and the reserved ones): what a client may send back.
ShownMetadata = Callable[[ThreadRecord, list[ActorRecord]], Mapping[str, str]]
# the record a thread made once per key keeps (its key, and what a repeat needs to find the thread)
Once = Callable[[ThreadRecord, list[MessageRecord]], IdempotencyRecord]
Thread = tuple[ThreadRecord, list[ActorRecord]]  # a thread and its actors: what the thread functions return


def actor_records(thread_id: str, inputs: Sequence[ActorDeclaration], joined_at: int, param: str) -> list[ActorRecord]:
    """Validated, normalised actor records; duplicate ids are refused."""
    seen: set[str] = set()
    records = []
    for i, actor in enumerate(inputs):
        if actor.id in seen:
            raise InvalidRequest(
                f"Actor '{actor.id}' is listed twice.", param=f"{param}[{i}].id", code="duplicate_actor"
            )
        seen.add(actor.id)
        capabilities = [
            normalize_declaration(c, f"{param}[{i}].capabilities[{j}]") for j, c in enumerate(actor.capabilities)
        ]
        records.append(
            ActorRecord(
                thread_id=thread_id,
                id=actor.id,
                client_id=actor.client_id,
                capabilities=capabilities,
                joined_at=joined_at,
            )
        )
    return records


def _actors_from_metadata(value: Any) -> list[ActorDeclaration]:
    """`metadata.actors` as an array, or as the JSON-encoded string AITP-T01 clients send."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise InvalidRequest("`metadata.actors` is a string but not valid JSON.", param="metadata.actors") from None
    try:
        return _actor_list.validate_python(value)
    except ValidationError as exc:
        error = most_specific_error(list(exc.errors()))
        param = param_of(("metadata", "actors", *error["loc"]))
        raise InvalidRequest(f"Invalid actor: {error['msg']}.", param=param) from None


def _split_metadata(metadata: dict[str, Any]) -> tuple[dict[str, str], Any, Any]:
    """(user metadata, metadata.actors or None, metadata.parent_id or None)."""
    user = {k: v for k, v in metadata.items() if k not in RESERVED_METADATA}
    return check_metadata(user), metadata.get("actors"), metadata.get("parent_id")


def _in_messages(i: int) -> str:
    return f"messages[{i}]"


def _check_limits(rt: Runtime, body: NewThread, message_param: Callable[[int], str]) -> None:
    """Counts, lengths and nesting of everything sent, before any other work."""
    messages = body.messages or []
    limits.check_count(messages, rt.settings.max_thread_messages, "messages", "initial messages", "too_many_messages")
    for i, item in enumerate(messages):
        param = message_param(i)
        if isinstance(item, str):
            limits.check_content(item, rt.settings, param)  # an AITP-T01 message: one text part
        else:
            limits.check_message(item.content, item.attachments, rt.settings, param)
    if body.tool_resources is not None:
        limits.check_depth(body.tool_resources, rt.settings.max_json_depth, "tool_resources")


def _check_actor_limits(
    rt: Runtime, principal: Principal, inputs: Sequence[ActorDeclaration], param: str
) -> Sequence[ActorDeclaration]:
    """At most `max_actors` actors (the creator included), each with at most `max_capabilities`."""
    creator_listed = any(actor.id == principal.actor for actor in inputs)
    limits.check_actor_count(len(inputs) + (0 if creator_listed else 1), rt.settings, param)
    for i, actor in enumerate(inputs):
        limits.check_capabilities(actor.capabilities, rt.settings, f"{param}[{i}].capabilities")
    return inputs


async def create_thread(rt: Runtime, principal: Principal, body: NewThread) -> Thread:
    """Create a thread with its actors (the caller among them) and its first messages, in one write."""
    thread, actors, _ = await create_thread_with_messages(rt, principal, body)
    return thread, actors


async def create_thread_with_messages(
    rt: Runtime,
    principal: Principal,
    body: NewThread,
    message_param: Callable[[int], str] = _in_messages,
    once: Once | None = None,
    to: tuple[str, ...] = message_service.TO_IN_METADATA,
) -> tuple[ThreadRecord, list[ActorRecord], list[MessageRecord]]:
    """As `create_thread`, with the first messages as stored (their seqs set). `message_param(i)` names the
    i-th message in refusals (`messages[i]`; a face that posts one message as the thread opens names it as
    its message posts name it), `to` where under it its recipients were given. With `once`, the record it
    makes of the thread and its messages is kept in the same write, and the thread is made once per the
    record's key (KeyTaken when it was before)."""
    _check_limits(rt, body, message_param)
    created_at = now()
    thread_id = new_id("thread")
    user_metadata, meta_actors, meta_parent = _split_metadata(body.metadata or {})

    if body.actors is not None and meta_actors is not None:
        raise InvalidRequest("Give actors either as `actors` or as `metadata.actors`, not both.", param="actors")
    named, actors_param = (body.actors, "actors") if body.actors is not None else (None, "metadata.actors")
    if named is None and meta_actors is not None:
        named = _actors_from_metadata(meta_actors)
    actors = []
    if named is not None:
        inputs = _check_actor_limits(rt, principal, named, actors_param)
        actors = actor_records(thread_id, inputs, created_at, actors_param)
    identities.count_new_thread(rt, principal)
    await identities.check_contacts(
        rt, principal, [identities.Named(a.id, f"{actors_param}[{i}].id") for i, a in enumerate(actors)]
    )
    if all(a.id != principal.actor for a in actors):
        actors.insert(0, ActorRecord(thread_id=thread_id, id=principal.actor, joined_at=created_at))

    parent_id, parent_param = body.parent_id, "parent_id"
    if meta_parent is not None and parent_id is None:
        parent_param = "metadata.parent_id"
    if meta_parent is not None:
        if not isinstance(meta_parent, str) or (parent_id is not None and parent_id != meta_parent):
            raise InvalidRequest(
                "`metadata.parent_id` must be a string equal to `parent_id` when both are given.",
                param="metadata.parent_id",
            )
        parent_id = meta_parent
    if parent_id is not None:
        try:
            await readable_thread(rt, principal, parent_id)
        except NotFound:
            raise NotFound(
                f"No parent thread found with id '{parent_id}'.", param=parent_param, code="parent_thread_not_found"
            ) from None

    thread = ThreadRecord(
        id=thread_id,
        created_at=created_at,
        creator=principal.actor,
        metadata=user_metadata,
        parent_id=parent_id,
        tool_resources=body.tool_resources,
    )
    view = ThreadView(thread, actors)
    messages: list[tuple[MessageRecord, NewEvent]] = []
    done = Correlation()
    for i, item in enumerate(body.messages or []):
        request = NewMessage(content=[item]) if isinstance(item, str) else item
        param = message_param(i)
        record, parts = message_service.build_message(rt, principal, view, request, created_at, param, to)
        if parts:
            where = param_path(param, ["content"])
            done.extend(await correlate(rt.store, thread_id, record.id, record.actor, parts, where))
        messages.append((record, NewEvent("thread.message.created", payloads.message_payload(record), created_at)))

    created = NewEvent("thread.created", payloads.thread_payload(thread, actors), created_at)
    try:
        kept = None if once is None else once(thread, [record for record, _ in messages])
        await rt.store.create_thread(thread, actors, created, messages, done.refs, kept)
    except DuplicateRef as exc:
        raise done.conflict(exc) from None
    # the thread as just written: the next posts into it (its members' first answers) need not read it
    rt.state(thread_views).put(thread_id, view)
    return thread, actors, [record for record, _ in messages]


async def get_thread(rt: Runtime, principal: Principal, thread_id: str) -> Thread:
    view = await readable_thread(rt, principal, thread_id)
    return view.thread, view.actors


def _thread_updated(thread: ThreadRecord, actors: list[ActorRecord]) -> NewEvent:
    return NewEvent("thread.updated", payloads.thread_payload(thread, actors), now())


async def modify_thread(
    rt: Runtime, principal: Principal, thread_id: str, body: ThreadChanges, shown: ShownMetadata
) -> Thread:
    """Replace metadata and/or tool_resources. An empty body changes nothing (AITP-T01 retrieve). `shown`: the
    metadata as the caller's face shows it, whose reserved keys may be sent back as they are."""
    view = await readable_thread(rt, principal, thread_id)
    changes: dict[str, Any] = {}
    if body.metadata is not None:
        current = shown(view.thread, view.actors)
        for key in RESERVED_METADATA:
            # Round-tripping a retrieved thread's metadata is fine; changing these keys here is not.
            if key in body.metadata and body.metadata[key] != current.get(key):
                raise InvalidRequest(
                    f"`metadata.{key}` is managed by the server: a thread's actors change as its actors are added"
                    " and removed, and its parent_id is set when it is created.",
                    param=f"metadata.{key}",
                )
        changes["metadata"] = _split_metadata(body.metadata)[0]
    if "tool_resources" in body.model_fields_set:
        if body.tool_resources is not None:
            limits.check_depth(body.tool_resources, rt.settings.max_json_depth, "tool_resources")
        changes["tool_resources"] = body.tool_resources
    if body.turns is not None:
        changes.update(turns.turn_changes(principal, view.thread, body.turns, rt.settings.max_actors))
    if not changes:
        return view.thread, view.actors
    result = await rt.store.update_thread(thread_id, changes, _thread_updated, turns.rule(rt))
    if result is None:
        raise thread_not_found(thread_id)
    return payloads.thread_of(result[1].data)  # the actors as they were in the write


async def delete_thread(rt: Runtime, principal: Principal, thread_id: str) -> None:
    view = await readable_thread(rt, principal, thread_id)
    if not principal.admin and view.thread.creator != principal.actor:
        raise PermissionDenied("Only the thread's creator or an admin may delete it.", param="thread_id")
    await rt.store.delete_thread(thread_id, NewEvent("thread.deleted", payloads.removed_payload(thread_id), now()))


async def list_threads(
    rt: Runtime, principal: Principal, *, limit: int, order: Order, after: str | None, before: str | None
) -> tuple[list[Thread], bool]:
    """The caller's threads (every thread for an admin), paged by thread id, and whether there is more."""
    actor = None if principal.admin else principal.actor

    async def fetch(direction: Order, lo: str | None, hi: str | None, n: int) -> list[ThreadRecord]:
        return await rt.store.list_threads(actor, limit=n, order=direction, after=lo, before=hi)

    records, has_more = await cursor_page(fetch, limit=limit, order=order, after=after, before=before)
    return [(t, await rt.store.list_actors(t.id)) for t in records], has_more
