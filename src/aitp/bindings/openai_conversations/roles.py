"""The role an item claimed and the role kept, told to the client.

The role stored is derived from the author (the thread's creator, and the actors it marks as persons, speak
as `user`; every other actor as `assistant`), whatever the item claimed. The response to a write whose items
claimed another role says so in the `AITP-Role-Replaced` header: a Structured Field List (RFC 8941) of one
entry per such item, `"items[i]";sent=<claimed>;role=<kept>`, e.g. `"items[0]";sent=assistant;role=user`.
A header, not a field, because a conversation's creation answers the conversation, not its items, and a
header leaves the shapes strict SDKs validate untouched. With AITP_STRICT_ROLES the core refuses such an item
instead (400 `role_mismatch`, naming `items[i].role`), so the header never appears.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aitp.services.requests import NewMessage
from aitp.store.records import MessageRecord

HEADER = "AITP-Role-Replaced"

# How the OpenAPI document declares the header on the routes that write items.
DOCUMENTED = {
    HEADER: {
        "description": "Present when an item's `role` was replaced by the role its author speaks as: one "
        'entry per such item, `"items[i]";sent=<role sent>;role=<role kept>` (an RFC 8941 List).',
        "schema": {"type": "string"},
    }
}


def replaced(sent: Sequence[NewMessage], kept: Sequence[MessageRecord], param: str = "items") -> dict[str, str]:
    """The header for items sent (in order) and stored as `kept`; empty when every role was kept as sent."""
    entries = [
        f'"{param}[{i}]";sent={body.role};role={record.role}'
        for i, (body, record) in enumerate(zip(sent, kept, strict=True))
        if body.role is not None and body.role != record.role
    ]
    return {HEADER: ", ".join(entries)} if entries else {}


def written(description: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` entry of a 200 that may carry the header."""
    return {200: {"description": description, "headers": DOCUMENTED}}
