"""Records → wire objects (plain dicts in the shapes documented by `aitp.bindings.openai_threads.models`)."""

from __future__ import annotations

from typing import Any

import orjson

from aitp.capabilities.registry import CapabilityInfo, CapabilityRef, CapabilityVersion, version_text
from aitp.events.stream import frame_of
from aitp.principals import Principal
from aitp.services.paging import LogPage
from aitp.store.base import ActorRecord, EventRecord, MessageRecord, ThreadRecord
from aitp.store.keys import KeyRecord


def role_of(actor_id: str, thread_creator: str) -> str:
    """AITP: the thread's creator speaks as `user`, every other actor as `assistant`."""
    return "user" if actor_id == thread_creator else "assistant"


def actor(record: ActorRecord, creator: str) -> dict[str, Any]:
    return {
        "object": "thread.actor",
        "id": record.id,
        "client_id": record.client_id,
        "role": role_of(record.id, creator),
        "capabilities": record.capabilities,
        "joined_at": record.joined_at,
    }


def _actors_metadata(actors: list[dict[str, Any]]) -> str:
    # The AITP-T01 wire form: metadata.actors as a JSON string of [{id, client_id?, capabilities}].
    compact = [
        {"id": a["id"], **({"client_id": a["client_id"]} if a["client_id"] else {}), "capabilities": a["capabilities"]}
        for a in actors
    ]
    return orjson.dumps(compact).decode()


def thread(record: ThreadRecord, actors: list[ActorRecord]) -> dict[str, Any]:
    rendered_actors = [actor(a, record.creator) for a in actors]
    metadata = dict(record.metadata)
    metadata["actors"] = _actors_metadata(rendered_actors)
    if record.parent_id is not None:
        metadata["parent_id"] = record.parent_id
    return {
        "id": record.id,
        "object": "thread",
        "created_at": record.created_at,
        "tool_resources": record.tool_resources,
        "metadata": metadata,
        "actors": rendered_actors,
        "parent_id": record.parent_id,
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
        "content": record.content,
        "assistant_id": None,
        "run_id": None,
        "attachments": record.attachments,
        "metadata": {**record.metadata, "actor": record.actor},
        "aitp": record.aitp,
    }


def event(record: EventRecord) -> dict[str, Any]:
    return {
        "seq": record.seq,
        "type": record.type,
        "thread_id": record.thread_id,
        "created_at": record.created_at,
        "data": record.data,
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
    }


def page(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
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
