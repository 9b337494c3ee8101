"""The core's refusals under this face's names, from explicit mappings.

The core names what it refuses as a thread and its messages: `thread_id`, `message_id`, `thread_not_found`,
`message_not_found`; here they are a conversation and its items. The routes give the core this face's names
for what a request sent (`items[i]`, an item's `to`: `item`, `TO`), so those refusals need no renaming; what
the core names on its own (the ids in the URL) is renamed here, and a renamed code says its own message."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from aitp.errors import APIError

PARAMS = {"thread_id": "conversation_id", "message_id": "item_id"}
# each code renamed, with this face's message about the object the request named
CODES = {"thread_not_found": "conversation_not_found", "message_not_found": "item_not_found"}
NOT_FOUND = {
    "conversation_not_found": "No conversation found with id '{}'.",
    "item_not_found": "No item found with id '{}'.",
}
TO = ("to",)  # where under an item its recipients are (the core's message has them in `metadata.to`)


def item(i: int) -> str:
    """The i-th item of a request, as refusals name it."""
    return f"items[{i}]"


def rename(error: APIError, conversation_id: str | None = None, item_id: str | None = None) -> None:
    """`error` under this face's names (`conversation_id`, `item_id`: the request's, for the messages)."""
    if error.param in PARAMS:
        error.param = PARAMS[error.param]
    if error.code in CODES:
        error.code = CODES[error.code]
        named = conversation_id if error.code == "conversation_not_found" else item_id
        if named is not None:
            error.message = NOT_FOUND[error.code].format(named)


@contextlib.contextmanager
def conversation_names(conversation_id: str | None = None, item_id: str | None = None) -> Iterator[None]:
    """Refusals raised inside under this face's names (`rename`)."""
    try:
        yield
    except APIError as error:
        rename(error, conversation_id, item_id)
        raise
