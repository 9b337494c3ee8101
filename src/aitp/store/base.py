"""The store's interface: `Store`, whose rules for a thread's life are written here once, over the
transaction primitives each backend implements (`Tx`, transaction.py).

Every mutation writes its change and its event(s) atomically, assigning the thread's next event sequence
number. Nothing is written per member and event: an actor's inbox follows from its memberships (the seqs
of a thread's log from the event it joined by to the one it left by; a removed actor sees its removal,
every member sees the thread's deletion), written only when actors join and leave.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from aitp.store.a2a import A2AStore
from aitp.store.activity import ActivityStore
from aitp.store.capabilities import CapabilityStore
from aitp.store.codes import CodeStore
from aitp.store.idempotency import IdempotencyRecord, IdempotencyStore
from aitp.store.identities import IdentityStore
from aitp.store.keys import KeyStore
from aitp.store.presence import PresenceStore
from aitp.store.profiles import ProfileStore
from aitp.store.records import (
    ActorEventRenderer,
    ActorRecord,
    AuthorNotMember,
    CapabilityRef,
    CommitListener,
    DuplicateRef,
    EventRecord,
    KeyTaken,
    MembershipFollowUp,
    MessageEventRenderer,
    MessageRecord,
    NewEvent,
    Order,
    Page,
    RefRelease,
    ThreadEventRenderer,
    ThreadRecord,
    TooManyActors,
    TurnBudgetExhausted,
    TurnRule,
)
from aitp.store.search import MessageSearch
from aitp.store.steps import add_follow_up, append_counting_turns, append_message, budget_changed, insert_refs
from aitp.store.transaction import Body, Tx
from aitp.store.webhooks import WebhookStore

# The records are part of the interface: importers name them through this module.
__all__ = [
    "ActorEventRenderer",
    "ActorRecord",
    "AuthorNotMember",
    "CapabilityRef",
    "CommitListener",
    "DuplicateRef",
    "EventRecord",
    "MembershipFollowUp",
    "MessageEventRenderer",
    "MessageRecord",
    "NewEvent",
    "Order",
    "Page",
    "RefRelease",
    "Store",
    "ThreadEventRenderer",
    "ThreadRecord",
    "KeyTaken",
    "TooManyActors",
    "TurnBudgetExhausted",
    "TurnRule",
]


T = TypeVar("T")


class Store(abc.ABC):
    """Persistence for threads, actors, messages and the event log; API keys, idempotency records,
    registered capability versions, actor profiles, one-time codes, webhook endpoints with their deliveries and
    actor identities in the small stores `keys`, `idempotency`, `capabilities`, `profiles`, `codes`, `webhooks`,
    `a2a` (A2A settings of actors and the contexts A2A clients opened) and `identities`; what actors are doing
    in threads right now (`activity`, kept for a minute or two) and what says they can be reached (`presence`).

    The mutations of threads are rules written here, each as one transaction body over `Tx`; a backend
    provides `transaction` (how a body runs atomically), the `Tx` primitives and the reads.
    """

    # the small stores beside the threads, on the same connection (each backend sets them)
    keys: KeyStore
    idempotency: IdempotencyStore
    capabilities: CapabilityStore
    profiles: ProfileStore
    codes: CodeStore
    webhooks: WebhookStore
    a2a: A2AStore
    identities: IdentityStore
    activity: ActivityStore
    presence: PresenceStore
    search: MessageSearch  # full-text search of messages, its index written with them (search.py)

    def __init__(self) -> None:
        self._commit_listeners: list[CommitListener] = []

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Call `listener(thread_id, thread_changed)` after every committed write that appended events to that
        thread; `thread_changed` is False when only its messages changed (not its record or its actors)."""
        self._commit_listeners.append(listener)

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and create tables/indexes if missing. Idempotent."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def exists(self) -> bool:
        """Whether this store was created before (opening it would not create it); callable before `open`."""

    # transactions

    @abc.abstractmethod
    async def transaction(self, body: Body[T], *, shared: bool = False, large: bool = False) -> T:
        """Run `body` on a `Tx` in one transaction and commit it: all of its writes, or none if it raises.

        `shared`: the write may share its commit with others that arrive at the same moment (each still all
        or nothing). `large`: its size is unbounded (e.g. a whole thread's log), so it must not hold up
        the event loop."""

    async def _commit(
        self, thread_id: str, body: Body[T], *, thread_changed: bool = True, shared: bool = False, large: bool = False
    ) -> T:
        """A write to a thread, then the commit listeners told about it."""
        result = await self.transaction(body, shared=shared, large=large)
        for listener in self._commit_listeners:
            listener(thread_id, thread_changed)
        return result

    # threads

    async def create_thread(
        self,
        thread: ThreadRecord,
        actors: list[ActorRecord],
        created: NewEvent,
        messages: list[tuple[MessageRecord, NewEvent]],
        refs: Sequence[CapabilityRef] = (),
        once: IdempotencyRecord | None = None,
    ) -> list[EventRecord]:
        """Insert a thread, its actors, first messages and their capability refs; events get seq
        1, 2, ... in order. Raises DuplicateRef, writing nothing, on a repeated ref. With `once`, the thread is
        made once per its (scope, key), kept in the same write: KeyTaken, writing nothing, if a live record
        holds the key."""

        async def body(tx: Tx) -> list[EventRecord]:
            if once is not None and not await tx.keep_once(once):
                raise KeyTaken(once.scope, once.key)
            await tx.insert_thread(thread, actors)
            await insert_refs(tx, refs)
            events = [await tx.append_event(thread.id, created)]
            for member in actors:
                await tx.open_membership(thread.id, member.id, events[0].seq)
            for message, event in messages:
                events.append(await append_message(tx, message, event))
            thread.last_seq = events[-1].seq
            return events

        # bounded (limits on actors and first messages): it may share a commit with appends and other creations
        return await self._commit(thread.id, body, shared=True)

    async def update_thread(
        self,
        thread_id: str,
        changes: dict[str, Any],
        render: ThreadEventRenderer,
        turn_rule: TurnRule | None = None,
    ) -> tuple[ThreadRecord, EventRecord] | None:
        """Set `metadata`, `tool_resources`, `turn_budget` and/or `persons`; `render` builds the event from the
        state after the write. A changed budget pauses or resumes the thread (`turn_rule`'s event, before it)."""

        async def body(tx: Tx) -> tuple[ThreadRecord, EventRecord] | None:
            thread = await tx.update_thread(thread_id, changes)
            if thread is None:
                return None
            if turn_rule is not None and "turn_budget" in changes:
                await budget_changed(tx, thread, turn_rule)  # its event first: the update shows the outcome
            event = await tx.append_event(thread_id, render(thread, await tx.actors(thread_id)))
            thread.last_seq = event.seq
            return thread, event

        return await self._commit(thread_id, body)

    async def delete_thread(self, thread_id: str, event: NewEvent) -> EventRecord | None:
        """Delete a thread's messages, actors and earlier events, keeping one final event."""

        async def body(tx: Tx) -> EventRecord | None:
            if not await tx.thread_is_live(thread_id):
                return None
            members = [a.id for a in await tx.actors(thread_id)]
            await tx.clear_thread(thread_id)
            final = await tx.append_event(thread_id, event)
            await tx.close_memberships(thread_id, members, final.seq)  # the members see the deletion
            return final

        return await self._commit(thread_id, body, large=True)  # a thread's whole log

    # actors

    async def put_actor(
        self,
        actor: ActorRecord,
        render: ActorEventRenderer,
        follow_up: MembershipFollowUp | None = None,
        *,
        max_actors: int | None = None,
    ) -> tuple[ActorRecord, EventRecord] | None:
        """Add an actor, or replace its capabilities/client_id if already a member (joined_at kept).

        Returns the stored actor and its event; a follow-up event, if any, gets the next seq. With
        `max_actors`, a new actor that would make the thread's actors more than that raises TooManyActors,
        writing nothing: counted in the same transaction as the insert, so concurrent joins (through any
        process sharing the store) never exceed it. Updating a member is never refused."""

        async def body(tx: Tx) -> tuple[ActorRecord, EventRecord] | None:
            if not await tx.thread_is_live(actor.thread_id):
                return None
            before = await tx.actors(actor.thread_id)
            existing = next((a for a in before if a.id == actor.id), None)
            if existing is not None:
                await tx.update_actor(actor)
                stored = replace(actor, joined_at=existing.joined_at)
            elif await tx.take_seat(actor.thread_id, len(before), max_actors):
                await tx.insert_actor(actor)
                stored = actor
            else:
                raise TooManyActors(max_actors or 0, len(before) + 1)
            event = await tx.append_event(actor.thread_id, render(stored, existing is None))
            if existing is None:
                await tx.open_membership(actor.thread_id, actor.id, event.seq)
            await add_follow_up(tx, actor.thread_id, follow_up, before)
            return stored, event

        return await self._commit(actor.thread_id, body)

    async def remove_actor(
        self, thread_id: str, actor_id: str, event: NewEvent, follow_up: MembershipFollowUp | None = None
    ) -> EventRecord | None:
        """Remove a member; None if it was not one. A follow-up event, if any, gets the next seq."""

        async def body(tx: Tx) -> EventRecord | None:
            if not await tx.thread_is_live(thread_id):
                return None
            before = await tx.actors(thread_id)
            if not await tx.delete_actor(thread_id, actor_id):
                return None
            await tx.free_seat(thread_id, len(before) - 1)
            stored = await tx.append_event(thread_id, event)
            await tx.close_memberships(thread_id, (actor_id,), stored.seq)  # it sees that it left, not after
            await add_follow_up(tx, thread_id, follow_up, before)
            return stored

        return await self._commit(thread_id, body)

    # messages

    async def append_message(
        self,
        message: MessageRecord,
        event: NewEvent,
        refs: Sequence[CapabilityRef] = (),
        releases: Sequence[RefRelease] = (),
    ) -> EventRecord | None:
        """Store a message, its event and its capability refs under one new seq (also set on
        `message`), dropping the `releases` first; None if no thread. Raises DuplicateRef, writing nothing,
        if a ref exists or a release does not find its ref, and
        AuthorNotMember, writing nothing, if `message.actor` is not an actor of the thread (checked in the
        same transaction: the service may have validated the message against actors read earlier)."""
        appended = await self.append_messages(message.thread_id, [(message, event)], refs, releases)
        return None if appended is None else appended[0]

    async def append_messages(
        self,
        thread_id: str,
        messages: Sequence[tuple[MessageRecord, NewEvent]],
        refs: Sequence[CapabilityRef] = (),
        releases: Sequence[RefRelease] = (),
        turn_rule: TurnRule | None = None,
    ) -> list[EventRecord] | None:
        """Several messages of one thread, each with its event, in one write: all or none (see
        `append_message`). With a `turn_rule`, agents' messages (any role but `user`) count turns: the one
        that uses the thread's last turn pauses it (its event, then the rule's `paused` event), a person's
        resumes it, and an agent's on a paused thread raises TurnBudgetExhausted, writing nothing."""

        async def body(tx: Tx) -> list[EventRecord] | None:
            turns = await tx.turns(thread_id)
            if turns is None:
                return None
            for author in dict.fromkeys(message.actor for message, _ in messages):
                if not await tx.is_member(thread_id, author):
                    raise AuthorNotMember(author)
            for release in releases:
                if not await tx.release_ref(release):
                    raise DuplicateRef(release.kind, release.ref_id)
            await insert_refs(tx, refs)
            if turn_rule is None:
                return [await append_message(tx, message, event) for message, event in messages]
            return await append_counting_turns(tx, thread_id, messages, turn_rule, turns)

        # appends are the most frequent write: they may share a commit (SQLite's group commit)
        return await self._commit(thread_id, body, thread_changed=False, shared=True)

    async def update_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str], render: MessageEventRenderer
    ) -> tuple[MessageRecord, EventRecord] | None:
        async def body(tx: Tx) -> tuple[MessageRecord, EventRecord] | None:
            if not await tx.thread_is_live(thread_id):
                return None
            message = await tx.set_message_metadata(thread_id, message_id, metadata)
            if message is None:
                return None
            return message, await tx.append_event(thread_id, render(message))

        return await self._commit(thread_id, body, thread_changed=False)

    async def delete_message(self, thread_id: str, message_id: str, event: NewEvent) -> EventRecord | None:
        async def body(tx: Tx) -> EventRecord | None:
            if not await tx.thread_is_live(thread_id) or not await tx.delete_message(thread_id, message_id):
                return None
            # A deleted request can no longer be answered; a deleted answer frees its request.
            await tx.delete_refs_of(message_id)
            return await tx.append_event(thread_id, event)

        return await self._commit(thread_id, body, thread_changed=False)

    # events

    async def append_event(self, thread_id: str, event: NewEvent) -> EventRecord | None:
        """Log an event that comes with no stored change (e.g. a refused message); None if no thread."""

        async def body(tx: Tx) -> EventRecord | None:
            return await tx.append_event(thread_id, event) if await tx.thread_is_live(thread_id) else None

        return await self._commit(thread_id, body, thread_changed=False)

    # reads

    @abc.abstractmethod
    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    @abc.abstractmethod
    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        """The thread and its actors (in the order they joined), or None if no thread: what most requests
        read first, in one trip to the database where the backend can."""

    async def list_threads(
        self,
        actor_id: str | None,
        *,
        limit: int,
        order: Order,
        after: str | None = None,
        before: str | None = None,
    ) -> list[ThreadRecord]:
        """Threads ordered by id (ids sort by creation); `actor_id=None` lists every thread."""
        return await self._list_threads(actor_id, Page(limit, order, after, before))

    @abc.abstractmethod
    async def _list_threads(self, actor_id: str | None, page: Page[str]) -> list[ThreadRecord]: ...

    @abc.abstractmethod
    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        """A thread's actors in the order they joined."""

    @abc.abstractmethod
    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None: ...

    @abc.abstractmethod
    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None: ...

    @abc.abstractmethod
    async def message_seq(self, thread_id: str, message_id: str) -> int | None:
        """Where a message of the thread stands (its seq), deleted or not (a page cursor naming a message
        deleted since still reads on from there); None when the thread never had it."""

    async def list_messages(
        self,
        thread_id: str,
        *,
        limit: int,
        order: Order,
        after_seq: int | None = None,
        before_seq: int | None = None,
    ) -> list[MessageRecord]:
        return await self._list_messages(thread_id, Page(limit, order, after_seq, before_seq))

    @abc.abstractmethod
    async def _list_messages(self, thread_id: str, page: Page[int]) -> list[MessageRecord]: ...

    @abc.abstractmethod
    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        """The thread's events with seq > `after`, ascending."""

    # the store-wide event log

    @abc.abstractmethod
    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        """Events of every thread with gid > `after_gid`, in gid (commit) order."""

    @abc.abstractmethod
    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        """Events with gid > `after_gid`, in gid order, of the threads `actor_id` was a member of when they
        were written (its memberships)."""

    @abc.abstractmethod
    async def last_event_gid(self) -> int:
        """A cursor of the store-wide log now: every event written so far is at or before it, every event
        written from now on after it (the highest gid on SQLite; below the safe point on MongoDB)."""

    async def watch_threads(self, poll_interval: float) -> AsyncIterator[dict[str, bool]]:
        """Threads that got events, soon after they commit, written by any process sharing the store: each
        with whether one of its events may have changed its record or actors (`changes_thread`).

        This default polls the store-wide log (one indexed range read per `poll_interval` while idle);
        a backend with a push mechanism overrides it. Wake-ups only: readers still read by cursor.
        """
        gid = await self.last_event_gid()
        while True:
            gid, threads = await self.threads_written_since(gid, limit=1000)
            if threads:
                yield threads
            else:
                await asyncio.sleep(poll_interval)

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, dict[str, bool]]:
        """What `watch_threads` polls: the last gid of the (at most `limit`) events after `after_gid`, and
        their threads, each with whether its events may have changed it. This default reads whole events; a
        backend can read only the fields needed (under load the poll reads every event written, this
        process's own included)."""
        events = await self.events_since(after_gid, limit)
        return (events[-1].gid if events else after_gid), threads_of((e.thread_id, e.type) for e in events)


# Events that leave their thread's record and actors as they were; any other may change them.
MESSAGE_EVENTS = frozenset(
    {"thread.message.created", "thread.message.updated", "thread.message.deleted", "thread.message.refused"}
)


def changes_thread(event_type: str) -> bool:
    """Whether an event of this type may have changed its thread's record or actors."""
    return event_type not in MESSAGE_EVENTS


def threads_of(events: Iterable[tuple[str, str]]) -> dict[str, bool]:
    """(thread id, event type) pairs -> each thread, with whether one of its events may have changed it."""
    threads: dict[str, bool] = {}
    for thread_id, event_type in events:
        threads[thread_id] = threads.get(thread_id, False) or changes_thread(event_type)
    return threads
