"""A2A settings of actors as stored, the contexts A2A clients opened with them, and the tasks remote agents
left open in threads (one implementation per backend).

An actor's record says whether A2A clients may reach it (`serve`), which capabilities it declares in the
threads they open with it (its Agent Card's extensions), and, for a remote A2A agent standing in a thread as
that actor, its Agent Card URL, which messages ask it for work (`reply_policy`), the credentials its card's
security scheme asks for, and how far its inbox was delivered there (`cursor`, moved by `advance`).
A context is a client's `contextId` with one agent: the thread it names. The threads a caller shares with an
agent (`shared_threads`) are where its tasks with that agent are (A2A ListTasks), read a page at a time.
A remote task is where a remote agent's work in one thread stands: the `contextId` it goes on in, and the
task it left waiting for input (`input-required`), which the next message sent to it in that thread continues.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

ADDRESSED = "addressed"  # the default reply policy (aitp.services.addressing)


@dataclass
class A2AAgentRecord:
    actor: str
    serve: bool = False  # reachable by A2A clients at /a2a/{actor}
    capabilities: list[str] = field(default_factory=list)  # capability schema URLs it declares
    card_url: str | None = None  # a remote A2A agent: the actor's inbox is sent there
    updated_at: int = 0
    cursor: int = 0  # the inbox position delivered up to (set once when created, then only by `advance`)
    reply_policy: str = ADDRESSED  # which messages are sent to the remote agent: "addressed" or "all"
    # kind ("bearer", "api_key") -> secret, sent as the card's security scheme asks; kept out of reprs and logs
    credentials: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class RemoteTaskRecord:
    """A remote agent's work in one thread: its context there, and the task waiting for input, if any."""

    actor: str
    thread_id: str
    context_id: str  # the thread's id, or the context id the agent gave back the first time
    task_id: str | None = None  # the remote task the next message continues (None: the next starts one)
    updated_at: int = 0


class A2AStore(abc.ABC):
    @abc.abstractmethod
    async def put(self, record: A2AAgentRecord) -> None:
        """Create or replace an actor's settings; an existing record keeps its cursor."""

    @abc.abstractmethod
    async def get(self, actor: str) -> A2AAgentRecord | None: ...

    @abc.abstractmethod
    async def remotes(self) -> list[A2AAgentRecord]:
        """Every record with a card URL, by actor."""

    @abc.abstractmethod
    async def advance(self, actor: str, after: int, to: int) -> bool:
        """Move the actor's cursor from `after` to `to`; False if it was not `after` any more."""

    @abc.abstractmethod
    async def context(self, caller: str, agent: str, context_id: str) -> str | None:
        """The thread of the caller's context with the agent, if bound."""

    @abc.abstractmethod
    async def bind_context(self, caller: str, agent: str, context_id: str, thread_id: str) -> str:
        """Bind the context to `thread_id` unless it is bound already; the thread it is bound to."""

    @abc.abstractmethod
    async def shared_threads(self, caller: str, agent: str, *, limit: int, before: str | None = None) -> list[str]:
        """The ids of at most `limit` live threads both actors are in, newest (highest id) first, below `before`
        when given: read through the actor index, never every thread of the caller."""

    @abc.abstractmethod
    async def remote_task(self, actor: str, thread_id: str) -> RemoteTaskRecord | None:
        """Where the remote agent's work in the thread stands, if it was sent anything there."""

    @abc.abstractmethod
    async def put_remote_task(self, record: RemoteTaskRecord) -> None:
        """Create or replace the remote agent's task record of the thread."""

    @abc.abstractmethod
    async def forget_remote_tasks(self, actor: str) -> None:
        """Drop every task record of the actor (its card now names another agent)."""
