"""The transaction interface: the primitive reads and writes a backend offers inside one transaction.

`Store` (base.py) writes each rule of a thread's life once, as a body over a `Tx` (is the thread live,
is the author a member, which seat, which refs, which events); each backend runs bodies atomically in
its own way (`Store.transaction`) and implements these primitives on its driver. A body may run more than
once (MongoDB retries a write conflict), so it changes nothing outside the store but what it returns and
what it sets on its own records; and it awaits nothing but its `Tx` (SQLite runs it to its end in one go).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from aitp.store.idempotency import IdempotencyRecord
from aitp.store.records import (
    ActorRecord,
    CapabilityRef,
    EventRecord,
    MessageRecord,
    NewEvent,
    RefRelease,
    ThreadRecord,
)

T = TypeVar("T")


class Tx(abc.ABC):
    """One transaction's view of the thread data: every read sees this transaction's own writes."""

    # threads

    @abc.abstractmethod
    async def insert_thread(self, thread: ThreadRecord, actors: Sequence[ActorRecord]) -> None:
        """A new thread (no event yet: its seq is 0) with its first actors, joined in the given order."""

    @abc.abstractmethod
    async def thread_is_live(self, thread_id: str) -> bool:
        """Whether the thread exists and is not deleted."""

    @abc.abstractmethod
    async def update_thread(self, thread_id: str, changes: dict[str, Any]) -> ThreadRecord | None:
        """Set the `metadata`, `tool_resources`, `turn_budget` and/or `persons` in `changes`; the live thread
        after it, or None."""

    @abc.abstractmethod
    async def turns(self, thread_id: str) -> tuple[int | None, int, bool] | None:
        """(its own turn budget, agents' messages in a row, paused) of a live thread; None if there is none."""

    @abc.abstractmethod
    async def set_turns(self, thread_id: str, agent_turns: int, paused: bool) -> None: ...

    @abc.abstractmethod
    async def clear_thread(self, thread_id: str) -> None:
        """Delete a thread's messages, actors, events and refs, keeping the thread as a tombstone: its seq
        carries on (the final event has a home, and a later reader never sees a seq again)."""

    # actors

    @abc.abstractmethod
    async def actors(self, thread_id: str) -> list[ActorRecord]:
        """The thread's actors in the order they joined."""

    @abc.abstractmethod
    async def is_member(self, thread_id: str, actor_id: str) -> bool: ...

    @abc.abstractmethod
    async def take_seat(self, thread_id: str, members: int, limit: int | None) -> bool:
        """Count one more actor on a thread that has `members`; False, counting nothing, when that would be
        more than `limit`. Atomic against concurrent joins, of this process or another."""

    @abc.abstractmethod
    async def free_seat(self, thread_id: str, members: int) -> None:
        """The thread has `members` actors now that one left."""

    @abc.abstractmethod
    async def insert_actor(self, actor: ActorRecord) -> None:
        """A new member, last in join order."""

    @abc.abstractmethod
    async def update_actor(self, actor: ActorRecord) -> None:
        """Replace a member's `client_id` and `capabilities`."""

    @abc.abstractmethod
    async def delete_actor(self, thread_id: str, actor_id: str) -> bool:
        """Remove a member; False if it was not one."""

    # messages

    @abc.abstractmethod
    async def insert_message(self, message: MessageRecord) -> None: ...

    @abc.abstractmethod
    async def set_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str]
    ) -> MessageRecord | None:
        """The message after the change, or None if the thread has no such message."""

    @abc.abstractmethod
    async def delete_message(self, thread_id: str, message_id: str) -> bool: ...

    # capability refs

    @abc.abstractmethod
    async def insert_ref(self, ref: CapabilityRef) -> bool:
        """False, writing nothing, if (thread, kind, ref_id) is taken."""

    @abc.abstractmethod
    async def release_ref(self, release: RefRelease) -> bool:
        """Delete the ref if the message named wrote it; False if it is gone or another message's."""

    @abc.abstractmethod
    async def delete_refs_of(self, message_id: str) -> None:
        """Delete the refs a message wrote."""

    # records made once per key, in the write they belong to

    @abc.abstractmethod
    async def keep_once(self, record: IdempotencyRecord) -> bool:
        """Keep a done idempotency record under its (scope, key) in this transaction: False, writing nothing,
        if a live record holds the key (one expired at `record.created_at` is replaced)."""

    # events

    @abc.abstractmethod
    async def append_event(self, thread_id: str, event: NewEvent) -> EventRecord:
        """Log an event under the thread's next seq and the store's next gid. Nothing is written per member:
        who sees it in an inbox follows from the memberships (`open_membership`, `close_memberships`)."""

    # memberships: the seqs of a thread's log each actor sees in its inbox, written when it joins or leaves

    @abc.abstractmethod
    async def open_membership(self, thread_id: str, actor_id: str, from_seq: int) -> None:
        """The actor sees the thread's events from `from_seq` on (its joining event)."""

    @abc.abstractmethod
    async def close_memberships(self, thread_id: str, actor_ids: Sequence[str], to_seq: int) -> None:
        """The actors' open memberships end at `to_seq` (the event saying they left, or the thread's deletion)."""


# A transaction body: a rule's reads and writes, run by `Store.transaction`.
Body = Callable[[Tx], Coroutine[Any, Any, T]]
