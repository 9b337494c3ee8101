"""MongoDB-only details of the store that the contract cannot reach through the interface."""

from __future__ import annotations

import pytest

from aitp.store import Store
from aitp.store.base import TooManyActors
from aitp.store.mongo import MongoStore
from tests.store.test_contract import Renderer, actor_rec, ev, make_thread

pytestmark = pytest.mark.parametrize("backend", ["mongo"], indirect=True)


async def test_the_thread_document_counts_its_actors(store: Store) -> None:
    assert isinstance(store, MongoStore)
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    threads = store.engine.db.threads

    async def count() -> int:
        return int((await threads.find_one({"_id": thread.id}))["actor_count"])

    assert await count() == 2
    await store.put_actor(actor_rec(thread.id, "carol"), Renderer("j"))
    await store.put_actor(actor_rec(thread.id, "carol", client_id="web"), Renderer("u"))  # an update: no new seat
    assert await count() == 3
    await store.remove_actor(thread.id, "bob", ev("thread.actor.left"))
    assert await count() == 2


async def test_a_thread_stored_before_actors_were_counted_is_counted_on_its_next_join(store: Store) -> None:
    assert isinstance(store, MongoStore)
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    await store.engine.db.threads.update_one({"_id": thread.id}, {"$unset": {"actor_count": ""}})

    with pytest.raises(TooManyActors):
        await store.put_actor(actor_rec(thread.id, "carol"), Renderer("j"), max_actors=2)
    assert await store.put_actor(actor_rec(thread.id, "carol"), Renderer("j"), max_actors=3) is not None
    assert (await store.engine.db.threads.find_one({"_id": thread.id}))["actor_count"] == 3
