"""The steps transaction bodies share (`Store`'s rules, base.py): refs, a message under its event, turns
counted as messages are appended, a membership change's follow-up event. Each awaits nothing but its `Tx`."""

from __future__ import annotations

from collections.abc import Sequence

from aitp.store.records import (
    ActorRecord,
    CapabilityRef,
    DuplicateRef,
    EventRecord,
    MembershipFollowUp,
    MessageRecord,
    NewEvent,
    ThreadRecord,
    TurnBudgetExhausted,
    TurnRule,
)
from aitp.store.transaction import Tx

PERSON_ROLE = "user"  # the role of persons' messages: the thread's creator and the actors it marked


async def insert_refs(tx: Tx, refs: Sequence[CapabilityRef]) -> None:
    for ref in refs:
        if not await tx.insert_ref(ref):
            raise DuplicateRef(ref.kind, ref.ref_id)


async def append_message(tx: Tx, message: MessageRecord, event: NewEvent) -> EventRecord:
    """The message under its event's seq."""
    stored = await tx.append_event(message.thread_id, event)
    message.seq = stored.seq
    await tx.insert_message(message)
    return stored


async def append_counting_turns(
    tx: Tx,
    thread_id: str,
    messages: Sequence[tuple[MessageRecord, NewEvent]],
    rule: TurnRule,
    turns: tuple[int | None, int, bool],
) -> list[EventRecord]:
    own, count, paused = turns
    budget = rule.default if own is None else own
    before = (count, paused)
    events: list[EventRecord] = []
    for message, event in messages:
        if message.role == PERSON_ROLE:
            if paused:
                await tx.append_event(thread_id, rule.resumed(thread_id, budget, message.actor))
            count, paused = 0, False
            events.append(await append_message(tx, message, event))
            continue
        if paused or (budget and count >= budget):
            raise TurnBudgetExhausted(budget, count)
        count += 1
        events.append(await append_message(tx, message, event))
        if budget and count >= budget:
            paused = True
            await tx.append_event(thread_id, rule.paused(thread_id, budget, message.actor))
    if (count, paused) != before:
        await tx.set_turns(thread_id, count, paused)
    return events


async def budget_changed(tx: Tx, thread: ThreadRecord, rule: TurnRule) -> None:
    """A thread whose budget changed is paused or resumed as its count now says (with the event)."""
    budget = rule.default if thread.turn_budget is None else thread.turn_budget
    paused = bool(budget) and thread.agent_turns >= budget
    if paused != thread.paused:
        thread.paused = paused
        await tx.set_turns(thread.id, thread.agent_turns, paused)
        await tx.append_event(thread.id, (rule.paused if paused else rule.resumed)(thread.id, budget, ""))


async def add_follow_up(
    tx: Tx, thread_id: str, follow_up: MembershipFollowUp | None, before: list[ActorRecord]
) -> None:
    if follow_up is not None:
        extra = follow_up(before, await tx.actors(thread_id))
        if extra is not None:
            await tx.append_event(thread_id, extra)
