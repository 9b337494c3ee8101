"""The store interface both backends implement, and the records that cross it.

Records are plain dataclasses: no backend idea (ObjectId, SQL rows) leaks past `store/`, and no
wire shape (OpenAI objects) leaks in. Every mutation writes its change and its event(s) atomically,
assigning the thread's next event sequence number.
"""

from __future__ import annotations

import abc
import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Order = Literal["asc", "desc"]


@dataclass
class ThreadRecord:
    id: str
    created_at: int
    creator: str
    metadata: dict[str, str] = field(default_factory=dict)
    parent_id: str | None = None
    tool_resources: dict[str, Any] | None = None
    last_seq: int = 0


@dataclass
class ActorRecord:
    thread_id: str
    id: str
    capabilities: list[dict[str, Any]] = field(default_factory=list)
    client_id: str | None = None
    joined_at: int = 0


@dataclass
class MessageRecord:
    id: str
    thread_id: str
    created_at: int
    actor: str
    role: str
    content: list[dict[str, Any]]
    attachments: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    aitp: list[dict[str, Any] | None] | None = None  # per content part; None for plain parts
    seq: int = 0  # assigned by the store: the seq of the message's creation event


@dataclass
class CapabilityRef:
    """A request (`request_decision`, `request_data`, `quote`) or an answer to one, indexed by request id.

    (thread_id, kind, ref_id) is unique: a request id is used once per thread, and an answer kind
    (`decision`, `data`, a quote's `payment`) holds one answer per request, which makes "answered at most
    once" atomic. A lifecycle that moves on (a failed payment freeing its quote) releases the answer it
    replaces in the same append (`RefRelease`).
    """

    thread_id: str
    kind: str
    ref_id: str
    message_id: str
    actor: str
    body: dict[str, Any]


@dataclass(frozen=True)
class RefRelease:
    """Drop the ref (thread_id, kind, ref_id) that message `message_id` wrote, in the append that moves its
    request on; if that ref is gone or another message's, the append raises DuplicateRef (someone moved
    the request first) and writes nothing."""

    thread_id: str
    kind: str
    ref_id: str
    message_id: str


class DuplicateRef(Exception):
    """An append would store a second ref with the same (thread, kind, ref_id), or release one that another
    append has replaced or released meanwhile."""

    def __init__(self, kind: str, ref_id: str) -> None:
        super().__init__(f"{kind} {ref_id!r} exists")
        self.kind = kind
        self.ref_id = ref_id


class AuthorNotMember(Exception):
    """An append whose author is not (or no longer) an actor of the thread."""

    def __init__(self, actor: str) -> None:
        super().__init__(f"{actor!r} is not an actor of the thread")
        self.actor = actor


class TooManyActors(Exception):
    """A join would give the thread more than `limit` actors (the store counts them in the join's transaction)."""

    def __init__(self, limit: int, count: int) -> None:
        super().__init__(f"a thread may have at most {limit} actors; this join would make {count}")
        self.limit = limit
        self.count = count


@dataclass
class NewEvent:
    """An event to append; the store gives it the thread's next seq."""

    type: str
    data: dict[str, Any]
    created_at: int


@dataclass
class EventRecord:
    thread_id: str
    seq: int
    type: str
    created_at: int
    data: dict[str, Any]
    # Position in the store-wide event log: assigned in commit order, so "every event after gid N" is a
    # gap-free cursor across threads (the actor inbox stream resumes from it).
    gid: int = field(default=0, compare=False)


@dataclass
class KeyRecord:
    id: str
    hash: str
    actor: str
    admin: bool
    created_at: int
    prefix: str
    scopes: list[str] = field(default_factory=list)


@dataclass
class CapabilityVersionRecord:
    """A capability version registered through the API (shipped ones live in files, not here).

    (id, version) is unique and immutable: the first registration wins.
    """

    id: str
    version: str  # X.Y.Z
    schema: dict[str, Any]  # as submitted (JSON Schema or OpenAPI document)
    examples: list[dict[str, Any]]
    aliases: list[str]  # extra $schema URLs that mean this version
    title: str | None
    description: str | None
    openapi_root: str | None
    created_at: int
    created_by: str


def capability_version_document(record: CapabilityVersionRecord) -> str:
    """The stored JSON text of a registered version (both backends keep it as one string)."""
    fields = ("id", "version", "schema", "examples", "aliases", "title", "description", "openapi_root")
    return json.dumps({name: getattr(record, name) for name in fields}, sort_keys=True, ensure_ascii=False)


def capability_version_from_document(document: str, created_at: int, created_by: str) -> CapabilityVersionRecord:
    return CapabilityVersionRecord(**json.loads(document), created_at=created_at, created_by=created_by)


@dataclass
class IdempotencyRecord:
    """What a POST sent with an `Idempotency-Key` did, kept so a retry gets the same answer.

    (scope, key) is unique: scope is the caller (its key id), so callers never share keys. `status`
    and `body` are None while the first request runs (a reservation); `token` names that reservation,
    so only its owner completes or releases it, even after another request took an abandoned one over.
    Times are Unix seconds.
    """

    scope: str
    key: str
    fingerprint: str  # method, path and SHA-256 of the body: a reuse with another request is refused
    token: str
    created_at: float
    expires_at: float
    status: int | None = None
    body: str | None = None  # the response body (JSON text)

    @property
    def pending(self) -> bool:
        return self.status is None

    def reclaimable(self, now: float, pending_timeout: float) -> bool:
        """Expired, or a reservation whose request crashed without releasing it."""
        return self.expires_at <= now or (self.pending and self.created_at <= now - pending_timeout)


ThreadEventRenderer = Callable[[ThreadRecord, list[ActorRecord]], NewEvent]
ActorEventRenderer = Callable[[ActorRecord, bool], NewEvent]  # (actor, newly joined)
MessageEventRenderer = Callable[[MessageRecord], NewEvent]
# Called with the thread's actors before and after a membership change; may add one more event
# (e.g. the capability negotiation changed) to the same atomic write.
MembershipFollowUp = Callable[[list[ActorRecord], list[ActorRecord]], NewEvent | None]


# called after a write to a thread committed: (thread id, whether the thread's record or actors changed,
# not only its messages)
CommitListener = Callable[[str, bool], None]


class Store(abc.ABC):
    """Persistence for threads, actors, messages, the per-thread event log and API keys.

    Every event also gets an audience: the thread's members after the change, plus an actor the change
    removed (so it hears of its removal) and, for a deletion, everyone who was a member.
    """

    # Claims also delete expired idempotency records, at most once per this many seconds per store.
    IDEMPOTENCY_PURGE_INTERVAL = 3600.0

    def __init__(self) -> None:
        self._commit_listeners: list[CommitListener] = []
        self._idempotency_purge_due = float("-inf")

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Call `listener(thread_id, thread_changed)` after every committed write that appended events to that
        thread; `thread_changed` is False when only its messages changed (not its record or its actors)."""
        self._commit_listeners.append(listener)

    def _committed(self, thread_id: str, thread_changed: bool = True) -> None:
        for listener in self._commit_listeners:
            listener(thread_id, thread_changed)

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and create tables/indexes if missing. Idempotent."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def exists(self) -> bool:
        """Whether this store was created before (opening it would not create it); callable before `open`."""

    # threads
    @abc.abstractmethod
    async def create_thread(
        self,
        thread: ThreadRecord,
        actors: list[ActorRecord],
        created: NewEvent,
        messages: list[tuple[MessageRecord, NewEvent]],
        refs: Sequence[CapabilityRef] = (),
    ) -> list[EventRecord]:
        """Insert a thread, its actors, first messages and their capability refs; events get seq
        1, 2, ... in order. Raises DuplicateRef, writing nothing, on a repeated ref."""

    @abc.abstractmethod
    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    @abc.abstractmethod
    async def update_thread(
        self, thread_id: str, changes: dict[str, Any], render: ThreadEventRenderer
    ) -> tuple[ThreadRecord, EventRecord] | None:
        """Set `metadata` and/or `tool_resources`; `render` builds the event from the state after the write."""

    @abc.abstractmethod
    async def delete_thread(self, thread_id: str, event: NewEvent) -> EventRecord | None:
        """Delete a thread's messages, actors and earlier events, keeping one final event."""

    @abc.abstractmethod
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

    # actors
    @abc.abstractmethod
    async def list_actors(self, thread_id: str) -> list[ActorRecord]:
        """A thread's actors in the order they joined."""

    async def get_thread_with_actors(self, thread_id: str) -> tuple[ThreadRecord, list[ActorRecord]] | None:
        """The thread and its actors (in the order they joined), or None if no thread: what most requests
        read first. A backend overrides this to read both in one trip to the database."""
        thread = await self.get_thread(thread_id)
        return None if thread is None else (thread, await self.list_actors(thread_id))

    @abc.abstractmethod
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

    @abc.abstractmethod
    async def remove_actor(
        self, thread_id: str, actor_id: str, event: NewEvent, follow_up: MembershipFollowUp | None = None
    ) -> EventRecord | None:
        """Remove a member; None if it was not one. A follow-up event, if any, gets the next seq."""

    # messages
    @abc.abstractmethod
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

    @abc.abstractmethod
    async def get_ref(self, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None: ...

    @abc.abstractmethod
    async def get_message(self, thread_id: str, message_id: str) -> MessageRecord | None: ...

    @abc.abstractmethod
    async def list_messages(
        self,
        thread_id: str,
        *,
        limit: int,
        order: Order,
        after_seq: int | None = None,
        before_seq: int | None = None,
    ) -> list[MessageRecord]: ...

    @abc.abstractmethod
    async def update_message_metadata(
        self, thread_id: str, message_id: str, metadata: dict[str, str], render: MessageEventRenderer
    ) -> tuple[MessageRecord, EventRecord] | None: ...

    @abc.abstractmethod
    async def delete_message(self, thread_id: str, message_id: str, event: NewEvent) -> EventRecord | None: ...

    # events
    @abc.abstractmethod
    async def append_event(self, thread_id: str, event: NewEvent) -> EventRecord | None:
        """Log an event that comes with no stored change (e.g. a refused message); None if no thread."""

    @abc.abstractmethod
    async def list_events(self, thread_id: str, *, after: int, limit: int) -> list[EventRecord]:
        """The thread's events with seq > `after`, ascending."""

    # keys
    @abc.abstractmethod
    async def create_key(self, key: KeyRecord) -> None: ...

    @abc.abstractmethod
    async def find_key(self, key_hash: str) -> KeyRecord | None: ...

    @abc.abstractmethod
    async def list_keys(self) -> list[KeyRecord]: ...

    @abc.abstractmethod
    async def delete_key(self, key_id: str) -> bool: ...

    @abc.abstractmethod
    async def existing_key_ids(self, key_ids: Sequence[str]) -> set[str]:
        """Which of `key_ids` are keys in the store (the others were revoked): one read."""

    @abc.abstractmethod
    async def has_admin_key(self) -> bool: ...

    # the store-wide event log

    @abc.abstractmethod
    async def events_since(self, after_gid: int, limit: int) -> list[EventRecord]:
        """Events of every thread with gid > `after_gid`, in gid (commit) order."""

    @abc.abstractmethod
    async def list_inbox_events(self, actor_id: str, after_gid: int, limit: int) -> list[EventRecord]:
        """Events whose audience includes `actor_id`, with gid > `after_gid`, in gid order."""

    @abc.abstractmethod
    async def last_event_gid(self) -> int:
        """The highest gid written so far (0 when there is none)."""

    async def watch_threads(self, poll_interval: float) -> AsyncIterator[set[str]]:
        """Ids of threads that got events, soon after they commit, written by any process sharing the store.

        This default polls the store-wide log (one indexed range read per `poll_interval` while idle);
        a backend with a push mechanism overrides it. Wake-ups only: readers still read by cursor.
        """
        gid = await self.last_event_gid()
        while True:
            gid, thread_ids = await self.threads_written_since(gid, limit=1000)
            if thread_ids:
                yield thread_ids
            else:
                await asyncio.sleep(poll_interval)

    async def threads_written_since(self, after_gid: int, limit: int) -> tuple[int, set[str]]:
        """What `watch_threads` polls: the last gid of the (at most `limit`) events after `after_gid`, and
        their threads. This default reads whole events; a backend can read only those two fields (under
        load the poll reads every event written, this process's own included)."""
        events = await self.events_since(after_gid, limit)
        return (events[-1].gid if events else after_gid), {e.thread_id for e in events}

    # capability registry

    @abc.abstractmethod
    async def register_capability_version(self, record: CapabilityVersionRecord) -> CapabilityVersionRecord:
        """Store `record` unless (id, version) exists; returns the stored one (compare to see who won)."""

    @abc.abstractmethod
    async def list_capability_versions(self) -> list[CapabilityVersionRecord]:
        """Every registered version, oldest registration first."""

    # idempotency records

    @abc.abstractmethod
    async def claim_idempotency_key(
        self, claim: IdempotencyRecord, *, pending_timeout: float
    ) -> IdempotencyRecord | None:
        """Reserve (claim.scope, claim.key) for a request (`claim` pending, `claim.created_at` is now).

        Returns None when the reservation is the caller's, else the record holding the key. Atomic: of
        concurrent claims of one key exactly one gets None. A held record that is expired, or still
        pending `pending_timeout` seconds after its creation, is replaced by `claim`."""

    @abc.abstractmethod
    async def complete_idempotency_key(self, scope: str, key: str, token: str, status: int, body: str) -> bool:
        """Store the response of the reservation `token`; False if that reservation is gone."""

    @abc.abstractmethod
    async def release_idempotency_key(self, scope: str, key: str, token: str) -> bool:
        """Drop the pending reservation `token` (its request failed), so a retry runs again."""

    @abc.abstractmethod
    async def purge_idempotency_keys(self, now: float) -> int:
        """Delete records expired at `now`; returns how many."""

    def _idempotency_purge_is_due(self, now: float) -> bool:
        """True at most once per `IDEMPOTENCY_PURGE_INTERVAL`: time for a claim to purge expired records.

        Purging never changes an answer (a claim treats an expired record as absent); it keeps the
        table small on backends without a TTL monitor."""
        if now < self._idempotency_purge_due:
            return False
        self._idempotency_purge_due = now + self.IDEMPOTENCY_PURGE_INTERVAL
        return True
