"""`store.a2a` on every backend: an actor's A2A settings are replaced whole but keep their cursor, which
moves only from where it is; a context is bound to the first thread offered for it."""

from __future__ import annotations

from aitp.store import Store
from aitp.store.a2a import A2AAgentRecord


async def test_settings_are_replaced_and_keep_their_cursor(store: Store) -> None:
    await store.a2a.put(A2AAgentRecord("bot", serve=True, capabilities=["u1"], updated_at=1, cursor=7))
    await store.a2a.put(A2AAgentRecord("bot", card_url="https://a.example/card", updated_at=2, cursor=99))
    assert await store.a2a.get("bot") == A2AAgentRecord("bot", False, [], "https://a.example/card", 2, 7)
    await store.a2a.put(A2AAgentRecord("local", serve=True))
    assert [r.actor for r in await store.a2a.remotes()] == ["bot"]
    assert await store.a2a.get("nobody") is None


async def test_the_cursor_moves_only_from_where_it_is(store: Store) -> None:
    await store.a2a.put(A2AAgentRecord("bot", card_url="https://a.example/card", cursor=5))
    assert await store.a2a.advance("bot", 5, 9)
    assert not await store.a2a.advance("bot", 5, 12)  # another instance moved it first
    assert (await store.a2a.get("bot")).cursor == 9  # type: ignore[union-attr]


async def test_a_context_is_bound_once_per_caller_and_agent(store: Store) -> None:
    assert await store.a2a.context("alice", "shop", "ctx") is None
    assert await store.a2a.bind_context("alice", "shop", "ctx", "thread_1") == "thread_1"
    assert await store.a2a.bind_context("alice", "shop", "ctx", "thread_2") == "thread_1"
    assert await store.a2a.bind_context("bob", "shop", "ctx", "thread_3") == "thread_3"
    assert await store.a2a.context("alice", "shop", "ctx") == "thread_1"
