"""A2A settings of actors as stored, and the contexts A2A clients opened with them (one implementation per
backend).

An actor's record says whether A2A clients may reach it (`serve`), which capabilities it declares in the
threads they open with it (its Agent Card's extensions), and, for a remote A2A agent standing in a thread as
that actor, its Agent Card URL and how far its inbox was delivered there (`cursor`, moved by `advance`).
A context is a client's `contextId` with one agent: the thread it names.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field


@dataclass
class A2AAgentRecord:
    actor: str
    serve: bool = False  # reachable by A2A clients at /a2a/{actor}
    capabilities: list[str] = field(default_factory=list)  # capability schema URLs it declares
    card_url: str | None = None  # a remote A2A agent: the actor's inbox is sent there
    updated_at: int = 0
    cursor: int = 0  # the inbox position delivered up to (set once when created, then only by `advance`)


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
