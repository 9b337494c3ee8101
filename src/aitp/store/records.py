"""The records that cross the store's interface, and its refusals.

Records are plain dataclasses: no backend idea (ObjectId, SQL rows) leaks past `store/`, and no wire shape
(OpenAI objects) leaks in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

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
    # the turn budget (services.turns): agents' messages allowed in a row with no person's (None: the
    # deployment's default, 0: no limit), the actors the creator marked as persons, and the count so far
    turn_budget: int | None = None
    persons: list[str] = field(default_factory=list)
    agent_turns: int = 0
    paused: bool = False

    def __post_init__(self) -> None:
        self.paused = bool(self.paused)  # SQLite gives 0/1


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


class KeyTaken(Exception):
    """A write made once per key (`Store.create_thread`'s `once`) whose key a live record holds: nothing was
    written."""

    def __init__(self, scope: str, key: str) -> None:
        super().__init__(f"{scope} {key} is taken")
        self.scope = scope
        self.key = key


class TurnBudgetExhausted(Exception):
    """An append of an agent's message to a thread whose agents used their turns: `budget` in a row with no
    message from a person (the thread is paused until one writes, or its creator raises the budget)."""

    def __init__(self, budget: int, agent_turns: int) -> None:
        super().__init__(f"agents posted {agent_turns} messages in a row (budget {budget})")
        self.budget = budget
        self.agent_turns = agent_turns


@dataclass(frozen=True)
class TurnRule:
    """How an append counts turns: `default` is the budget of a thread with none of its own (0: no limit);
    `paused` renders the event of a thread whose agents just used their last turn (thread, budget, the
    agent), `resumed` the event of one a person's message resumes (thread, budget, the person)."""

    default: int
    paused: Callable[[str, int, str], NewEvent]
    resumed: Callable[[str, int, str], NewEvent]


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


K = TypeVar("K", str, int)


@dataclass(frozen=True)
class Page(Generic[K]):
    """One page of a list in `order`, after and/or before a cursor (exclusive), at most `limit` long."""

    limit: int
    order: Order
    after: K | None = None
    before: K | None = None

    @property
    def ascending(self) -> bool:
        return self.order == "asc"

    @property
    def above(self) -> K | None:
        """The exclusive lower bound of the keys on the page: the cursor the page starts from, in key order."""
        return self.after if self.ascending else self.before

    @property
    def below(self) -> K | None:
        """The exclusive upper bound."""
        return self.before if self.ascending else self.after


ThreadEventRenderer = Callable[[ThreadRecord, list[ActorRecord]], NewEvent]
ActorEventRenderer = Callable[[ActorRecord, bool], NewEvent]  # (actor, newly joined)
MessageEventRenderer = Callable[[MessageRecord], NewEvent]
# Called with the thread's actors before and after a membership change; may add one more event
# (e.g. the capability negotiation changed) to the same atomic write.
MembershipFollowUp = Callable[[list[ActorRecord], list[ActorRecord]], NewEvent | None]


# called after a write to a thread committed: (thread id, whether the thread's record or actors changed,
# not only its messages)
CommitListener = Callable[[str, bool], None]
