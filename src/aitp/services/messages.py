"""Messages: author and role derivation, posting, paging by per-thread seq, metadata, deletion."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aitp.capabilities.correlate import Correlation, correlate
from aitp.capabilities.messages import CapabilityNotSupported, CapabilityPart, check_parts
from aitp.errors import InvalidRequest, PermissionDenied, message_not_found, param_path, thread_not_found
from aitp.events import payloads
from aitp.ids import new_id
from aitp.inputs import limits
from aitp.inputs.shapes import MAX_METADATA_VALUE, check_attachments, check_metadata, normalize_content
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services import addressing, turns
from aitp.services.access import ThreadView, acting_actor, readable_thread, role_of
from aitp.services.paging import cursor_page
from aitp.services.requests import NewMessage
from aitp.store.base import AuthorNotMember, DuplicateRef, MessageRecord, NewEvent, Order, TurnBudgetExhausted


def not_a_member(actor: str, param: str) -> InvalidRequest:
    return InvalidRequest(
        f"Actor '{actor}' is not a member of this thread; add it to the thread's actors first.",
        param=param,
        code="actor_not_member",
    )


def role_mismatch(actor: str, role: str, claimed: str, param: str) -> InvalidRequest:
    if claimed not in ("user", "assistant"):
        said = f"'{claimed}' is not a role an aitp author speaks as"
    else:
        said = f"'{actor}' speaks as '{role}' in this thread, not '{claimed}'"
    return InvalidRequest(
        f"Invalid 'role': {said} (the thread's creator and the actors it marks as persons speak as 'user', every"
        " other actor as 'assistant'; this server refuses a role that differs instead of replacing it).",
        param=param,
        code="role_mismatch",
    )


def _recipients(view: ThreadView, value: Any, param: str) -> str:
    """`metadata.to` as stored, every actor it names a member of the thread."""
    named = addressing.read_to(value, param)
    for i, actor in enumerate(named):
        if view.member(actor) is None:
            raise InvalidRequest(
                f"'{param}' names '{actor}', which is not a member of this thread.",
                param=f"{param}[{i}]",
                code="actor_not_member",
            )
    encoded = addressing.encode_to(named)
    if len(encoded) > MAX_METADATA_VALUE:
        raise InvalidRequest(f"'{param}' is too long as metadata.", param=param, code="string_too_long")
    return encoded


class _Fields(NamedTuple):
    """The `param` of each field of a message, for refusals."""

    actor: str
    content: str
    attachments: str
    metadata: str
    to: str


# Where a message's recipients were given, under the message's `param`: in its metadata (`metadata.to`), unless
# the face that took the message says otherwise (a conversation item's `to`), so refusals name what was sent.
TO_IN_METADATA = ("metadata", addressing.TO)


@functools.lru_cache(maxsize=256)
def _fields_of(param: str, to: tuple[str, ...] = TO_IN_METADATA) -> _Fields:
    """The fields' params under `param` (the same few prefixes every time: written once, not per message)."""
    return _Fields(
        param_path(param, ["metadata", "actor"]),
        param_path(param, ["content"]),
        param_path(param, ["attachments"]),
        param_path(param, ["metadata"]),
        param_path(param, to),
    )


def build_message(
    rt: Runtime,
    principal: Principal,
    view: ThreadView,
    body: NewMessage,
    created_at: int,
    param: str = "",
    to: tuple[str, ...] = TO_IN_METADATA,
) -> tuple[MessageRecord, list[tuple[CapabilityPart, str]]]:
    """A message record: author checked (no impersonation, must be a member), role derived,
    capability parts validated and summarised in `aitp`. `param` names the message in refusals, `to` where
    under it its recipients were given."""
    metadata = dict(body.metadata or {})
    where = _fields_of(param, to)
    actor = acting_actor(principal, metadata.pop("actor", None), where.actor)
    if view.member(actor) is None:
        raise not_a_member(actor, where.actor)
    # The role is derived from the author whatever the client sent: generic OpenAI-SDK tools always send
    # "user", and an agent of another owner must not be refused for it (the response shows the role kept);
    # a deployment may refuse a claim that differs instead (AITP_STRICT_ROLES).
    role = role_of(actor, view.thread)
    if body.role is not None and body.role != role and rt.settings.strict_roles:
        raise role_mismatch(actor, role, body.role, param_path(param, ["role"]))
    to = metadata.pop(addressing.TO, None)
    content = normalize_content(body.content, where.content)
    attachments = check_attachments(body.attachments, where.attachments)
    if to is not None:
        metadata[addressing.TO] = _recipients(view, to, where.to)
    metadata = check_metadata(metadata, where.metadata)
    aitp, parts = check_parts(
        rt.registry,
        content,
        sender=actor,
        declarations=view.declarations(rt.registry),
        accept_unknown=rt.settings.unknown_capabilities == "accept",
        max_depth=rt.settings.max_json_depth,
        where=where.content,
    )
    record = MessageRecord(
        id=new_id("msg"),
        thread_id=view.thread.id,
        created_at=created_at,
        actor=actor,
        role=role,
        content=content,
        attachments=attachments,
        metadata=metadata,
        aitp=aitp,
    )
    return record, parts


REPLY_TO = ("reply_to", "a2a_reply_to")  # metadata naming the message a reply answers (a client's, A2A's)


def replied_to(metadata: Mapping[str, Any] | None) -> str | None:
    """The message a message says it answers (`metadata.reply_to`, or `a2a_reply_to` as A2A deliveries write)."""
    return next((v for k in REPLY_TO if isinstance(v := (metadata or {}).get(k), str) and v), None)


def refusal_event(
    thread_id: str, refused: CapabilityNotSupported, created_at: int, metadata: dict[str, Any] | None = None
) -> NewEvent:
    """`thread.message.refused`: what the members need to know to let such a message through (no content),
    and the message it answered, when its metadata said (so an A2A task it was for can fail)."""
    replied = replied_to(metadata)
    refusal = {
        "thread_id": thread_id,
        "actor": refused.sender,
        "code": "capability_not_supported",
        "capability": refused.ref.id,
        "version": str(refused.ref.version),
        "type": refused.part.type,
        "param": refused.param or "",
        "unsupported_by": refused.unsupported_by,
        "reply_to": replied,
    }
    return NewEvent("thread.message.refused", refusal, created_at)


async def create_message(rt: Runtime, principal: Principal, thread_id: str, body: NewMessage) -> MessageRecord:
    limits.check_message(body.content, body.attachments, rt.settings)  # before any store call
    view = await readable_thread(rt, principal, thread_id, recent=True)  # the hot path: ~10% of a POST
    turns.count_agent_message(rt, view.thread, _author(principal, body))  # before validation's cost
    created_at = now()
    record, done = await _prepared(rt, principal, view, body, created_at)
    await _append(rt, principal, [record], done, created_at)
    return record


def _author(principal: Principal, body: NewMessage) -> str:
    """Who a message says it is by (checked when it is built): what an agent's rate counts."""
    named = (body.metadata or {}).get("actor")
    return named if isinstance(named, str) else principal.actor


async def create_messages(
    rt: Runtime,
    principal: Principal,
    thread_id: str,
    bodies: Sequence[NewMessage],
    param: str,
    to: tuple[str, ...] = TO_IN_METADATA,
) -> list[MessageRecord]:
    """Several messages in one write: all stored, in order, or none (`param` names the list in errors, `to`
    where under each message its recipients were given)."""
    for i, body in enumerate(bodies):
        limits.check_message(body.content, body.attachments, rt.settings, f"{param}[{i}]")
    view = await readable_thread(rt, principal, thread_id)
    for body in bodies:
        turns.count_agent_message(rt, view.thread, _author(principal, body))
    created_at = now()
    records, done = [], Correlation()
    for i, body in enumerate(bodies):
        record, correlation = await _prepared(rt, principal, view, body, created_at, f"{param}[{i}]", to)
        records.append(record)
        done.extend(correlation)
    await _append(rt, principal, records, done, created_at)
    return records


async def _prepared(
    rt: Runtime,
    principal: Principal,
    view: ThreadView,
    body: NewMessage,
    created_at: int,
    param: str = "",
    to: tuple[str, ...] = TO_IN_METADATA,
) -> tuple[MessageRecord, Correlation]:
    """The message built and checked, and what it answers or asks (a refusal recipients caused is logged)."""
    try:
        record, parts = build_message(rt, principal, view, body, created_at, param, to)
    except CapabilityNotSupported as refused:
        if refused.by_recipients:
            refusal = refusal_event(view.thread.id, refused, created_at, body.metadata)
            await rt.store.append_event(view.thread.id, refusal)
        raise
    if not parts:
        return record, Correlation()
    where = param_path(param, ["content"])
    return record, await correlate(rt.store, view.thread.id, record.id, record.actor, parts, where)


async def _append(
    rt: Runtime, principal: Principal, records: list[MessageRecord], done: Correlation, created_at: int
) -> None:
    thread_id = records[0].thread_id
    messages = [(r, NewEvent("thread.message.created", payloads.message_payload(r), created_at)) for r in records]
    try:
        stored = await rt.store.append_messages(thread_id, messages, done.refs, done.releases, turns.rule(rt))
    except DuplicateRef as exc:
        raise done.conflict(exc) from None
    except TurnBudgetExhausted as exc:
        raise turns.exhausted(thread_id, exc) from None
    except AuthorNotMember as exc:  # removed since the actors were read (here or by another process)
        if not principal.admin:
            raise thread_not_found(thread_id) from None  # what a non-member is told about a thread
        raise not_a_member(exc.actor, "metadata.actor") from None
    if stored is None:
        raise thread_not_found(thread_id)  # deleted meanwhile


async def _message_in(rt: Runtime, thread_id: str, message_id: str, param: str = "message_id") -> MessageRecord:
    record = await rt.store.get_message(thread_id, message_id)
    if record is None:
        raise message_not_found(message_id, param)
    return record


async def _cursor_seq(rt: Runtime, thread_id: str, message_id: str, param: str) -> int:
    # A bad cursor is a bad parameter (400), not a missing resource: the thread in the URL exists. A message
    # deleted since the page was read still marks where the next page starts.
    seq = await rt.store.message_seq(thread_id, message_id)
    if seq is None:
        raise InvalidRequest(
            f"Invalid '{param}': '{message_id}' is not a message of this thread.", param=param, code="invalid_cursor"
        )
    return seq


async def get_message(rt: Runtime, principal: Principal, thread_id: str, message_id: str) -> MessageRecord:
    await readable_thread(rt, principal, thread_id)
    return await _message_in(rt, thread_id, message_id)


async def list_messages(
    rt: Runtime,
    principal: Principal,
    thread_id: str,
    *,
    limit: int,
    order: Order,
    after: str | None,
    before: str | None,
) -> tuple[list[MessageRecord], bool]:
    """A page ordered by the per-thread seq, and whether there is more; `after`/`before` are message ids of
    this thread."""
    await readable_thread(rt, principal, thread_id)
    after_seq = None if after is None else await _cursor_seq(rt, thread_id, after, "after")
    before_seq = None if before is None else await _cursor_seq(rt, thread_id, before, "before")

    async def fetch(direction: Order, lo: int | None, hi: int | None, n: int) -> list[MessageRecord]:
        return await rt.store.list_messages(thread_id, limit=n, order=direction, after_seq=lo, before_seq=hi)

    return await cursor_page(fetch, limit=limit, order=order, after=after_seq, before=before_seq)


def _check_author(principal: Principal, record: MessageRecord, action: str) -> None:
    if not principal.admin and record.actor != principal.actor:
        raise PermissionDenied(f"Only the message's author or an admin may {action} it.", param="message_id")


def _message_updated(record: MessageRecord) -> NewEvent:
    return NewEvent("thread.message.updated", payloads.message_payload(record), now())


async def modify_message(
    rt: Runtime, principal: Principal, thread_id: str, message_id: str, metadata: dict[str, Any] | None
) -> MessageRecord:
    """Replace a message's metadata (its author or an admin); `None` changes nothing."""
    await readable_thread(rt, principal, thread_id)
    record = await _message_in(rt, thread_id, message_id)
    if metadata is None:
        return record
    _check_author(principal, record, "modify")
    metadata = dict(metadata)
    if metadata.pop("actor", record.actor) != record.actor:
        raise InvalidRequest("A message's author cannot be changed.", param="metadata.actor")
    result = await rt.store.update_message_metadata(thread_id, message_id, check_metadata(metadata), _message_updated)
    if result is None:
        raise message_not_found(message_id)
    return result[0]


async def delete_message(rt: Runtime, principal: Principal, thread_id: str, message_id: str) -> None:
    await readable_thread(rt, principal, thread_id)
    record = await _message_in(rt, thread_id, message_id)
    _check_author(principal, record, "delete")
    deleted = NewEvent("thread.message.deleted", payloads.removed_payload(message_id), now())
    if await rt.store.delete_message(thread_id, message_id, deleted) is None:
        raise message_not_found(message_id)
