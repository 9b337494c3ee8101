"""What the event log holds: one protocol-neutral record per event type, written by the services and read
back by each binding, which renders it in its own wire shape.

| event type                                 | payload                                          |
|--------------------------------------------|--------------------------------------------------|
| thread.created, thread.updated             | {"thread": ThreadRecord, "actors": [ActorRecord]} |
| thread.deleted, thread.message.deleted     | {"id": the removed object's id}                  |
| thread.message.created, .updated           | MessageRecord                                    |
| thread.actor.joined, .updated              | ActorRecord + {"role"}                           |
| thread.actor.left                          | {"id": the actor's id}                           |
| thread.capabilities.updated                | {"capabilities": [...], "unknown": [...]}        |
| thread.message.refused                     | the refusal (see `services.messages`)            |
| thread.paused, thread.resumed              | {"thread_id", "turn_budget", "actor"} (`services.turns`) |

Records are stored as plain JSON objects of their fields. Stores written before this module existed hold
OpenAI Threads objects instead; those carry an `object` key, which no record here has (`written_before`).
"""

from __future__ import annotations

from typing import Any

from aitp.store.records import ActorRecord, MessageRecord, ThreadRecord


def written_before(data: dict[str, Any]) -> bool:
    """An event written before the log held neutral records: its payload is already a Threads wire object."""
    return "object" in data


# The fields each record is stored with (a record's own bookkeeping, such as seq, is not part of it).
THREAD_FIELDS = (
    "id",
    "created_at",
    "creator",
    "metadata",
    "parent_id",
    "tool_resources",
    "turn_budget",
    "persons",
    "agent_turns",
    "paused",
)
MESSAGE_FIELDS = ("id", "thread_id", "created_at", "actor", "role", "content", "attachments", "metadata", "aitp")
ACTOR_FIELDS = ("thread_id", "id", "client_id", "capabilities", "joined_at")


def _fields(record: object, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(record, name) for name in names}


def thread_payload(thread: ThreadRecord, actors: list[ActorRecord]) -> dict[str, Any]:
    return {"thread": _fields(thread, THREAD_FIELDS), "actors": [_fields(a, ACTOR_FIELDS) for a in actors]}


def thread_of(data: dict[str, Any]) -> tuple[ThreadRecord, list[ActorRecord]]:
    return ThreadRecord(**data["thread"]), [ActorRecord(**a) for a in data["actors"]]


def message_payload(record: MessageRecord) -> dict[str, Any]:
    return _fields(record, MESSAGE_FIELDS)


def message_of(data: dict[str, Any]) -> MessageRecord:
    return MessageRecord(**data)


def actor_payload(record: ActorRecord, role: str) -> dict[str, Any]:
    """The actor and the role it speaks in (`thread.actor.joined` / `.updated`)."""
    return {**_fields(record, ACTOR_FIELDS), "role": role}


def actor_of(data: dict[str, Any]) -> tuple[ActorRecord, str]:
    fields = dict(data)
    role = fields.pop("role")
    return ActorRecord(**fields), role


def removed_payload(object_id: str) -> dict[str, Any]:
    return {"id": object_id}


def turns_payload(thread_id: str, turn_budget: int, actor: str) -> dict[str, Any]:
    """`thread.paused`: the agent whose message used the last turn ("" when the creator lowered the budget);
    `thread.resumed`: the person whose message resumed it ("" when the creator raised the budget)."""
    return {"thread_id": thread_id, "turn_budget": turn_budget, "actor": actor}
