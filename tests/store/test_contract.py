"""The Store contract: every backend (through the `store` fixture) must pass this suite unchanged.

Each test reads as one clause of the specification in `aitp.store.base`: a mutation writes its
change and its event atomically under the thread's next seq, and reads see exactly what was written.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from aitp.events import payloads
from aitp.ids import new_id
from aitp.store import Store, open_store
from aitp.store.base import (
    ActorRecord,
    AuthorNotMember,
    CapabilityRef,
    DuplicateRef,
    EventRecord,
    MessageRecord,
    NewEvent,
    RefRelease,
    ThreadRecord,
    TooManyActors,
)
from aitp.store.capabilities import CapabilityVersionRecord
from aitp.store.keys import KeyRecord
from tests.conftest import Backend
from tests.support.sqlite_lock import write_lock_held

T0 = 1_700_000_000
_clock = itertools.count(T0)


# --- record builders ---------------------------------------------------------------------------


def tick() -> int:
    """A fresh, increasing timestamp (seconds)."""
    return next(_clock)


def ev(type: str, **data: Any) -> NewEvent:
    return NewEvent(type=type, data=data, created_at=tick())


def thread_rec(creator: str = "alice", **fields: Any) -> ThreadRecord:
    return ThreadRecord(id=new_id("thread"), created_at=tick(), creator=creator, **fields)


def actor_rec(thread_id: str, actor_id: str, **fields: Any) -> ActorRecord:
    fields.setdefault("joined_at", tick())
    return ActorRecord(thread_id=thread_id, id=actor_id, **fields)


def message_rec(thread_id: str, text: str = "hello", actor: str = "alice", **fields: Any) -> MessageRecord:
    return MessageRecord(
        id=new_id("msg"),
        thread_id=thread_id,
        created_at=tick(),
        actor=actor,
        role=fields.pop("role", "user"),
        content=[{"type": "text", "text": {"value": text, "annotations": []}}],
        **fields,
    )


def key_rec(actor: str = "alice", *, admin: bool = False, **fields: Any) -> KeyRecord:
    key_id = new_id("key")
    return KeyRecord(
        id=key_id, hash=f"hash-{key_id}", actor=actor, admin=admin, created_at=tick(), prefix=key_id[-6:], **fields
    )


def message_created(message: MessageRecord) -> NewEvent:
    return NewEvent("thread.message.created", payloads.message_payload(message), tick())


async def make_thread(
    store: Store,
    actors: tuple[str, ...] = ("alice",),
    texts: tuple[str, ...] = (),
    **thread_fields: Any,
) -> tuple[ThreadRecord, list[MessageRecord], list[EventRecord]]:
    """Create a thread whose creator is the first actor, with one message per text."""
    thread = thread_rec(creator=actors[0] if actors else "alice", **thread_fields)
    members = [actor_rec(thread.id, a) for a in actors]
    messages = [message_rec(thread.id, t, actor=thread.creator) for t in texts]
    events = await store.create_thread(
        thread,
        members,
        NewEvent("thread.created", payloads.thread_payload(thread, members), tick()),
        [(m, message_created(m)) for m in messages],
    )
    return thread, messages, events


async def post(store: Store, thread_id: str, text: str = "hello", actor: str = "alice") -> MessageRecord:
    """Append one message that must succeed; returns it with its seq set."""
    message = message_rec(thread_id, text, actor=actor)
    event = await store.append_message(message, message_created(message))
    assert event is not None
    return message


async def seqs(store: Store, thread_id: str) -> list[int]:
    return [e.seq for e in await store.list_events(thread_id, after=0, limit=1000)]


async def texts_of(store: Store, thread_id: str, **query: Any) -> list[str]:
    query.setdefault("limit", 100)
    query.setdefault("order", "asc")
    return [m.content[0]["text"]["value"] for m in await store.list_messages(thread_id, **query)]


@dataclass
class Renderer:
    """A render callback that records its arguments and returns a fixed event type."""

    type: str
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def __call__(self, *args: Any) -> NewEvent:
        self.calls.append(args)
        return ev(self.type, call=len(self.calls))


# --- create_thread / get_thread ----------------------------------------------------------------


async def test_create_thread_numbers_events_from_1_with_thread_created_first(store: Store) -> None:
    thread, messages, events = await make_thread(store, ("alice", "bob"), ("one", "two", "three"))

    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert [e.type for e in events] == ["thread.created"] + ["thread.message.created"] * 3
    assert all(e.thread_id == thread.id for e in events)
    assert events[0].data["thread"]["id"] == thread.id
    assert [e.data["id"] for e in events[1:]] == [m.id for m in messages]


async def test_create_thread_gives_each_initial_message_the_seq_of_its_event(store: Store) -> None:
    thread, messages, events = await make_thread(store, ("alice",), ("one", "two"))

    assert [m.seq for m in messages] == [e.seq for e in events[1:]] == [2, 3]
    stored = await store.list_messages(thread.id, limit=10, order="asc")
    assert stored == messages


async def test_create_thread_without_messages_writes_only_thread_created(store: Store) -> None:
    thread, _, events = await make_thread(store)

    assert [(e.seq, e.type) for e in events] == [(1, "thread.created")]
    assert await store.list_messages(thread.id, limit=10, order="asc") == []
    assert (await store.get_thread(thread.id)).last_seq == 1  # type: ignore[union-attr]


async def test_create_thread_stores_the_event_log_it_returns(store: Store) -> None:
    thread, _, events = await make_thread(store, ("alice",), ("one", "two"))

    assert await store.list_events(thread.id, after=0, limit=100) == events


async def test_get_thread_returns_every_field_and_last_seq(store: Store) -> None:
    thread, _, _ = await make_thread(
        store,
        ("alice",),
        ("one",),
        metadata={"topic": "billing", "lang": "en"},
        parent_id=new_id("thread"),
        tool_resources={"file_search": {"vector_store_ids": ["vs_1", "vs_2"]}, "nested": {"n": 1.5, "ok": True}},
    )

    assert await store.get_thread(thread.id) == replace(thread, last_seq=2)


async def test_get_thread_defaults_round_trip(store: Store) -> None:
    """Empty metadata, no parent and no tool_resources come back as such."""
    thread, _, _ = await make_thread(store)

    got = await store.get_thread(thread.id)
    assert got is not None
    assert (got.metadata, got.parent_id, got.tool_resources) == ({}, None, None)


async def test_get_thread_of_unknown_id_is_none(store: Store) -> None:
    assert await store.get_thread(new_id("thread")) is None


async def test_list_actors_keeps_the_given_order_and_fields(store: Store) -> None:
    thread = thread_rec()
    actors = [
        actor_rec(thread.id, "zed", capabilities=[{"type": "payments", "currency": ["USD", "NEAR"]}]),
        actor_rec(thread.id, "alice", client_id="cli_1"),
        actor_rec(thread.id, "mike", capabilities=[{"type": "a"}, {"type": "b"}], client_id="cli_2"),
    ]
    await store.create_thread(thread, actors, ev("thread.created"), [])

    assert await store.list_actors(thread.id) == actors


async def test_list_actors_of_unknown_thread_is_empty(store: Store) -> None:
    assert await store.list_actors(new_id("thread")) == []


async def test_open_is_idempotent(store: Store) -> None:
    thread, _, _ = await make_thread(store)

    await store.open()

    assert (await store.get_thread(thread.id)) is not None


# --- update_thread -----------------------------------------------------------------------------


async def test_update_thread_metadata_leaves_tool_resources_alone(store: Store) -> None:
    thread, _, _ = await make_thread(
        store, metadata={"a": "1"}, tool_resources={"code_interpreter": {"file_ids": ["f"]}}
    )

    result = await store.update_thread(thread.id, {"metadata": {"b": "2"}}, Renderer("thread.updated"))

    assert result is not None
    updated, event = result
    expected = replace(thread, metadata={"b": "2"}, last_seq=2)
    assert updated == expected
    assert await store.get_thread(thread.id) == expected
    assert (event.seq, event.type, event.thread_id) == (2, "thread.updated", thread.id)


async def test_update_thread_tool_resources_leaves_metadata_alone(store: Store) -> None:
    thread, _, _ = await make_thread(store, metadata={"a": "1"})

    result = await store.update_thread(
        thread.id, {"tool_resources": {"file_search": {"vector_store_ids": ["vs"]}}}, Renderer("thread.updated")
    )

    assert result is not None
    expected = replace(thread, tool_resources={"file_search": {"vector_store_ids": ["vs"]}}, last_seq=2)
    assert result[0] == expected
    assert await store.get_thread(thread.id) == expected


async def test_update_thread_sets_metadata_and_tool_resources_together(store: Store) -> None:
    thread, _, _ = await make_thread(store, metadata={"a": "1"}, tool_resources={"x": {}})

    await store.update_thread(thread.id, {"metadata": {}, "tool_resources": {"y": {"z": [1]}}}, Renderer("u"))

    got = await store.get_thread(thread.id)
    assert got is not None
    assert (got.metadata, got.tool_resources) == ({}, {"y": {"z": [1]}})


async def test_update_thread_can_clear_tool_resources(store: Store) -> None:
    thread, _, _ = await make_thread(store, tool_resources={"x": {"y": 1}})

    await store.update_thread(thread.id, {"tool_resources": None}, Renderer("u"))

    assert (await store.get_thread(thread.id)).tool_resources is None  # type: ignore[union-attr]


async def test_update_thread_renders_from_the_state_after_the_write(store: Store) -> None:
    """`render` sees the new metadata and the current actors; its event is stored under the next seq."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("one",), metadata={"old": "yes"})
    carol = actor_rec(thread.id, "carol")
    await store.put_actor(carol, Renderer("thread.actor.joined"))  # seq 3
    render = Renderer("thread.updated")

    result = await store.update_thread(thread.id, {"metadata": {"new": "yes"}}, render)

    assert len(render.calls) == 1
    seen_thread, seen_actors = render.calls[0]
    assert seen_thread.id == thread.id
    assert seen_thread.metadata == {"new": "yes"}
    assert [a.id for a in seen_actors] == ["alice", "bob", "carol"]
    assert result is not None
    _, event = result
    assert event == EventRecord(
        thread_id=thread.id, seq=4, type="thread.updated", created_at=event.created_at, data={"call": 1}
    )
    assert (await store.list_events(thread.id, after=3, limit=10)) == [event]


async def test_update_thread_of_unknown_thread_is_none_and_does_not_render(store: Store) -> None:
    render = Renderer("thread.updated")

    assert await store.update_thread(new_id("thread"), {"metadata": {"a": "b"}}, render) is None
    assert render.calls == []


# --- delete_thread -----------------------------------------------------------------------------


async def test_delete_thread_keeps_only_a_final_event_after_the_last_seq(store: Store) -> None:
    thread, messages, _ = await make_thread(store, ("alice", "bob"), ("one", "two"))
    await post(store, thread.id, "three")  # seq 4

    final = await store.delete_thread(thread.id, ev("thread.deleted", id=thread.id, deleted=True))

    assert final is not None
    assert (final.thread_id, final.seq, final.type) == (thread.id, 5, "thread.deleted")
    assert final.data == {"id": thread.id, "deleted": True}
    assert await store.list_events(thread.id, after=0, limit=100) == [final]


async def test_delete_thread_removes_thread_messages_and_actors(store: Store) -> None:
    thread, messages, _ = await make_thread(store, ("alice", "bob"), ("one", "two"))

    await store.delete_thread(thread.id, ev("thread.deleted"))

    assert await store.get_thread(thread.id) is None
    assert await store.list_messages(thread.id, limit=100, order="asc") == []
    assert await store.get_message(thread.id, messages[0].id) is None
    assert await store.list_actors(thread.id) == []


async def test_delete_thread_twice_returns_none_and_writes_nothing(store: Store) -> None:
    thread, _, _ = await make_thread(store)
    final = await store.delete_thread(thread.id, ev("thread.deleted"))

    assert await store.delete_thread(thread.id, ev("thread.deleted")) is None
    assert await store.list_events(thread.id, after=0, limit=100) == [final]


async def test_delete_thread_of_unknown_thread_is_none(store: Store) -> None:
    unknown = new_id("thread")

    assert await store.delete_thread(unknown, ev("thread.deleted")) is None
    assert await store.list_events(unknown, after=0, limit=100) == []


async def test_deleted_thread_refuses_every_mutation_without_writing_events(store: Store) -> None:
    thread, messages, _ = await make_thread(store, ("alice", "bob"), ("one",))
    final = await store.delete_thread(thread.id, ev("thread.deleted"))
    render = Renderer("never")

    assert await store.update_thread(thread.id, {"metadata": {"a": "b"}}, render) is None
    assert await store.put_actor(actor_rec(thread.id, "carol"), render) is None
    assert await store.remove_actor(thread.id, "bob", ev("thread.actor.left")) is None
    assert await store.append_message(message_rec(thread.id), ev("thread.message.created")) is None
    assert await store.update_message_metadata(thread.id, messages[0].id, {"a": "b"}, render) is None
    assert await store.delete_message(thread.id, messages[0].id, ev("thread.message.deleted")) is None
    assert render.calls == []
    assert await store.list_events(thread.id, after=0, limit=100) == [final]
    assert await store.list_messages(thread.id, limit=100, order="asc") == []
    assert await store.list_actors(thread.id) == []


# --- list_threads ------------------------------------------------------------------------------


async def make_threads(store: Store) -> list[ThreadRecord]:
    """Five threads created in order: alice is in 0, 1, 3; bob in 1, 2, 4."""
    members = [("alice",), ("alice", "bob"), ("bob",), ("alice",), ("bob",)]
    return [(await make_thread(store, m))[0] for m in members]


def ids(threads: list[ThreadRecord]) -> list[str]:
    return [t.id for t in threads]


async def test_list_threads_for_an_actor_returns_only_its_threads_by_id(store: Store) -> None:
    t = await make_threads(store)

    assert ids(await store.list_threads("alice", limit=10, order="asc")) == ids([t[0], t[1], t[3]])
    assert ids(await store.list_threads("bob", limit=10, order="desc")) == ids([t[4], t[2], t[1]])
    assert await store.list_threads("nobody", limit=10, order="asc") == []


async def test_list_threads_for_all_actors(store: Store) -> None:
    t = await make_threads(store)

    assert ids(await store.list_threads(None, limit=10, order="asc")) == ids(t)
    assert ids(await store.list_threads(None, limit=10, order="desc")) == ids(t[::-1])


async def test_list_threads_returns_full_records(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",), ("hi",), metadata={"k": "v"}, tool_resources={"a": {}})

    expected = [replace(thread, last_seq=2)]
    assert await store.list_threads("alice", limit=10, order="asc") == expected
    assert await store.list_threads(None, limit=10, order="asc") == expected


async def test_list_threads_limit(store: Store) -> None:
    t = await make_threads(store)

    assert ids(await store.list_threads(None, limit=2, order="asc")) == ids(t[:2])
    assert ids(await store.list_threads(None, limit=2, order="desc")) == ids([t[4], t[3]])
    assert ids(await store.list_threads("alice", limit=2, order="asc")) == ids([t[0], t[1]])
    assert ids(await store.list_threads("bob", limit=1, order="desc")) == ids([t[4]])


async def test_list_threads_after_and_before_in_ascending_order(store: Store) -> None:
    """Ascending: `after` excludes ids <= it, `before` excludes ids >= it."""
    t = await make_threads(store)

    assert ids(await store.list_threads(None, limit=10, order="asc", after=t[1].id)) == ids(t[2:])
    assert ids(await store.list_threads(None, limit=10, order="asc", before=t[3].id)) == ids(t[:3])
    assert ids(await store.list_threads(None, limit=10, order="asc", after=t[0].id, before=t[4].id)) == ids(t[1:4])
    assert ids(await store.list_threads(None, limit=2, order="asc", after=t[0].id, before=t[4].id)) == ids(t[1:3])
    assert ids(await store.list_threads("alice", limit=10, order="asc", after=t[0].id)) == ids([t[1], t[3]])
    assert ids(await store.list_threads("bob", limit=10, order="asc", before=t[4].id)) == ids([t[1], t[2]])


async def test_list_threads_after_and_before_in_descending_order(store: Store) -> None:
    """Descending: `after` is a cursor from the newest end (ids < it), `before` keeps ids > it."""
    t = await make_threads(store)

    assert ids(await store.list_threads(None, limit=10, order="desc", after=t[3].id)) == ids(t[2::-1])
    assert ids(await store.list_threads(None, limit=10, order="desc", before=t[1].id)) == ids(t[:1:-1])
    assert ids(await store.list_threads(None, limit=10, order="desc", after=t[4].id, before=t[0].id)) == ids(t[3:0:-1])
    assert ids(await store.list_threads(None, limit=2, order="desc", after=t[4].id, before=t[0].id)) == ids(
        [t[3], t[2]]
    )
    assert ids(await store.list_threads("alice", limit=10, order="desc", after=t[3].id)) == ids([t[1], t[0]])
    assert ids(await store.list_threads("bob", limit=10, order="desc", before=t[1].id)) == ids([t[4], t[2]])


async def test_list_threads_pages_through_everything_with_after(store: Store) -> None:
    t = await make_threads(store)
    for order, expected in (("asc", t), ("desc", t[::-1])):
        seen: list[ThreadRecord] = []
        cursor: str | None = None
        while page := await store.list_threads(None, limit=2, order=order, after=cursor):  # type: ignore[arg-type]
            seen += page
            cursor = page[-1].id
        assert ids(seen) == ids(expected)


async def test_list_threads_excludes_deleted_threads(store: Store) -> None:
    t = await make_threads(store)

    await store.delete_thread(t[1].id, ev("thread.deleted"))

    assert ids(await store.list_threads(None, limit=10, order="asc")) == ids([t[0], t[2], t[3], t[4]])
    assert ids(await store.list_threads("alice", limit=10, order="asc")) == ids([t[0], t[3]])
    assert ids(await store.list_threads("bob", limit=10, order="desc")) == ids([t[4], t[2]])


async def test_list_threads_follows_membership_changes(store: Store) -> None:
    t = await make_threads(store)

    await store.remove_actor(t[1].id, "alice", ev("thread.actor.left"))
    await store.put_actor(actor_rec(t[2].id, "alice"), Renderer("thread.actor.joined"))

    assert ids(await store.list_threads("alice", limit=10, order="asc")) == ids([t[0], t[2], t[3]])


# --- put_actor / remove_actor ------------------------------------------------------------------


async def test_put_actor_appends_a_new_member_and_renders_joined(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"))
    carol = actor_rec(thread.id, "carol", capabilities=[{"type": "x"}], client_id="cli")
    render = Renderer("thread.actor.joined")

    result = await store.put_actor(carol, render)

    assert render.calls == [(carol, True)]
    assert result is not None
    stored, event = result
    assert stored == carol
    assert (event.thread_id, event.seq, event.type) == (thread.id, 2, "thread.actor.joined")
    assert [a.id for a in await store.list_actors(thread.id)] == ["alice", "bob", "carol"]
    assert (await store.list_actors(thread.id))[-1] == carol
    assert await store.list_events(thread.id, after=1, limit=10) == [event]


async def test_put_actor_updates_an_existing_member_in_place(store: Store) -> None:
    """Capabilities and client_id are replaced; joined_at and position are kept; render gets joined=False."""
    thread, _, _ = await make_thread(store, ("alice", "bob", "carol"))
    alice, bob, carol = await store.list_actors(thread.id)
    change = actor_rec(
        thread.id, "bob", capabilities=[{"type": "new"}], client_id="cli_new", joined_at=bob.joined_at + 99
    )
    render = Renderer("thread.actor.updated")

    result = await store.put_actor(change, render)

    expected = replace(change, joined_at=bob.joined_at)
    assert render.calls == [(expected, False)]
    assert result is not None
    stored, event = result
    assert stored == expected
    assert (event.thread_id, event.seq, event.type) == (thread.id, 2, "thread.actor.updated")
    assert await store.list_actors(thread.id) == [alice, expected, carol]


async def test_put_actor_can_clear_client_id_and_capabilities(store: Store) -> None:
    thread = thread_rec()
    await store.create_thread(
        thread, [actor_rec(thread.id, "alice", client_id="cli", capabilities=[{"type": "x"}])], ev("thread.created"), []
    )

    await store.put_actor(actor_rec(thread.id, "alice"), Renderer("thread.actor.updated"))

    [alice] = await store.list_actors(thread.id)
    assert (alice.client_id, alice.capabilities) == (None, [])


async def test_put_actor_on_unknown_thread_is_none_and_does_not_render(store: Store) -> None:
    unknown = new_id("thread")
    render = Renderer("thread.actor.joined")

    assert await store.put_actor(actor_rec(unknown, "alice"), render) is None
    assert render.calls == []
    assert await store.list_actors(unknown) == []


async def test_an_actor_that_rejoins_goes_last(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob", "carol"))

    await store.remove_actor(thread.id, "alice", ev("thread.actor.left"))
    await store.put_actor(actor_rec(thread.id, "alice"), Renderer("thread.actor.joined"))

    assert [a.id for a in await store.list_actors(thread.id)] == ["bob", "carol", "alice"]


async def test_remove_actor_removes_a_member_under_the_next_seq(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("hi",))

    event = await store.remove_actor(thread.id, "bob", ev("thread.actor.left", id="bob"))

    assert event is not None
    assert (event.thread_id, event.seq, event.type, event.data) == (thread.id, 3, "thread.actor.left", {"id": "bob"})
    assert [a.id for a in await store.list_actors(thread.id)] == ["alice"]
    assert await store.list_events(thread.id, after=2, limit=10) == [event]


async def test_remove_actor_of_a_non_member_is_none_and_writes_no_event(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"))

    assert await store.remove_actor(thread.id, "carol", ev("thread.actor.left")) is None
    assert await seqs(store, thread.id) == [1]
    assert (await store.get_thread(thread.id)).last_seq == 1  # type: ignore[union-attr]
    assert [a.id for a in await store.list_actors(thread.id)] == ["alice", "bob"]


async def test_remove_actor_twice_is_none_the_second_time(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"))

    assert await store.remove_actor(thread.id, "bob", ev("thread.actor.left")) is not None
    assert await store.remove_actor(thread.id, "bob", ev("thread.actor.left")) is None
    assert await seqs(store, thread.id) == [1, 2]


async def test_remove_actor_on_unknown_thread_is_none(store: Store) -> None:
    assert await store.remove_actor(new_id("thread"), "alice", ev("thread.actor.left")) is None


async def test_removing_the_member_of_one_thread_leaves_other_threads_alone(store: Store) -> None:
    first, _, _ = await make_thread(store, ("alice", "bob"))
    second, _, _ = await make_thread(store, ("alice", "bob"))

    await store.remove_actor(first.id, "bob", ev("thread.actor.left"))

    assert [a.id for a in await store.list_actors(second.id)] == ["alice", "bob"]


# --- append_message / get_message --------------------------------------------------------------


async def test_append_message_takes_the_next_seq_and_sets_it_on_the_message(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("one",))
    message = message_rec(
        thread.id,
        "two",
        actor="bob",
        role="assistant",
        attachments=[{"file_id": "f1", "tools": [{"type": "file_search"}]}],
        metadata={"k": "v"},
        aitp=[{"type": "aitp.decision", "data": {"options": [1, 2]}}],
    )
    new_event = message_created(message)

    event = await store.append_message(message, new_event)

    assert event == EventRecord(
        thread_id=thread.id, seq=3, type=new_event.type, created_at=new_event.created_at, data=new_event.data
    )
    assert message.seq == 3
    assert await store.get_message(thread.id, message.id) == message
    assert (await store.get_thread(thread.id)).last_seq == 3  # type: ignore[union-attr]
    assert await store.list_events(thread.id, after=2, limit=10) == [event]


async def test_append_message_to_unknown_thread_is_none_and_writes_nothing(store: Store) -> None:
    unknown = new_id("thread")
    message = message_rec(unknown)

    assert await store.append_message(message, message_created(message)) is None
    assert await store.get_message(unknown, message.id) is None
    assert await store.list_events(unknown, after=0, limit=10) == []


async def test_append_message_to_deleted_thread_is_none_and_writes_nothing(store: Store) -> None:
    thread, _, _ = await make_thread(store)
    final = await store.delete_thread(thread.id, ev("thread.deleted"))
    message = message_rec(thread.id)

    assert await store.append_message(message, message_created(message)) is None
    assert await store.get_message(thread.id, message.id) is None
    assert await store.list_events(thread.id, after=0, limit=10) == [final]


async def test_append_messages_stores_several_in_order_under_consecutive_seqs(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("one",))  # seqs 1, 2
    batch = [message_rec(thread.id, text, actor="bob") for text in ("two", "three", "four")]

    events = await store.append_messages(thread.id, [(m, message_created(m)) for m in batch])

    assert [e.seq for e in events or []] == [3, 4, 5]
    assert [m.seq for m in batch] == [3, 4, 5]
    assert await texts_of(store, thread.id) == ["one", "two", "three", "four"]


async def test_append_messages_writes_none_when_one_would_repeat_a_ref(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",), ("one",))
    first, second = message_rec(thread.id, "a"), message_rec(thread.id, "b")
    refs = [ref_rec(thread.id, "request_decision", "r1", first), ref_rec(thread.id, "request_decision", "r1", second)]

    with pytest.raises(DuplicateRef):
        await store.append_messages(thread.id, [(m, message_created(m)) for m in (first, second)], refs)

    assert await texts_of(store, thread.id) == ["one"]
    assert await seqs(store, thread.id) == [1, 2]


async def test_append_messages_writes_none_when_an_author_is_not_a_member(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",))
    mine, theirs = message_rec(thread.id, "a"), message_rec(thread.id, "b", actor="mallory")

    with pytest.raises(AuthorNotMember):
        await store.append_messages(thread.id, [(m, message_created(m)) for m in (mine, theirs)])

    assert await texts_of(store, thread.id) == []


async def test_get_message_only_within_its_own_thread(store: Store) -> None:
    first, [message], _ = await make_thread(store, ("alice",), ("hi",))
    second, _, _ = await make_thread(store, ("alice",), ("other",))

    assert await store.get_message(first.id, message.id) == message
    assert await store.get_message(second.id, message.id) is None
    assert await store.get_message(new_id("thread"), message.id) is None


async def test_get_message_of_unknown_id_is_none(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",), ("hi",))

    assert await store.get_message(thread.id, new_id("msg")) is None


# --- list_messages -----------------------------------------------------------------------------


async def thread_with_gapped_messages(store: Store) -> tuple[ThreadRecord, list[MessageRecord]]:
    """Messages m0..m4 at seqs 2, 3, 5, 6, 8 (non-message events fill the gaps)."""
    thread, messages, _ = await make_thread(store, ("alice", "bob"), ("m0", "m1"))
    await store.update_thread(thread.id, {"metadata": {"x": "1"}}, Renderer("thread.updated"))  # 4
    messages.append(await post(store, thread.id, "m2"))  # 5
    messages.append(await post(store, thread.id, "m3", actor="bob"))  # 6
    await store.put_actor(actor_rec(thread.id, "carol"), Renderer("thread.actor.joined"))  # 7
    messages.append(await post(store, thread.id, "m4"))  # 8
    assert [m.seq for m in messages] == [2, 3, 5, 6, 8]
    return thread, messages


async def test_list_messages_in_both_orders(store: Store) -> None:
    thread, messages = await thread_with_gapped_messages(store)

    assert await store.list_messages(thread.id, limit=100, order="asc") == messages
    assert await store.list_messages(thread.id, limit=100, order="desc") == messages[::-1]


async def test_list_messages_limit(store: Store) -> None:
    thread, _ = await thread_with_gapped_messages(store)

    assert await texts_of(store, thread.id, limit=2, order="asc") == ["m0", "m1"]
    assert await texts_of(store, thread.id, limit=2, order="desc") == ["m4", "m3"]
    assert await texts_of(store, thread.id, limit=1, order="asc", after_seq=3) == ["m2"]


async def test_list_messages_bounds_in_ascending_order(store: Store) -> None:
    """Ascending: `after_seq` keeps seq > it, `before_seq` keeps seq < it."""
    thread, _ = await thread_with_gapped_messages(store)

    assert await texts_of(store, thread.id, after_seq=3) == ["m2", "m3", "m4"]
    assert await texts_of(store, thread.id, after_seq=4) == ["m2", "m3", "m4"]
    assert await texts_of(store, thread.id, before_seq=5) == ["m0", "m1"]
    assert await texts_of(store, thread.id, after_seq=2, before_seq=8) == ["m1", "m2", "m3"]
    assert await texts_of(store, thread.id, after_seq=8) == []
    assert await texts_of(store, thread.id, before_seq=2) == []


async def test_list_messages_bounds_in_descending_order(store: Store) -> None:
    """Descending: `after_seq` is a cursor from the newest end (seq < it), `before_seq` keeps seq > it."""
    thread, _ = await thread_with_gapped_messages(store)

    assert await texts_of(store, thread.id, order="desc", after_seq=6) == ["m2", "m1", "m0"]
    assert await texts_of(store, thread.id, order="desc", before_seq=3) == ["m4", "m3", "m2"]
    assert await texts_of(store, thread.id, order="desc", after_seq=8, before_seq=2) == ["m3", "m2", "m1"]
    assert await texts_of(store, thread.id, order="desc", after_seq=8, before_seq=2, limit=2) == ["m3", "m2"]
    assert await texts_of(store, thread.id, order="desc", after_seq=2) == []


async def test_list_messages_only_lists_the_given_thread(store: Store) -> None:
    first, _, _ = await make_thread(store, ("alice",), ("a1", "a2"))
    second, _, _ = await make_thread(store, ("alice",), ("b1",))

    assert await texts_of(store, first.id) == ["a1", "a2"]
    assert await texts_of(store, second.id) == ["b1"]
    assert await texts_of(store, new_id("thread")) == []


# --- update_message_metadata / delete_message --------------------------------------------------


async def test_update_message_metadata_renders_the_updated_message(store: Store) -> None:
    thread, [message], _ = await make_thread(store, ("alice",), ("hi",))
    render = Renderer("thread.message.updated")

    result = await store.update_message_metadata(thread.id, message.id, {"tag": "urgent"}, render)

    expected = replace(message, metadata={"tag": "urgent"})
    assert render.calls == [(expected,)]
    assert result is not None
    updated, event = result
    assert updated == expected
    assert (event.thread_id, event.seq, event.type) == (thread.id, 3, "thread.message.updated")
    assert await store.get_message(thread.id, message.id) == expected
    assert await store.list_events(thread.id, after=2, limit=10) == [event]


async def test_update_message_metadata_replaces_the_whole_map(store: Store) -> None:
    thread = thread_rec()
    message = message_rec(thread.id, metadata={"a": "1", "b": "2"})
    await store.create_thread(
        thread, [actor_rec(thread.id, "alice")], ev("thread.created"), [(message, message_created(message))]
    )

    await store.update_message_metadata(thread.id, message.id, {"c": "3"}, Renderer("u"))

    assert (await store.get_message(thread.id, message.id)).metadata == {"c": "3"}  # type: ignore[union-attr]


async def test_update_message_metadata_of_unknown_message_is_none_and_writes_nothing(store: Store) -> None:
    thread, [message], _ = await make_thread(store, ("alice",), ("hi",))
    other, _, _ = await make_thread(store)
    render = Renderer("thread.message.updated")

    assert await store.update_message_metadata(thread.id, new_id("msg"), {"a": "b"}, render) is None
    assert await store.update_message_metadata(other.id, message.id, {"a": "b"}, render) is None
    assert await store.update_message_metadata(new_id("thread"), message.id, {"a": "b"}, render) is None
    assert render.calls == []
    assert await seqs(store, thread.id) == [1, 2]
    assert await seqs(store, other.id) == [1]
    assert await store.get_message(thread.id, message.id) == message


async def test_delete_message_removes_it_under_the_next_seq(store: Store) -> None:
    thread, [first, second], _ = await make_thread(store, ("alice",), ("one", "two"))

    event = await store.delete_message(thread.id, first.id, ev("thread.message.deleted", id=first.id))

    assert event is not None
    assert (event.thread_id, event.seq, event.type, event.data) == (
        thread.id,
        4,
        "thread.message.deleted",
        {"id": first.id},
    )
    assert await store.get_message(thread.id, first.id) is None
    assert await store.list_messages(thread.id, limit=10, order="asc") == [second]
    assert await store.list_events(thread.id, after=3, limit=10) == [event]


async def test_delete_message_of_unknown_message_is_none_and_writes_nothing(store: Store) -> None:
    thread, [message], _ = await make_thread(store, ("alice",), ("hi",))
    other, _, _ = await make_thread(store)

    assert await store.delete_message(thread.id, new_id("msg"), ev("thread.message.deleted")) is None
    assert await store.delete_message(other.id, message.id, ev("thread.message.deleted")) is None
    assert await seqs(store, thread.id) == [1, 2]
    assert await seqs(store, other.id) == [1]
    assert await store.get_message(thread.id, message.id) == message


async def test_delete_message_twice_is_none_the_second_time(store: Store) -> None:
    thread, [message], _ = await make_thread(store, ("alice",), ("hi",))

    assert await store.delete_message(thread.id, message.id, ev("thread.message.deleted")) is not None
    assert await store.delete_message(thread.id, message.id, ev("thread.message.deleted")) is None
    assert await seqs(store, thread.id) == [1, 2, 3]


async def test_a_deleted_messages_seq_is_never_reused(store: Store) -> None:
    thread, [message], _ = await make_thread(store, ("alice",), ("hi",))
    await store.delete_message(thread.id, message.id, ev("thread.message.deleted"))  # 3

    again = await post(store, thread.id, "again")

    assert again.seq == 4


# --- list_events -------------------------------------------------------------------------------


async def test_list_events_after_and_limit(store: Store) -> None:
    thread, _, events = await make_thread(store, ("alice",), ("a", "b", "c", "d"))

    assert await store.list_events(thread.id, after=0, limit=100) == events
    assert await store.list_events(thread.id, after=2, limit=100) == events[2:]
    assert await store.list_events(thread.id, after=1, limit=2) == events[1:3]
    assert await store.list_events(thread.id, after=0, limit=1) == events[:1]
    assert await store.list_events(thread.id, after=5, limit=100) == []
    assert await store.list_events(thread.id, after=99, limit=100) == []


async def test_list_events_only_lists_the_given_thread(store: Store) -> None:
    first, _, _ = await make_thread(store, ("alice",), ("a", "b"))
    second, _, _ = await make_thread(store, ("alice",), ("c",))

    assert {e.thread_id for e in await store.list_events(first.id, after=0, limit=100)} == {first.id}
    assert await seqs(store, first.id) == [1, 2, 3]
    assert await seqs(store, second.id) == [1, 2]
    assert await store.list_events(new_id("thread"), after=0, limit=100) == []


async def test_list_events_round_trips_event_data(store: Store) -> None:
    thread, _, _ = await make_thread(store)
    data = {
        "s": "é ✓",
        "n": 3,
        "f": 2.5,
        "b": False,
        "none": None,
        "list": [1, "two", {"three": [3]}],
        "obj": {"a": {}},
    }
    new_event = NewEvent("custom", data, tick())

    await store.put_actor(actor_rec(thread.id, "bob"), lambda actor, joined: new_event)

    [event] = await store.list_events(thread.id, after=1, limit=10)
    assert event == EventRecord(thread_id=thread.id, seq=2, type="custom", created_at=new_event.created_at, data=data)


async def test_append_event_logs_an_event_alone_under_the_next_seq_for_every_member(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("m0",))  # 1, 2

    logged = await store.append_event(thread.id, ev("thread.message.refused", actor="bob"))

    assert logged is not None and (logged.seq, logged.type, logged.data) == (
        3,
        "thread.message.refused",
        {"actor": "bob"},
    )
    assert await store.list_events(thread.id, after=2, limit=10) == [logged]
    assert (await store.get_thread(thread.id)).last_seq == 3  # type: ignore[union-attr]
    assert await texts_of(store, thread.id) == ["m0"]  # an event, no message
    for actor in ("alice", "bob"):
        assert (await store.list_inbox_events(actor, 0, limit=100))[-1].gid == logged.gid


async def test_append_event_to_an_unknown_or_deleted_thread_is_none(store: Store) -> None:
    thread, _, _ = await make_thread(store)
    final = await store.delete_thread(thread.id, ev("thread.deleted"))

    assert await store.append_event(thread.id, ev("thread.message.refused")) is None
    assert await store.append_event(new_id("thread"), ev("thread.message.refused")) is None
    assert await store.list_events(thread.id, after=0, limit=100) == [final]


async def test_events_stay_contiguous_across_mixed_mutations(store: Store) -> None:
    thread, [m0], _ = await make_thread(store, ("alice", "bob"), ("m0",))  # 1, 2
    await store.update_thread(thread.id, {"metadata": {"a": "1"}}, Renderer("thread.updated"))  # 3
    await store.put_actor(actor_rec(thread.id, "carol"), Renderer("thread.actor.joined"))  # 4
    await store.put_actor(actor_rec(thread.id, "carol", client_id="c"), Renderer("thread.actor.updated"))  # 5
    m1 = await post(store, thread.id, "m1")  # 6
    await store.update_message_metadata(thread.id, m1.id, {"x": "y"}, Renderer("thread.message.updated"))  # 7
    await store.delete_message(thread.id, m0.id, ev("thread.message.deleted"))  # 8
    await store.remove_actor(thread.id, "bob", ev("thread.actor.left"))  # 9
    # refused mutations write nothing
    await store.remove_actor(thread.id, "bob", ev("never"))
    await store.delete_message(thread.id, m0.id, ev("never"))
    await store.update_message_metadata(thread.id, m0.id, {}, Renderer("never"))
    await post(store, thread.id, "m2")  # 10

    events = await store.list_events(thread.id, after=0, limit=100)

    assert [e.seq for e in events] == list(range(1, 11))
    assert [e.type for e in events] == [
        "thread.created",
        "thread.message.created",
        "thread.updated",
        "thread.actor.joined",
        "thread.actor.updated",
        "thread.message.created",
        "thread.message.updated",
        "thread.message.deleted",
        "thread.actor.left",
        "thread.message.created",
    ]
    assert (await store.get_thread(thread.id)).last_seq == 10  # type: ignore[union-attr]


# --- keys --------------------------------------------------------------------------------------


async def test_create_key_then_find_it_by_hash(store: Store) -> None:
    key = key_rec("shop.near", scopes=["threads:read", "threads:write"])

    await store.keys.create(key)

    assert await store.keys.find(key.hash) == key
    assert await store.keys.find("hash-unknown") is None


async def test_list_keys_returns_every_key_in_id_order(store: Store) -> None:
    assert await store.keys.all() == []
    keys = [key_rec("a"), key_rec("b", admin=True), key_rec("c", scopes=["x"])]
    for key in reversed(keys):
        await store.keys.create(key)

    assert await store.keys.all() == keys


async def test_delete_key_is_true_once_then_false(store: Store) -> None:
    keep, drop = key_rec("a"), key_rec("b")
    await store.keys.create(keep)
    await store.keys.create(drop)

    assert await store.keys.delete(drop.id) is True
    assert await store.keys.delete(drop.id) is False
    assert await store.keys.delete(new_id("key")) is False
    assert await store.keys.find(drop.hash) is None
    assert await store.keys.all() == [keep]


async def test_key_expiries_name_the_keys_not_revoked_among_many_with_their_expiry(store: Store) -> None:
    keys = [key_rec(f"actor-{i}", expires_at=None if i % 3 else 1_000 + i) for i in range(1_200)]  # > a statement
    for key in keys:
        await store.keys.create(key)
    revoked = keys[::7]
    for key in revoked:
        await store.keys.delete(key.id)
    asked = [key.id for key in keys] + [new_id("key")]

    kept = [key for key in keys if key not in revoked]
    assert await store.keys.expiries(asked) == {key.id: key.expires_at for key in kept}
    assert await store.keys.expiries([]) == {}


async def test_a_key_keeps_its_expiry(store: Store) -> None:
    expiring, lasting = key_rec("alice", expires_at=1_900_000_000), key_rec("bob")
    for key in (expiring, lasting):
        await store.keys.create(key)
    assert await store.keys.find(expiring.hash) == expiring
    assert await store.keys.find(lasting.hash) == lasting and lasting.expires_at is None
    listed = {key.id: key.expires_at for key in await store.keys.all()}
    assert (listed[expiring.id], listed[lasting.id]) == (1_900_000_000, None)


async def test_purging_expired_keys_deletes_only_those_that_expired_before_the_time_given(store: Store) -> None:
    long_expired, just_expired = key_rec("a", expires_at=1_000), key_rec("b", expires_at=1_999)
    at_the_limit, later, lasting = key_rec("c", expires_at=2_000), key_rec("d", expires_at=5_000), key_rec("e")
    for key in (long_expired, just_expired, at_the_limit, later, lasting):
        await store.keys.create(key)

    assert await store.keys.purge_expired(2_000) == 2
    assert await store.keys.all() == sorted([at_the_limit, later, lasting], key=lambda key: key.id)
    assert await store.keys.purge_expired(2_000) == 0


async def test_has_admin_key_only_while_an_admin_key_exists(store: Store) -> None:
    assert await store.keys.has_admin() is False
    await store.keys.create(key_rec("user"))
    assert await store.keys.has_admin() is False

    admin = key_rec("root", admin=True)
    await store.keys.create(admin)
    assert await store.keys.has_admin() is True
    assert (await store.keys.find(admin.hash)).admin is True  # type: ignore[union-attr]

    await store.keys.delete(admin.id)
    assert await store.keys.has_admin() is False


# --- the store-wide event log (gid) and actor inboxes -----------------------------------------


async def test_every_event_gets_a_store_wide_gid_in_commit_order(store: Store) -> None:
    assert await store.events_since(await store.last_event_gid(), limit=10) == []
    a, _, _ = await make_thread(store, ("alice",), ("a1",))
    b, _, _ = await make_thread(store, ("bob",), ("b1",))
    await post(store, a.id, "a2")

    events = await store.events_since(0, limit=100)
    assert [(e.thread_id, e.seq) for e in events] == [(a.id, 1), (a.id, 2), (b.id, 1), (b.id, 2), (a.id, 3)]
    gids = [e.gid for e in events]
    assert gids == sorted(gids) and len(set(gids)) == 5 and gids[0] > 0
    now = await store.last_event_gid()  # at or after every event written, before every one to come
    assert now >= gids[-1] and await store.events_since(now, limit=10) == []
    await post(store, b.id, "b2", actor="bob")
    assert [e.seq for e in await store.events_since(now, limit=10)] == [3]
    assert [e.seq for e in await store.events_since(gids[2], limit=1)] == [2]
    assert [e.gid for e in await store.list_events(a.id, after=0, limit=10)] == [gids[0], gids[1], gids[4]]


async def test_threads_written_since_names_the_threads_of_the_next_events_and_the_last_gid(store: Store) -> None:
    # what the tailer polls to wake other processes' followers: the threads, each with whether its events may
    # have changed its record or actors (anything but message events), not the events' data
    start = await store.last_event_gid()
    assert await store.threads_written_since(start, limit=10) == (start, {})
    a, _, _ = await make_thread(store, ("alice",), ("a1",))
    b, _, _ = await make_thread(store, ("bob",), ("b1",))
    gids = [e.gid for e in await store.events_since(start, limit=100)]
    assert await store.threads_written_since(start, limit=100) == (gids[-1], {a.id: True, b.id: True})
    assert await store.threads_written_since(start, limit=2) == (gids[1], {a.id: True})
    assert await store.threads_written_since(gids[1], limit=100) == (gids[-1], {b.id: True})
    await post(store, a.id, "a2")
    [message] = await store.events_since(gids[-1], limit=10)
    assert await store.threads_written_since(gids[-1], limit=100) == (message.gid, {a.id: False})  # a message


async def test_an_actor_inbox_holds_the_events_of_its_threads_from_joining_to_leaving(store: Store) -> None:
    shared, _, _ = await make_thread(store, ("alice", "bob"), ("hi",))
    await make_thread(store, ("bob",), ("bob alone",))
    await store.put_actor(actor_rec(shared.id, "carol"), Renderer("thread.actor.added"))
    await post(store, shared.id, "with carol")
    await store.remove_actor(shared.id, "carol", ev("thread.actor.removed"))
    await post(store, shared.id, "without carol")

    def seen(events: list[EventRecord]) -> list[tuple[str, int]]:
        return [(e.type, e.seq) for e in events]

    carol = await store.list_inbox_events("carol", 0, limit=100)
    assert seen(carol) == [("thread.actor.added", 3), ("thread.message.created", 4), ("thread.actor.removed", 5)]
    alice = await store.list_inbox_events("alice", 0, limit=100)
    assert [e.seq for e in alice] == [1, 2, 3, 4, 5, 6] and {e.thread_id for e in alice} == {shared.id}
    assert len(await store.list_inbox_events("bob", 0, limit=100)) == 8
    assert seen(await store.list_inbox_events("alice", alice[3].gid, limit=1)) == [("thread.actor.removed", 5)]


async def test_the_deletion_event_reaches_the_inboxes_of_every_former_member(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("hi",))
    await store.delete_thread(thread.id, ev("thread.deleted"))
    for actor in ("alice", "bob"):
        assert [e.type for e in await store.list_inbox_events(actor, 0, limit=10)] == ["thread.deleted"]


async def test_commit_listeners_hear_of_every_write_to_a_thread(store: Store) -> None:
    # and whether the thread itself (its record, its actors) changed, or only its messages
    heard: list[tuple[str, bool]] = []
    store.add_commit_listener(lambda thread_id, changed: heard.append((thread_id, changed)))
    thread, _, _ = await make_thread(store, ("alice",))
    message = await post(store, thread.id)
    await store.update_message_metadata(thread.id, message.id, {"k": "v"}, Renderer("thread.message.updated"))
    await store.put_actor(actor_rec(thread.id, "bob"), Renderer("thread.actor.added"))
    await store.remove_actor(thread.id, "bob", ev("thread.actor.removed"))
    await store.update_thread(thread.id, {"metadata": {"a": "b"}}, Renderer("thread.updated"))
    await store.delete_message(thread.id, message.id, ev("thread.message.deleted"))
    await store.delete_thread(thread.id, ev("thread.deleted"))
    changed = [True, False, False, True, True, True, False, True]
    assert heard == [(thread.id, c) for c in changed]


# --- capability registry ---------------------------------------------------------------------


def capability_rec(
    capability_id: str = "acme-orders", version: str = "1.0.0", **fields: Any
) -> CapabilityVersionRecord:
    defaults: dict[str, Any] = {
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": "#/$defs/order",
            "$defs": {"order": {"type": "object", "required": ["order"], "properties": {"order": {"type": "string"}}}},
        },
        "examples": [{"$schema": "x", "order": "socks"}],
        "aliases": ["https://acme.example/orders.json"],
        "title": "Orders",
        "description": "Acme orders",
        "openapi_root": None,
        "created_at": tick(),
        "created_by": "dev.acme",
    }
    return CapabilityVersionRecord(id=capability_id, version=version, **{**defaults, **fields})


async def test_registered_capability_versions_round_trip_in_registration_order(store: Store) -> None:
    """Schemas keep their `$`-keys intact (MongoDB stores them as JSON text)."""
    assert await store.capabilities.all() == []
    second, first = capability_rec(version="1.1.0"), capability_rec(version="1.0.0")
    other = capability_rec("acme-returns", title=None, description=None, aliases=[], examples=[])

    for record in (second, first, other):
        assert await store.capabilities.register(record) == record

    assert await store.capabilities.all() == [second, first, other]
    # what an instance following the store asks once it has the first two: the new one only
    seen = {(second.id, second.version), (first.id, first.version)}
    assert await store.capabilities.all(skip=seen) == [other]


async def test_the_first_registration_of_an_id_and_version_wins(store: Store) -> None:
    original = capability_rec()
    await store.capabilities.register(original)

    rival = capability_rec(schema={"type": "object"}, created_by="someone.else")
    assert await store.capabilities.register(rival) == original
    assert await store.capabilities.all() == [original]


async def test_racing_registrations_of_one_version_store_exactly_one(store: Store) -> None:
    rivals = [capability_rec(created_by=f"dev{i}", schema={"title": str(i)}) for i in range(8)]
    results = await asyncio.gather(*(store.capabilities.register(r) for r in rivals))

    stored = await store.capabilities.all()
    assert len(stored) == 1 and stored[0] in rivals
    assert all(result == stored[0] for result in results)


# --- persistence -------------------------------------------------------------------------------


async def test_everything_survives_closing_and_reopening_the_store(store: Store, backend: Any) -> None:
    """Close the store, open a new one from the same URL: threads, tombstones, events and keys are all there."""
    thread, messages, _ = await make_thread(
        store, ("alice", "bob"), ("one", "two"), metadata={"k": "v"}, tool_resources={"a": {"b": [1]}}
    )
    messages.append(await post(store, thread.id, "three", actor="bob"))
    await store.update_thread(thread.id, {"metadata": {"k": "w"}}, Renderer("thread.updated"))
    gone, _, _ = await make_thread(store, ("alice",), ("bye",))
    await store.delete_thread(gone.id, ev("thread.deleted"))
    key = key_rec("alice", admin=True, scopes=["s"])
    await store.keys.create(key)
    await store.capabilities.register(capability_rec())

    async def snapshot(s: Store) -> tuple[object, ...]:
        return (
            await s.get_thread(thread.id),
            await s.list_actors(thread.id),
            await s.list_messages(thread.id, limit=100, order="asc"),
            await s.list_events(thread.id, after=0, limit=100),
            await s.list_events(gone.id, after=0, limit=100),
            await s.list_threads(None, limit=100, order="asc"),
            await s.keys.all(),
            await s.capabilities.all(),
        )

    before = await snapshot(store)
    await store.close()

    reopened = open_store(backend.url)
    await reopened.open()
    try:
        assert await snapshot(reopened) == before
        assert before[0] == replace(thread, metadata={"k": "w"}, last_seq=5)
        assert before[2] == messages
        assert await reopened.get_thread(gone.id) is None
        assert await reopened.keys.find(key.hash) == key
        assert await reopened.keys.has_admin() is True
        assert [r.id for r in before[7]] == ["acme-orders"]
        # and the seq carries on where it stopped
        assert (await reopened.append_message(message_rec(thread.id), ev("thread.message.created"))).seq == 6  # type: ignore[union-attr]
    finally:
        await reopened.close()


# --- concurrency -------------------------------------------------------------------------------


async def test_concurrent_appends_to_one_thread_get_distinct_contiguous_seqs(store: Store, xfail_on_nx: Any) -> None:
    """30 appends racing on one thread: none is lost and seqs 2..31 are each used exactly once."""
    xfail_on_nx("concurrent transactions fail with 'no such savepoint'")
    thread, _, _ = await make_thread(store)
    messages = [message_rec(thread.id, f"m{i}") for i in range(30)]

    events = await asyncio.gather(*(store.append_message(m, message_created(m)) for m in messages))

    assert all(e is not None for e in events)
    assert sorted(e.seq for e in events) == list(range(2, 32))  # type: ignore[union-attr]
    assert sorted(m.seq for m in messages) == list(range(2, 32))
    assert all(m.seq == e.seq for m, e in zip(messages, events, strict=True))  # type: ignore[union-attr]
    assert await seqs(store, thread.id) == list(range(1, 32))
    stored = await store.list_messages(thread.id, limit=100, order="asc")
    assert sorted(m.id for m in stored) == sorted(m.id for m in messages)
    assert [m.seq for m in stored] == list(range(2, 32))
    assert (await store.get_thread(thread.id)).last_seq == 31  # type: ignore[union-attr]


# --- membership follow-up events ------------------------------------------------------------------


async def test_put_actor_follow_up_sees_members_before_and_after_and_adds_one_event(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice",), ())
    seen: list[tuple[list[str], list[str]]] = []

    def follow_up(before: list[ActorRecord], after: list[ActorRecord]) -> NewEvent | None:
        seen.append(([a.id for a in before], [a.id for a in after]))
        return ev("thread.capabilities.updated")

    await store.put_actor(actor_rec(thread.id, "bob"), Renderer("thread.actor.joined"), follow_up)
    assert seen == [(["alice"], ["alice", "bob"])]
    events = await store.list_events(thread.id, after=0, limit=10)
    assert [(e.seq, e.type) for e in events] == [
        (1, "thread.created"),
        (2, "thread.actor.joined"),
        (3, "thread.capabilities.updated"),
    ]


async def test_remove_actor_follow_up_returning_none_adds_nothing(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    seen: list[tuple[list[str], list[str]]] = []

    def follow_up(before: list[ActorRecord], after: list[ActorRecord]) -> NewEvent | None:
        seen.append(([a.id for a in before], [a.id for a in after]))
        return None

    event = await store.remove_actor(thread.id, "bob", ev("thread.actor.left"), follow_up)
    assert event is not None and event.seq == 2
    assert seen == [(["alice", "bob"], ["alice"])]
    assert await seqs(store, thread.id) == [1, 2]
    assert await store.remove_actor(thread.id, "bob", ev("thread.actor.left"), follow_up) is None
    assert len(seen) == 1  # no follow-up when nothing changed


# --- capability refs (requests and their answers) ------------------------------------------------


def ref_rec(thread_id: str, kind: str, ref_id: str, message: MessageRecord, **body: Any) -> CapabilityRef:
    return CapabilityRef(
        thread_id=thread_id, kind=kind, ref_id=ref_id, message_id=message.id, actor=message.actor, body=body
    )


async def test_refs_are_stored_with_their_message_and_found_by_kind_and_id(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    request = message_rec(thread.id, "{...}", actor="bob")
    ref = ref_rec(thread.id, "request_decision", "r1", request, type="radio", options=[{"id": "a"}])
    await store.append_message(request, message_created(request), [ref])
    assert await store.get_ref(thread.id, "request_decision", "r1") == ref
    assert await store.get_ref(thread.id, "decision", "r1") is None
    assert await store.get_ref("thread_other", "request_decision", "r1") is None


async def test_an_append_by_an_actor_not_in_the_thread_writes_nothing(store: Store) -> None:
    """Membership is checked in the append's own transaction: an actor removed since it was read cannot post."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    await post(store, thread.id, "from bob", actor="bob")
    await store.remove_actor(thread.id, "bob", ev("thread.actor.removed"))
    late = message_rec(thread.id, "too late", actor="bob")
    with pytest.raises(AuthorNotMember) as raised:
        await store.append_message(late, message_created(late), [ref_rec(thread.id, "decision", "r9", late)])
    assert raised.value.actor == "bob"
    assert await store.get_message(thread.id, late.id) is None
    assert await store.get_ref(thread.id, "decision", "r9") is None
    assert await seqs(store, thread.id) == [1, 2, 3]
    with pytest.raises(AuthorNotMember):
        stranger = message_rec(thread.id, "who?", actor="carol")
        await store.append_message(stranger, message_created(stranger))


async def test_a_second_ref_with_the_same_key_writes_nothing(store: Store) -> None:
    """Answering a request twice is refused atomically: no message, no event, no ref."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    first = message_rec(thread.id, "yes", actor="alice")
    await store.append_message(first, message_created(first), [ref_rec(thread.id, "decision", "r1", first)])
    second = message_rec(thread.id, "no", actor="alice")
    with pytest.raises(DuplicateRef) as raised:
        await store.append_message(second, message_created(second), [ref_rec(thread.id, "decision", "r1", second)])
    assert (raised.value.kind, raised.value.ref_id) == ("decision", "r1")
    assert await store.get_message(thread.id, second.id) is None
    assert await seqs(store, thread.id) == [1, 2]
    assert (await store.get_ref(thread.id, "decision", "r1")).message_id == first.id  # type: ignore[union-attr]


def release_of(ref: CapabilityRef) -> RefRelease:
    return RefRelease(ref.thread_id, ref.kind, ref.ref_id, ref.message_id)


async def test_an_append_releases_refs_and_takes_their_place_atomically(store: Store) -> None:
    """A lifecycle moving on (a retry after a failed payment): the refs it replaces are dropped in the same
    append, each only if the message that wrote it still holds it; else nothing is written."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    failed = message_rec(thread.id, "pay", actor="alice")
    paid = ref_rec(thread.id, "payment", "q1", failed, result="failure")
    await store.append_message(failed, message_created(failed), [paid])
    said = message_rec(thread.id, "failed", actor="bob")
    confirmed = ref_rec(thread.id, "payment_confirmation", "q1", said, result="failure")
    await store.append_message(said, message_created(said), [confirmed])

    retry = message_rec(thread.id, "pay again", actor="alice")
    again = ref_rec(thread.id, "payment", "q1", retry)
    await store.append_message(retry, message_created(retry), [again], [release_of(paid), release_of(confirmed)])
    assert await store.get_ref(thread.id, "payment", "q1") == again
    assert await store.get_ref(thread.id, "payment_confirmation", "q1") is None

    late = message_rec(thread.id, "me too", actor="alice")  # it read the failed payment before the retry
    with pytest.raises(DuplicateRef) as raised:
        await store.append_message(
            late, message_created(late), [ref_rec(thread.id, "payment", "q1", late)], [release_of(paid)]
        )
    assert (raised.value.kind, raised.value.ref_id) == ("payment", "q1")
    assert await store.get_message(thread.id, late.id) is None
    assert await store.get_ref(thread.id, "payment", "q1") == again
    assert await seqs(store, thread.id) == [1, 2, 3, 4]


async def test_deleting_a_message_or_thread_drops_its_refs(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    answer = message_rec(thread.id, "yes", actor="alice")
    await store.append_message(answer, message_created(answer), [ref_rec(thread.id, "decision", "r1", answer)])
    await store.delete_message(thread.id, answer.id, ev("thread.message.deleted"))
    assert await store.get_ref(thread.id, "decision", "r1") is None
    again = message_rec(thread.id, "again", actor="alice")
    await store.append_message(again, message_created(again), [ref_rec(thread.id, "decision", "r1", again)])
    await store.delete_thread(thread.id, ev("thread.deleted"))
    assert await store.get_ref(thread.id, "decision", "r1") is None


async def test_a_thread_is_read_with_its_actors_in_one_call(store: Store) -> None:
    """`get_thread_with_actors`: what `get_thread` and `list_actors` answer, together; None without a thread."""
    thread, _, _ = await make_thread(store, ("alice", "bob"), ("hi",))
    await store.put_actor(actor_rec(thread.id, "carol", client_id="web"), Renderer("thread.actor.joined"))
    await store.remove_actor(thread.id, "bob", ev("thread.actor.left"))
    found = await store.get_thread_with_actors(thread.id)
    assert found == (await store.get_thread(thread.id), await store.list_actors(thread.id))
    assert found is not None and [a.id for a in found[1]] == ["alice", "carol"]
    assert found[0].last_seq == 4
    assert await store.get_thread_with_actors("thread_missing") is None
    await store.delete_thread(thread.id, ev("thread.deleted"))
    assert await store.get_thread_with_actors(thread.id) is None


# --- the actor limit ------------------------------------------------------------------------------


async def test_put_actor_refuses_a_new_actor_beyond_max_actors_and_writes_nothing(store: Store) -> None:
    thread, _, _ = await make_thread(store, ("alice", "bob"), ())
    render = Renderer("thread.actor.joined")
    assert await store.put_actor(actor_rec(thread.id, "carol"), render, max_actors=3) is not None

    with pytest.raises(TooManyActors) as raised:
        await store.put_actor(actor_rec(thread.id, "dave"), render, max_actors=3)
    assert (raised.value.limit, raised.value.count) == (3, 4)
    assert [a.id for a in await store.list_actors(thread.id)] == ["alice", "bob", "carol"]
    assert await seqs(store, thread.id) == [1, 2]
    # a member at the limit may still change its declaration; a departure frees a seat
    assert await store.put_actor(actor_rec(thread.id, "bob", client_id="web"), render, max_actors=3) is not None
    await store.remove_actor(thread.id, "carol", ev("thread.actor.left"))
    assert await store.put_actor(actor_rec(thread.id, "dave"), render, max_actors=3) is not None
    with pytest.raises(TooManyActors):
        await store.put_actor(actor_rec(thread.id, "erin"), render, max_actors=3)
    assert [a.id for a in await store.list_actors(thread.id)] == ["alice", "bob", "dave"]
    # without a limit anyone joins; a limit below the count refuses only newcomers
    assert await store.put_actor(actor_rec(thread.id, "erin"), render) is not None
    with pytest.raises(TooManyActors):
        await store.put_actor(actor_rec(thread.id, "frank"), render, max_actors=2)
    assert await store.put_actor(actor_rec(thread.id, "erin", client_id="cli"), render, max_actors=2) is not None


async def test_concurrent_joins_through_two_stores_never_exceed_max_actors(
    store: Store, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """20 joins at once, half through another store on the same database (another process): exactly the
    seats left are taken, whichever writer reads the thread first."""
    backend.require_isolated_transactions()
    other = open_store(backend.url)
    await other.open()
    try:
        thread, _, _ = await make_thread(store, ("alice",), ())

        async def join(on: Store, actor_id: str) -> bool:
            try:
                return await on.put_actor(actor_rec(thread.id, actor_id), Renderer("j"), max_actors=4) is not None
            except TooManyActors:
                return False

        async with write_lock_held(backend):  # on SQLite: each store finds the file locked and queues its joins
            pending = asyncio.gather(*(join((store, other)[i % 2], f"agent-{i}") for i in range(20)))
        joined = await pending
    finally:
        await other.close()
    assert sum(joined) == 3
    assert len(await store.list_actors(thread.id)) == 4
    assert await seqs(store, thread.id) == [1, 2, 3, 4]


# --- where a deleted message stood -------------------------------------------------------------


async def test_a_deleted_message_keeps_its_place_for_cursors_until_its_thread_goes(store: Store) -> None:
    thread, _, _ = await make_thread(store)
    first, second = await post(store, thread.id, "one"), await post(store, thread.id, "two")
    assert await store.message_seq(thread.id, first.id) == first.seq
    assert await store.delete_message(thread.id, first.id, ev("thread.message.deleted", id=first.id)) is not None
    assert await store.get_message(thread.id, first.id) is None
    assert await store.message_seq(thread.id, first.id) == first.seq
    assert await texts_of(store, thread.id, after_seq=first.seq) == ["two"]
    assert await store.message_seq(thread.id, "msg_never") is None
    other, _, _ = await make_thread(store)
    assert await store.message_seq(other.id, first.id) is None  # a message of another thread is not a place here
    await store.delete_thread(thread.id, ev("thread.deleted", id=thread.id))
    assert await store.message_seq(thread.id, first.id) is None
    assert await store.message_seq(thread.id, second.id) is None
