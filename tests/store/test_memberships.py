"""An actor's inbox follows from its memberships, written when it joins and leaves, never per event; a store
written before memberships (one audience entry per event and member) is converted when it is opened and
its inboxes read as they did."""

from __future__ import annotations

import sqlite3
from typing import Any

from pymongo import MongoClient

from aitp.store import Store, open_store
from tests.conftest import Backend
from tests.store.test_contract import actor_rec, ev, make_thread, post

ACTORS = ("alice", "bob", "carol")


async def scenario(store: Store) -> list[str]:
    """Joins, a leave and a rejoin, messages between them, and a deleted thread."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("one",))
    await store.put_actor(actor_rec(thread.id, "carol"), lambda a, joined: ev("thread.actor.joined", id=a.id))
    await post(store, thread.id, "two")
    await store.remove_actor(thread.id, "bob", ev("thread.actor.left", id="bob"))
    await post(store, thread.id, "three")  # bob does not see it
    await store.put_actor(actor_rec(thread.id, "bob"), lambda a, joined: ev("thread.actor.joined", id=a.id))
    await post(store, thread.id, "four")
    gone, _, _ = await make_thread(store, ("carol", "alice"), ("soon deleted",))
    await store.delete_thread(gone.id, ev("thread.deleted", id=gone.id))
    return [thread.id, gone.id]


async def inboxes(store: Store) -> dict[str, list[tuple[str, int]]]:
    return {a: [(e.thread_id, e.seq) for e in await store.list_inbox_events(a, 0, 1000)] for a in ACTORS}


async def test_an_inbox_holds_the_events_written_while_the_actor_was_a_member(store: Store) -> None:
    thread_id, gone_id = await scenario(store)
    seen = await inboxes(store)
    # thread: 1 created, 2 "one", 3 carol joined, 4 "two", 5 bob left, 6 "three", 7 bob joined, 8 "four"
    assert seen["alice"] == [*((thread_id, s) for s in range(1, 9)), (gone_id, 3)]
    assert seen["bob"] == [(thread_id, s) for s in (1, 2, 3, 4, 5, 7, 8)]
    assert seen["carol"] == [*((thread_id, s) for s in range(3, 9)), (gone_id, 3)]  # the deletion's event


async def test_a_page_further_back_than_the_window_reads_through_the_memberships(store: Store) -> None:
    mine, _, _ = await make_thread(store, ("alice",), ("first",))
    others, _, _ = await make_thread(store, ("zed",))
    for i in range(2_100):  # more than an inbox read scans of the whole log
        await post(store, others.id, f"not alice's {i}", actor="zed")
    await post(store, mine.id, "last")
    assert [(e.thread_id, e.seq) for e in await store.list_inbox_events("alice", 0, 10)] == [
        (mine.id, 1),
        (mine.id, 2),
        (mine.id, 3),
    ]


async def test_a_store_written_with_audiences_opens_with_the_same_inboxes(backend: Backend) -> None:
    store = open_store(backend.url)
    await store.open()
    try:
        await scenario(store)
        before = await inboxes(store)
    finally:
        await store.close()
    _back_to_audiences(backend)

    reopened = open_store(backend.url)
    await reopened.open()  # converts
    try:
        assert await inboxes(reopened) == before
    finally:
        await reopened.close()
    assert _legacy_left(backend) == []  # converted once: the next start has nothing to look at


def _back_to_audiences(backend: Backend) -> None:
    """Rewrite the store as the earlier version kept it: per event, the actors whose membership covers it."""
    if backend.name == "sqlite":
        path = backend.url.removeprefix("sqlite:///").split("?")[0]
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TABLE event_audience (actor_id TEXT NOT NULL, gid INTEGER NOT NULL,"
                " PRIMARY KEY (actor_id, gid))"
            )
            db.execute(
                "INSERT INTO event_audience SELECT m.actor_id, e.gid FROM memberships m JOIN events e"
                " ON e.thread_id = m.thread_id AND e.seq >= m.from_seq AND (m.to_seq IS NULL OR e.seq <= m.to_seq)"
            )
            db.execute("DELETE FROM memberships")
        return
    client: MongoClient[dict[str, Any]] = MongoClient(backend.url)
    try:
        db = client.get_default_database()
        spans = list(db.memberships.find())
        for event in db.events.find():
            audience = [
                m["actor_id"]
                for m in spans
                if m["thread_id"] == event["thread_id"]
                and m["from_seq"] <= event["seq"]
                and (m["to_seq"] is None or event["seq"] <= m["to_seq"])
            ]
            db.events.update_one({"_id": event["_id"]}, {"$set": {"audience": audience}})
        db.memberships.delete_many({})
        db.events.create_index([("audience", 1), ("gid", 1)])  # as the earlier version made it
    finally:
        client.close()


def _legacy_left(backend: Backend) -> list[Any]:
    """What tells a store written with audiences: the SQLite table, or MongoDB's audience index."""
    if backend.name == "sqlite":
        with sqlite3.connect(backend.url.removeprefix("sqlite:///").split("?")[0]) as db:
            return db.execute("SELECT name FROM sqlite_master WHERE name = 'event_audience'").fetchall()
    client: MongoClient[dict[str, Any]] = MongoClient(backend.url)
    try:
        return [index for index in client.get_default_database().events.list_indexes() if "audience" in index["key"]]
    finally:
        client.close()
