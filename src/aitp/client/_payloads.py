"""Reading a message's capability messages as the server validated them, without re-parsing by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aitp.bindings.openai_threads.models import Message
from aitp.bindings.openai_threads.models.messages import TextPart


@dataclass(frozen=True)
class CapabilityPayload:
    """One capability message in a message: the server's `aitp` summary of its part, plus the parsed JSON.

    `payload` is the value under the message type (`request_decision`, `quote`, ...): the object a handler
    reads. `capability` and `version` are None only for an unknown `$schema` the server let through
    unvalidated (`validated` false, with `AITP_UNKNOWN_CAPABILITIES=accept`).
    """

    capability: str | None  # e.g. aitp-02-decisions
    version: str | None  # the version the message was validated against, e.g. 1.0.0
    type: str | None  # the message type: its top-level key besides `$schema`
    payload: Any  # the value under `type`
    document: dict[str, Any]  # the whole capability message, `$schema` included
    schema: str  # the `$schema` URL as sent
    validated: bool
    index: int  # the content part it came in


def capability_payloads(message: Message) -> list[CapabilityPayload]:
    """The message's capability messages in content order (an empty list for plain messages)."""
    found = []
    for index, (part, summary) in enumerate(zip(message.content, message.aitp or [], strict=False)):
        if summary is None or not isinstance(part, TextPart):
            continue
        document = json.loads(part.text.value)
        found.append(
            CapabilityPayload(
                capability=summary.capability,
                version=summary.version,
                type=summary.type,
                payload=document.get(summary.type) if summary.type is not None else None,
                document=document,
                schema=summary.schema_,
                validated=summary.validated,
                index=index,
            )
        )
    return found


def plain_text(message: Message) -> str:
    """The message's text parts that are not capability messages, joined by a space."""
    summaries = message.aitp or [None] * len(message.content)
    parts = zip(message.content, summaries, strict=False)
    return " ".join(p.text.value for p, s in parts if s is None and isinstance(p, TextPart))
