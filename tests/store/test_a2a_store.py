"""`store.a2a` on every backend: an actor's A2A settings are replaced whole but keep their cursor, which
moves only from where it is; a context is bound to the first thread offered for it; a remote agent's task
is kept per actor and thread; the threads a caller shares with an agent are read a page at a time, newest
first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from aitp.store import Store
from aitp.store.a2a import A2AAgentRecord, RemoteTaskRecord
from aitp.store.mongo import a2a as mongo_a2a
from aitp.store.sqlite.store import SQLiteStore
from tests.store.test_contract import ev, make_thread


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


async def test_reply_policy_and_credentials_are_replaced_with_the_settings(store: Store) -> None:
    await store.a2a.put(A2AAgentRecord("bot", card_url="https://a.example/card", credentials={"bearer": "s3"}))
    got = await store.a2a.get("bot")
    assert got is not None and (got.reply_policy, got.credentials) == ("addressed", {"bearer": "s3"})
    assert "s3" not in repr(got)  # a record that reaches a log line does not carry its secret there
    await store.a2a.put(A2AAgentRecord("bot", card_url="https://a.example/card", reply_policy="all"))
    got = await store.a2a.get("bot")
    assert got is not None and (got.reply_policy, got.credentials) == ("all", {})
    assert [r.reply_policy for r in await store.a2a.remotes()] == ["all"]


async def test_a_remote_task_is_kept_per_actor_and_thread_until_forgotten(store: Store) -> None:
    assert await store.a2a.remote_task("bot", "thread_1") is None
    waiting = RemoteTaskRecord("bot", "thread_1", "ctx-1", "task-1", 5)
    await store.a2a.put_remote_task(waiting)
    await store.a2a.put_remote_task(RemoteTaskRecord("bot", "thread_2", "thread_2", None, 6))
    await store.a2a.put_remote_task(RemoteTaskRecord("other", "thread_1", "thread_1", "task-9", 6))
    assert await store.a2a.remote_task("bot", "thread_1") == waiting
    ended = RemoteTaskRecord("bot", "thread_1", "ctx-1", None, 7)  # the task ended; its context is kept
    await store.a2a.put_remote_task(ended)
    assert await store.a2a.remote_task("bot", "thread_1") == ended
    assert await store.a2a.remote_task("bot", "thread_2") == RemoteTaskRecord("bot", "thread_2", "thread_2", None, 6)
    await store.a2a.forget_remote_tasks("bot")
    assert await store.a2a.remote_task("bot", "thread_1") is None
    assert await store.a2a.remote_task("bot", "thread_2") is None
    assert await store.a2a.remote_task("other", "thread_1") is not None


async def test_a_store_written_before_reply_policies_reads_the_defaults(tmp_path: Path) -> None:
    """A SQLite store whose `a2a_agents` table predates reply policies and credentials is upgraded when it
    opens: its agents answer what is addressed to them and hold no credentials."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE a2a_agents (actor TEXT PRIMARY KEY, serve INTEGER NOT NULL, capabilities TEXT NOT NULL,"
            " card_url TEXT, updated_at INTEGER NOT NULL, cursor INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO a2a_agents VALUES ('bot', 0, '[]', 'https://a.example/card', 3, 4)")
    conn.close()
    store = SQLiteStore(path)
    await store.open()
    try:
        assert await store.a2a.get("bot") == A2AAgentRecord("bot", False, [], "https://a.example/card", 3, 4)
        await store.a2a.put_remote_task(RemoteTaskRecord("bot", "thread_1", "thread_1", "t", 1))
        assert (await store.a2a.remote_task("bot", "thread_1")) is not None
    finally:
        await store.close()


async def test_the_threads_a_caller_shares_with_an_agent_are_paged_newest_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mongo_a2a, "SHARED_BATCH", 2)  # MongoDB reads the caller's memberships in batches
    members = [("alice", "shop"), ("alice", "bob"), ("shop", "alice", "bob"), ("bob", "shop"), ("alice", "shop")]
    made = [(await make_thread(store, actors, ("hi",)))[0].id for actors in members]
    gone, _, _ = await make_thread(store, ("alice", "shop"), ("soon deleted",))
    await store.delete_thread(gone.id, ev("thread.deleted", id=gone.id))
    await store.remove_actor(made[4], "shop", ev("thread.actor.left", id="shop"))  # the agent left it

    shared = [made[2], made[0]]  # newest first; not bob's, not alice's with bob only, not deleted, not left
    assert await store.a2a.shared_threads("alice", "shop", limit=10) == shared
    assert await store.a2a.shared_threads("alice", "shop", limit=1) == shared[:1]
    assert await store.a2a.shared_threads("alice", "shop", limit=10, before=made[2]) == shared[1:]
    assert await store.a2a.shared_threads("shop", "alice", limit=10) == shared
    assert await store.a2a.shared_threads("carol", "shop", limit=10) == []
