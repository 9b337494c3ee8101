"""Turns: several agents in one thread cannot run away.

Persons are the thread's creator and the actors its creator marks as persons (`persons`): they speak as `user`.
Every other actor is an agent. Agents may post `budget` messages in a row with no message from a person (the
thread's own `turn_budget`, else the deployment's `AITP_TURN_BUDGET`; 0: no limit). The message that uses the
last turn pauses the thread (`thread.paused`, after that message's event, tells every member); from then on an
agent's post is refused 429 `turn_budget_exhausted` until a person writes (`thread.resumed`, then the person's
message) or the creator changes the budget. The count is kept with the thread and moved in the append's own
transaction, so it holds across processes.

Apart from that, each agent may post `AITP_AGENT_MESSAGES_PER_MINUTE` in one thread (bursts of
`AITP_AGENT_BURST`), counted in this process: 429 `agent_rate_limited` with Retry-After.
"""

from __future__ import annotations

from typing import Any

from aitp.errors import InvalidRequest, PermissionDenied, RateLimited
from aitp.events import payloads
from aitp.principals import Principal
from aitp.runtime import Runtime, now
from aitp.services.rate_limit import RateLimiter
from aitp.store.base import NewEvent, ThreadRecord, TurnBudgetExhausted, TurnRule

PAUSED = "thread.paused"
RESUMED = "thread.resumed"
MAX_BUDGET = 10_000


def _paused(thread_id: str, budget: int, actor: str) -> NewEvent:
    return NewEvent(PAUSED, payloads.turns_payload(thread_id, budget, actor), now())


def _resumed(thread_id: str, budget: int, actor: str) -> NewEvent:
    return NewEvent(RESUMED, payloads.turns_payload(thread_id, budget, actor), now())


def rule(rt: Runtime) -> TurnRule:
    """How this deployment counts turns (the default budget as the settings say now)."""
    return TurnRule(rt.settings.turn_budget, _paused, _resumed)


def budget_of(rt: Runtime, thread: ThreadRecord) -> int:
    """The budget that applies to the thread (0: no limit)."""
    return rt.settings.turn_budget if thread.turn_budget is None else thread.turn_budget


def is_person(actor: str, thread: ThreadRecord) -> bool:
    return actor == thread.creator or actor in thread.persons


def exhausted(thread_id: str, error: TurnBudgetExhausted) -> RateLimited:
    return RateLimited(
        f"Thread {thread_id} is paused: agents posted {error.budget} messages in a row with no message from a"
        " person. A person's message resumes it, or its creator may change the thread's `turn_budget`.",
        code="turn_budget_exhausted",
        param="thread_id",
    )


def agent_limiter(rt: Runtime) -> RateLimiter:
    """Agents' messages per thread (`rt.state(agent_limiter)`), counted in this process."""
    return RateLimiter()


def count_agent_message(rt: Runtime, thread: ThreadRecord, actor: str) -> None:
    """Count a message an agent posts in a thread: 429 `agent_rate_limited` past its rate there."""
    per_minute = rt.settings.agent_messages_per_minute
    if per_minute <= 0 or is_person(actor, thread):
        return
    rt.state(agent_limiter).check(
        f"{thread.id}\n{actor}",
        per_minute / 60,
        rt.settings.agent_burst,
        limit=f"messages by '{actor}' in this thread: {per_minute:g} per minute",
        code="agent_rate_limited",
    )


def turn_changes(principal: Principal, thread: ThreadRecord, turns: dict[str, Any], max_persons: int) -> dict[str, Any]:
    """The store changes a `turns` object asks for (its creator's, or an admin's): `budget` (an integer, or
    null for the deployment's default) and/or `persons` (actor ids that speak as persons)."""
    if not principal.admin and principal.actor != thread.creator:
        raise PermissionDenied(
            "Only the thread's creator (or an admin) may change its turns.", param="turns", code="not_thread_creator"
        )
    changes: dict[str, Any] = {}
    unknown = set(turns) - {"budget", "persons"}
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidRequest(f"Unknown field 'turns.{name}': give budget and/or persons.", param=f"turns.{name}")
    if "budget" in turns:
        budget = turns["budget"]
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
            raise InvalidRequest(
                "'turns.budget' must be an integer or null.", param="turns.budget", code="invalid_type"
            )
        if budget is not None and not 0 <= budget <= MAX_BUDGET:
            raise InvalidRequest(
                f"'turns.budget' must be from 0 (no limit) to {MAX_BUDGET}.", param="turns.budget", code="invalid_value"
            )
        changes["turn_budget"] = budget
    if "persons" in turns:
        persons = turns["persons"]
        if not isinstance(persons, list) or not all(isinstance(p, str) and 0 < len(p) <= 256 for p in persons):
            raise InvalidRequest("'turns.persons' must be an array of actor ids.", param="turns.persons")
        if len(persons) > max_persons:
            raise InvalidRequest(f"'turns.persons' may name at most {max_persons} actors.", param="turns.persons")
        changes["persons"] = list(dict.fromkeys(persons))
    return changes
