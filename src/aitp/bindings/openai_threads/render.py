"""Records → wire objects (plain dicts in the shapes documented by `aitp.bindings.openai_threads.models`)."""

from __future__ import annotations

from typing import Any

from aitp.bindings.http.metadata import t01_metadata
from aitp.capabilities.registry import CapabilityInfo, CapabilityRef, CapabilityVersion, version_text
from aitp.events import payloads
from aitp.events.stream import frame_of
from aitp.inputs.shapes import THREAD_DETAILS, shown_detail
from aitp.principals import Principal
from aitp.services.access import role_of
from aitp.services.paging import LogPage
from aitp.store.base import ActorRecord, EventRecord, MessageRecord, ThreadRecord
from aitp.store.keys import KeyRecord


def actor(record: ActorRecord, thread: ThreadRecord) -> dict[str, Any]:
    return actor_in_role(record, role_of(record.id, thread))


def actor_list(thread: ThreadRecord, actors: list[ActorRecord]) -> dict[str, Any]:
    return {"object": "list", "data": [actor(a, thread) for a in actors]}


def actor_in_role(record: ActorRecord, role: str) -> dict[str, Any]:
    return {
        "object": "thread.actor",
        "id": record.id,
        "client_id": record.client_id,
        "role": role,
        "capabilities": record.capabilities,
        "joined_at": record.joined_at,
    }


def thread(record: ThreadRecord, actors: list[ActorRecord]) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "thread",
        "created_at": record.created_at,
        "tool_resources": record.tool_resources,
        "metadata": t01_metadata(record, actors),
        "actors": [actor(a, record) for a in actors],
        "parent_id": record.parent_id,
        "turns": {
            "budget": record.turn_budget,
            "persons": record.persons,
            "agent_turns": record.agent_turns,
            "paused": record.paused,
        },
    }


def message(record: MessageRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "thread.message",
        "created_at": record.created_at,
        "thread_id": record.thread_id,
        "status": "completed",
        "incomplete_details": None,
        "completed_at": record.created_at,
        "incomplete_at": None,
        "role": record.role,
        "content": _shown_content(record.content),
        "assistant_id": None,
        "run_id": None,
        "attachments": record.attachments,
        "metadata": {**record.metadata, "actor": record.actor},
        "aitp": record.aitp,
    }


def _shown_content(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored parts as the Threads face shows them: an image's `detail` one of its values (`shown_detail`)."""
    if all(part["type"] == "text" for part in content):  # most messages: nothing to look at
        return content
    return [_shown_part(part) for part in content]


def _shown_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["type"]
    if kind not in ("image_url", "image_file"):
        return part
    image = part[kind]
    return {**part, kind: {**image, "detail": shown_detail(image.get("detail"), THREAD_DETAILS)}}


def capability_table(thread_id: str, table: dict[str, Any]) -> dict[str, Any]:
    """A thread's negotiated capabilities (`aitp.capabilities.negotiate.negotiate`)."""
    return {
        "object": "thread.capabilities",
        "data": table["capabilities"],
        "unknown": table["unknown"],
        "thread_id": thread_id,
    }


def event_data(record: EventRecord) -> dict[str, Any]:
    """An event's payload as this binding shows it: each neutral record rendered as its wire object
    (`aitp.events.payloads`); a payload written before those existed is that object already."""
    data = record.data
    if payloads.written_before(data):
        return data
    kind = record.type
    if kind == "thread.message.created" or kind == "thread.message.updated":
        return message(payloads.message_of(data))
    if kind == "thread.created" or kind == "thread.updated":
        return thread(*payloads.thread_of(data))
    if kind == "thread.actor.joined" or kind == "thread.actor.updated":
        return actor_in_role(*payloads.actor_of(data))
    if kind == "thread.capabilities.updated":
        return capability_table(record.thread_id, data)
    receipt = _RECEIPTS.get(kind)
    if receipt is not None:
        return deleted(data["id"], receipt)
    return data  # thread.message.refused and any other type: neutral and wire alike


_RECEIPTS = {
    "thread.deleted": "thread.deleted",
    "thread.message.deleted": "thread.message.deleted",
    "thread.actor.left": "thread.actor.deleted",
}


def event(record: EventRecord) -> dict[str, Any]:
    return {
        "seq": record.seq,
        "type": record.type,
        "thread_id": record.thread_id,
        "created_at": record.created_at,
        "data": event_data(record),
    }


def inbox_event(record: EventRecord) -> dict[str, Any]:
    """An event in an actor's inbox: `cursor` (the store-wide position) is what to resume after."""
    return {**event(record), "cursor": record.gid}


# The live streams' renderings (SSE and WebSocket send the same JSON): one object each, the key under which
# a thread's feed keeps this binding's frames for all its subscribers (`aitp.events.hub.ThreadFeed.frames`).
event_frame = frame_of(event, lambda record: record.seq)
inbox_frame = frame_of(inbox_event, lambda record: record.gid)


def event_page(page: LogPage, after: int) -> dict[str, Any]:
    """A page of a thread's events; `last_seq` is what to resume after."""
    last = page.records[-1].seq if page.records else after
    return {"object": "list", "data": [event(r) for r in page.records], "last_seq": last, "has_more": page.has_more}


def inbox_page(page: LogPage, after: int) -> dict[str, Any]:
    """A page of an actor's inbox; `last_cursor` is what to resume after."""
    last = page.records[-1].gid if page.records else after
    data = [inbox_event(r) for r in page.records]
    return {"object": "list", "data": data, "last_cursor": last, "has_more": page.has_more}


def deleted(object_id: str, object_type: str) -> dict[str, Any]:
    return {"id": object_id, "object": object_type, "deleted": True}


def api_key(record: KeyRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "api_key",
        "actor": record.actor,
        "admin": record.admin,
        "scopes": record.scopes,
        "created_at": record.created_at,
        "prefix": record.prefix,
        "expires_at": record.expires_at,
    }


def capability(info: CapabilityInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "object": "capability",
        "title": info.title,
        "description": info.description,
        "versions": [str(v) for v in info.versions],
        "latest": str(info.versions[-1]) if info.versions else None,
        "schema_urls": {str(v): CapabilityRef(info.id, v).url for v in info.versions},
        "example_urls": {str(v): f"/v1/capabilities/{info.id}/{version_text(v)}/examples" for v in info.versions},
        "aliases": info.aliases,
    }


def capability_examples(version: CapabilityVersion) -> dict[str, Any]:
    """A version's example messages, each with its message type."""

    def message_type(message: dict[str, Any]) -> str | None:
        return next((key for key in version.message_types if key in message), None)

    return {
        "object": "list",
        "capability": version.ref.id,
        "version": version_text(version.ref.version),
        "data": [
            {"object": "capability.example", "name": name, "type": message_type(message), "message": message}
            for name, message in sorted(version.examples.items())
        ],
    }


def identity(principal: Principal, inbox_cursor: int) -> dict[str, Any]:
    return {
        "object": "actor.identity",
        "id": principal.actor,
        "admin": principal.admin,
        "key_id": principal.key_id,
        "scopes": sorted(principal.scopes),
        "inbox_cursor": inbox_cursor,
    }
