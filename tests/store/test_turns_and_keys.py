"""Two rules the store keeps in the write they belong to, on every backend: agents' turns counted as messages
are appended (the one using the last turn pauses the thread, a person's resumes it, an agent's on a paused
thread is refused writing nothing), and a thread made once per key (the key kept in the thread's own write)."""

from __future__ import annotations

import time

import pytest

from aitp.events import payloads
from aitp.store import Store
from aitp.store.base import KeyTaken, NewEvent, ThreadRecord, TurnBudgetExhausted, TurnRule
from aitp.store.idempotency import IdempotencyRecord
from tests.store.test_contract import make_thread, message_created, message_rec, seqs, thread_rec, tick


def _turns(default: int) -> TurnRule:
    def paused(thread_id: str, budget: int, actor: str) -> NewEvent:
        return NewEvent("thread.paused", payloads.turns_payload(thread_id, budget, actor), tick())

    def resumed(thread_id: str, budget: int, actor: str) -> NewEvent:
        return NewEvent("thread.resumed", payloads.turns_payload(thread_id, budget, actor), tick())

    return TurnRule(default, paused, resumed)


async def _say(store: Store, thread_id: str, actor: str, rule: TurnRule) -> None:
    message = message_rec(thread_id, actor=actor, role="user" if actor == "alice" else "assistant")
    assert await store.append_messages(thread_id, [(message, message_created(message))], turn_rule=rule)


async def _types(store: Store, thread_id: str) -> list[str]:
    return [e.type for e in await store.list_events(thread_id, after=0, limit=100)]


async def test_the_agent_message_using_the_last_turn_pauses_and_a_persons_message_resumes(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "shop", "pay"))
    rule = _turns(3)
    for agent in ("shop", "pay", "shop"):
        await _say(store, thread.id, agent, rule)
    stored = await store.get_thread(thread.id)
    assert stored is not None and (stored.agent_turns, stored.paused) == (3, True)
    assert (await _types(store, thread.id))[-2:] == ["thread.message.created", "thread.paused"]

    before = await seqs(store, thread.id)
    late = message_rec(thread.id, actor="pay", role="assistant")
    with pytest.raises(TurnBudgetExhausted) as refused:
        await store.append_messages(thread.id, [(late, message_created(late))], turn_rule=rule)
    assert (refused.value.budget, refused.value.agent_turns) == (3, 3)
    assert await seqs(store, thread.id) == before  # nothing written

    await _say(store, thread.id, "alice", rule)
    assert (await _types(store, thread.id))[-2:] == ["thread.resumed", "thread.message.created"]
    stored = await store.get_thread(thread.id)
    assert stored is not None and (stored.agent_turns, stored.paused) == (0, False)


async def test_a_thread_budget_beats_the_default_and_changing_it_pauses_or_resumes(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "shop"))
    rule = _turns(2)

    def updated(record: ThreadRecord, actors: list) -> NewEvent:  # type: ignore[type-arg]
        return NewEvent("thread.updated", payloads.thread_payload(record, actors), tick())

    await store.update_thread(thread.id, {"turn_budget": 5}, updated, rule)
    for _ in range(4):
        await _say(store, thread.id, "shop", rule)  # past the default of 2: the thread's own 5 applies
    result = await store.update_thread(thread.id, {"turn_budget": 4}, updated, rule)
    assert result is not None and result[0].paused is True
    assert (await _types(store, thread.id))[-2:] == ["thread.paused", "thread.updated"]
    result = await store.update_thread(thread.id, {"turn_budget": 0}, updated, rule)  # 0: no limit
    assert result is not None and result[0].paused is False
    await _say(store, thread.id, "shop", rule)
    result = await store.update_thread(thread.id, {"persons": ["shop"]}, updated, rule)
    assert result is not None and result[0].persons == ["shop"]


async def test_a_thread_made_once_per_key_keeps_its_key_in_the_same_write(store: Store) -> None:
    def once(now: float, ttl: float = 3600) -> IdempotencyRecord:
        return IdempotencyRecord("a2a:alice", "k1", "test", "token", now, now + ttl, status=200, body='{"n": 1}')

    first = thread_rec()
    created = NewEvent("thread.created", {}, tick())
    now = time.time()
    await store.create_thread(first, [], created, [], once=once(now))
    kept = await store.idempotency.get("a2a:alice", "k1")
    assert kept is not None and (kept.status, kept.body) == (200, '{"n": 1}')

    second = thread_rec()
    with pytest.raises(KeyTaken):
        await store.create_thread(second, [], NewEvent("thread.created", {}, tick()), [], once=once(now + 1))
    assert await store.get_thread(second.id) is None  # nothing of it written

    # a key whose record expired is taken again
    later = now + 7200
    third = thread_rec()
    await store.create_thread(third, [], NewEvent("thread.created", {}, tick()), [], once=once(later))
    assert await store.get_thread(third.id) is not None
