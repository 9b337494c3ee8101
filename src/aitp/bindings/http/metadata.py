"""A thread's `metadata` as the OpenAI faces show and document it.

AITP-T01 carries a thread's actors and parent inside its metadata, and both OpenAI faces (a thread, a
conversation) show them there: the user's keys plus `actors`, a JSON string, and `parent_id`. The core keeps
them apart (actors are records, the parent a field); this is their rendering. The schema that tells generated
clients what a request's `metadata` may hold is a wire model (`aitp.bindings.http.models.metadata_schema`)."""

from __future__ import annotations

import orjson

from aitp.store.records import ActorRecord, ThreadRecord


def t01_metadata(thread: ThreadRecord, actors: list[ActorRecord]) -> dict[str, str]:
    """A thread's metadata as AITP-T01 clients read it: the user's keys plus `actors`, a JSON string of
    [{id, client_id?, capabilities}], and `parent_id` when there is one."""
    compact = [
        {"id": a.id, **({"client_id": a.client_id} if a.client_id else {}), "capabilities": a.capabilities}
        for a in actors
    ]
    metadata = {**thread.metadata, "actors": orjson.dumps(compact).decode()}
    if thread.parent_id is not None:
        metadata["parent_id"] = thread.parent_id
    return metadata
