"""Full-text search of messages, on every backend (SQLite's FTS5 index, MongoDB's text index; nx-27017 answers
`$text` too): the threads of an actor whose messages have every word searched for, the newest match of each;
the index follows the messages in their own transactions, and a store written before search is indexed when
it opens."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from pymongo import MongoClient

from aitp.store import Store, open_store
from aitp.store.search import SearchHit, search_terms
from tests.conftest import Backend
from tests.store.test_contract import actor_rec, ev, make_thread, message_created, message_rec, post

QUOTE = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"


def found(hits: list[SearchHit]) -> list[tuple[str, str]]:
    return [(hit.thread_id, hit.text) for hit in hits]


async def search(store: Store, actor: str | None, query: str, limit: int = 20) -> list[SearchHit]:
    return await store.search.threads(actor, search_terms(query), limit)


async def test_a_search_finds_the_newest_message_of_each_thread_with_every_word(store: Store) -> None:
    socks, _, _ = await make_thread(store, ("alice", "shop"), ("Do you have red socks?",))
    await post(store, socks.id, "Blue socks only, sorry", actor="shop")
    hats, _, _ = await make_thread(store, ("alice", "hatter"), ("Any red hats?",))
    last = await post(store, socks.id, "RED Socks are back in stock!", actor="shop")

    hits = await search(store, "alice", "red socks")

    # every word, whole words, case-insensitive; the thread of the newest match first
    assert found(hits) == [(socks.id, "RED Socks are back in stock!")]
    assert (hits[0].message_id, hits[0].actor, hits[0].created_at) == (last.id, "shop", last.created_at)
    assert found(await search(store, "alice", "red")) == [
        (socks.id, "RED Socks are back in stock!"),
        (hats.id, "Any red hats?"),
    ]
    assert await search(store, "alice", "sock") == []  # a word, not a part of one
    assert await search(store, "alice", "red socks hats") == []


async def test_words_compare_without_accents_and_case(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",), ("Un café crème, s'il vous plaît",))

    for query in ("cafe creme", "CAFÉ", "plait"):
        assert found(await search(store, "alice", query)) == [(thread.id, "Un café crème, s'il vous plaît")]
    assert await search(store, "alice", "ﷺ ½ ⑽") == []  # letters that decompose into several words: still words


async def test_only_the_threads_an_actor_is_in_are_searched(store: Store) -> None:
    theirs, _, _ = await make_thread(store, ("bob", "shop"), ("secret socks",))
    mine, _, _ = await make_thread(store, ("alice", "shop"), ("my socks",))

    assert found(await search(store, "alice", "socks")) == [(mine.id, "my socks")]
    assert found(await search(store, "bob", "socks")) == [(theirs.id, "secret socks")]
    assert [hit.thread_id for hit in await search(store, None, "socks")] == [mine.id, theirs.id]  # an admin's

    await store.put_actor(actor_rec(theirs.id, "alice"), lambda a, joined: ev("thread.actor.joined", id=a.id))
    assert [hit.thread_id for hit in await search(store, "alice", "socks")] == [mine.id, theirs.id]  # its history too
    await store.remove_actor(mine.id, "alice", ev("thread.actor.left", id="alice"))
    assert [hit.thread_id for hit in await search(store, "alice", "socks")] == [theirs.id]


async def test_membership_is_part_of_the_query_not_a_filter_after_it(store: Store) -> None:
    """Others' matches, more than a search reads, do not hide the caller's older one."""
    mine, _, _ = await make_thread(store, ("alice", "shop"), ("wool socks please",))
    crowd, _, _ = await make_thread(store, ("zed", "shop"))
    messages = [message_rec(crowd.id, f"socks number {i}", actor="zed") for i in range(2_100)]
    for start in range(0, len(messages), 300):
        batch = messages[start : start + 300]
        assert await store.append_messages(crowd.id, [(m, message_created(m)) for m in batch]) is not None

    assert found(await search(store, "alice", "socks")) == [(mine.id, "wool socks please")]
    assert found(await search(store, "zed", "socks number 7")) == [(crowd.id, "socks number 7")]


async def test_the_index_follows_appends_and_deletions(store: Store) -> None:
    thread, (first,), _ = await make_thread(store, ("alice", "shop"), ("striped socks",))
    other, _, _ = await make_thread(store, ("alice", "shop"), ("striped scarf",))
    second = await post(store, thread.id, "more striped socks", actor="shop")
    assert [hit.message_id for hit in await search(store, "alice", "striped socks")] == [second.id]

    await store.delete_message(thread.id, second.id, ev("thread.message.deleted", id=second.id))
    assert [hit.message_id for hit in await search(store, "alice", "striped socks")] == [first.id]

    await store.delete_thread(thread.id, ev("thread.deleted", id=thread.id))
    assert await search(store, "alice", "socks") == []
    assert [hit.thread_id for hit in await search(store, None, "striped")] == [other.id]


async def test_capability_messages_are_found_by_what_a_person_reads_in_them(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "shop"))
    quote = {"$schema": QUOTE, "quote": {"quote_id": "q-1", "description": "Two pairs of wool socks", "amount": "9"}}
    message = message_rec(thread.id, json.dumps(quote), actor="shop")
    message.aitp = [{"capability": "aitp-01-payments", "version": "1.0.0", "type": "quote", "validated": True}]
    image = message_rec(thread.id, actor="shop")
    image.content = [{"type": "image_url", "image_url": {"url": "https://shop.example/socks.png"}}]
    for appended in (message, image):
        assert await store.append_message(appended, message_created(appended)) is not None

    assert found(await search(store, "alice", "wool socks")) == [(thread.id, "Two pairs of wool socks")]
    for protocol_words in ("schema", "quote", "q", "aitp", "https", "png"):  # keys, ids, URLs: not what one reads
        assert await search(store, "alice", protocol_words) == []


async def test_a_search_returns_at_most_limit_threads(store: Store) -> None:
    threads = [(await make_thread(store, ("alice",), (f"order {i} of socks",)))[0] for i in range(5)]

    hits = await search(store, "alice", "socks", limit=3)

    assert [hit.thread_id for hit in hits] == [t.id for t in reversed(threads)][:3]


async def test_a_store_written_before_search_is_indexed_when_it_opens(backend: Backend) -> None:
    store = open_store(backend.url)
    await store.open()
    try:
        thread, _, _ = await make_thread(store, ("alice", "shop"), ("Old **woolen** socks", "nothing here"))
        latest = await post(store, thread.id, "and woolen hats", actor="shop")
    finally:
        await store.close()
    _as_written_before_search(backend)

    reopened = open_store(backend.url)
    await reopened.open()  # indexes the messages it holds
    try:
        hits = await search(reopened, "alice", "woolen")
        assert [(hit.thread_id, hit.message_id, hit.text) for hit in hits] == [
            (thread.id, latest.id, "and woolen hats")
        ]
        assert found(await search(reopened, "alice", "woolen socks")) == [(thread.id, "Old **woolen** socks")]
        await post(reopened, thread.id, "woolen gloves", actor="shop")  # and it follows the messages from then on
        assert found(await search(reopened, "alice", "gloves")) == [(thread.id, "woolen gloves")]
    finally:
        await reopened.close()


def _as_written_before_search(backend: Backend) -> None:
    """Take the store back to what the version before search wrote: no index, messages without their text."""
    if backend.name == "sqlite":
        with sqlite3.connect(backend.url.removeprefix("sqlite:///").split("?")[0]) as db:
            db.execute("DROP TABLE message_search_fts")
            db.execute("DROP TABLE message_search")
            db.execute("DROP TABLE message_search_position")
        return
    client: MongoClient[dict[str, Any]] = MongoClient(backend.url)
    try:
        db = client.get_default_database()
        db.messages.update_many({}, {"$unset": {"search_text": ""}})
        db.store_migrations.delete_many({})
        if not backend.is_nx27017:  # (nx-27017 lists no text index, and keeps its own index of the field)
            db.messages.drop_index("messages_search_text")
    finally:
        client.close()


async def test_on_sqlite_appends_are_indexed_behind_them_in_batches(tmp_path: Path) -> None:
    """The append's transaction does not index (it cost half as much again as the rest of posting): the indexer
    reads the event log a moment after this process's commits, and a search catches up first."""
    path = tmp_path / "aitp.db"
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        thread, _, _ = await make_thread(store, ("alice", "shop"), ("tartan socks",))
        for n in range(30):
            await post(store, thread.id, f"tartan update {n}", actor="shop")
        rows = 0
        deadline = time.monotonic() + 10
        while rows < 31 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            with sqlite3.connect(path) as db:
                rows = db.execute("SELECT COUNT(*) FROM message_search").fetchone()[0]
        assert rows == 31  # a moment later, with no search asking

        last = await post(store, thread.id, "tartan at last", actor="shop")
        hits = await search(store, "alice", "tartan")  # at once: the search indexes what is pending first
        assert [hit.message_id for hit in hits] == [last.id]
    finally:
        await store.close()
