"""On MongoDB, writes to two different threads touch no document in common (pymongo command monitoring
records every write command of each transaction): nothing serialises the deployment's writers, and every
thread-scoped collection can be sharded by thread id. The store-wide positions come from each instance's
own issuer (`aitp.store.mongo.positions`), not from a shared counter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from bson import json_util
from pymongo import monitoring

from aitp.store import Store, open_store
from tests.conftest import Backend
from tests.store.test_contract import actor_rec, ev, make_thread, post

WRITES = {"insert", "update", "findAndModify", "delete"}


class TransactionWrites(monitoring.CommandListener):
    """The documents each transaction's write commands name: (collection, _id or filter)."""

    def __init__(self) -> None:
        self.recording = False
        self.touched: set[tuple[str, str]] = set()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        if not self.recording or event.command_name not in WRITES or "txnNumber" not in command:
            return  # outside a store write, a read, or no transaction (the positions' heartbeat)
        collection = command[event.command_name]
        if event.command_name == "insert":
            targets = [{"_id": doc.get("_id")} if "_id" in doc else doc for doc in command["documents"]]
        elif event.command_name == "findAndModify":
            targets = [command["query"]]
        else:
            key = "q"
            targets = [entry[key] for entry in command.get("updates", command.get("deletes", []))]
        for target in targets:
            self.touched.add((collection, json_util.dumps(target, sort_keys=True)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    async def during(self, write: Callable[[], Awaitable[Any]]) -> set[tuple[str, str]]:
        self.touched, self.recording = set(), True
        try:
            await write()
        finally:
            self.recording = False
        return self.touched


@pytest.fixture
async def monitored(mongo_backend: Backend) -> Any:
    """A MongoDB store whose write commands are recorded (SQLite has one writer at a time by design)."""
    backend = mongo_backend
    listener = TransactionWrites()
    monitoring.register(listener)  # clients made from now on report to it
    store = open_store(backend.url)
    await store.open()
    try:
        yield store, listener
    finally:
        await store.close()
        listener.recording = False


async def test_writes_to_two_threads_touch_no_document_in_common(monitored: tuple[Store, TransactionWrites]) -> None:
    store, listener = monitored
    first, _, _ = await make_thread(store, ("alice", "bob"), ("one",))
    second, _, _ = await make_thread(store, ("carol", "dave"), ("one",))

    def writes_to(thread_id: str, author: str, other: str) -> list[Callable[[], Awaitable[Any]]]:
        return [
            lambda: post(store, thread_id, "hello", actor=author),
            lambda: store.put_actor(actor_rec(thread_id, "erin"), lambda a, j: ev("thread.actor.joined", id=a.id)),
            lambda: store.remove_actor(thread_id, other, ev("thread.actor.left", id=other)),
            lambda: store.update_thread(thread_id, {"metadata": {"k": "v"}}, lambda t, a: ev("thread.updated")),
            lambda: store.append_event(thread_id, ev("thread.message.refused", actor=author)),
        ]

    for one, two in zip(writes_to(first.id, "alice", "bob"), writes_to(second.id, "carol", "dave"), strict=True):
        touched_one, touched_two = await listener.during(one), await listener.during(two)
        assert touched_one and touched_two
        assert touched_one & touched_two == set()
        assert not any(collection == "counters" for collection, _ in touched_one | touched_two)


async def test_a_thread_with_64_actors_writes_as_many_documents_per_message_as_one_with_2(
    monitored: tuple[Store, TransactionWrites],
) -> None:
    store, listener = monitored
    small, _, _ = await make_thread(store, ("alice", "bob"))
    large, _, _ = await make_thread(store, ("alice", *(f"member-{i}" for i in range(63))))
    in_small = await listener.during(lambda: post(store, small.id, "hi"))
    in_large = await listener.during(lambda: post(store, large.id, "hi"))
    assert len(in_small) == len(in_large)
