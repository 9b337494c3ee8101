"""Turning Python values into request bodies: message content and actor declarations."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aitp.bindings.openai_threads.models import ActorInput

# One part: a string (text), a mapping with `$schema` (a capability message) or an OpenAI content part.
PartInput = str | Mapping[str, Any]
# What `create_message` takes: one part, or several.
MessageContent = PartInput | Sequence[PartInput]
# An actor: its id alone, an `ActorInput`, or the same as a mapping (`{"id", "client_id", "capabilities"}`).
ActorSpec = str | ActorInput | Mapping[str, Any]


def is_capability_message(value: Mapping[str, Any]) -> bool:
    return "$schema" in value


def capability_text(message: Mapping[str, Any]) -> str:
    """A capability message as the JSON text the server parses; compact, non-ASCII kept as is."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _part(item: PartInput) -> Any:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        if is_capability_message(item):
            return {"type": "text", "text": capability_text(item)}
        return dict(item)
    raise TypeError(f"A content part must be a str or a mapping, not {type(item).__name__}.")


def content_body(content: MessageContent) -> str | list[Any]:
    """The wire `content`: a string stays a string; mappings become parts, capability messages JSON text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return [_part(content)]
    return [_part(item) for item in content]


def actor_body(actor: ActorSpec) -> dict[str, Any]:
    if isinstance(actor, str):
        return {"id": actor}
    if isinstance(actor, ActorInput):
        return actor.model_dump(exclude_none=True)
    return dict(actor)


def declarations(capabilities: Sequence[str | Mapping[str, Any]]) -> list[Any]:
    """Capability declarations as sent: URLs, `{"schema": url}` or `{"capability": id, "versions": range}`."""
    return [c if isinstance(c, str) else dict(c) for c in capabilities]
