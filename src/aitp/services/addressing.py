"""Addressing: a message may name the actors it is for, and an agent's reply policy says which messages that
name no one still reach it.

A message names its recipients in `metadata.to` (an AITP extension, as `metadata.actor` is): an array of
actor ids, or a string that is a JSON array of them (what OpenAI SDKs, whose metadata values are strings,
send), or one actor id. Every id must be a member of the thread. It is stored as a JSON array string, so that
every face shows the metadata the OpenAI way (string values).

Who reads it: deliveries that start an agent's work (A2A outbound, webhooks that ask for it). An agent's reply
policy decides what a message naming no one does:
- `addressed` (the default for remote agents): only messages that name it, and messages naming no one that a
  person wrote (a `user` message: the thread's creator, or an actor the creator marked as a person). Agents'
  unaddressed chatter reaches no such agent, so two of them cannot answer each other forever.
- `all`: every message of another actor.
Inbox streams and the thread's events are not filtered: addressing says who is asked, not who may read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson

from aitp.errors import InvalidRequest
from aitp.store.base import MessageRecord

TO = "to"  # the metadata key naming a message's recipients
MAX_RECIPIENTS = 16
ReplyPolicy = Literal["addressed", "all"]
REPLY_POLICIES: tuple[ReplyPolicy, ...] = ("addressed", "all")
PERSON_ROLE = "user"  # the role persons speak as (services.access.role_of)


def read_to(value: Any, param: str) -> list[str]:
    """The recipients a client gave as `metadata.to`, in order and without repeats (not yet checked to be
    members); 400 naming `param` for any other shape."""
    if isinstance(value, str):
        if value.startswith("["):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                raise InvalidRequest(f"'{param}' starts with '[' but is not a JSON array.", param=param) from None
        else:
            value = [value]
    if not isinstance(value, list) or not value:
        raise InvalidRequest(
            f"'{param}' must be a non-empty array of actor ids (or a JSON string of one).",
            param=param,
            code="invalid_type",
        )
    if len(value) > MAX_RECIPIENTS:
        raise InvalidRequest(f"'{param}' may name at most {MAX_RECIPIENTS} actors.", param=param)
    for i, actor in enumerate(value):
        if not isinstance(actor, str) or not actor:
            raise InvalidRequest(f"'{param}[{i}]' must be an actor id.", param=f"{param}[{i}]", code="invalid_type")
    return list(dict.fromkeys(value))


def encode_to(recipients: list[str]) -> str:
    """`metadata.to` as stored: a JSON array string."""
    return orjson.dumps(recipients).decode()


def recipients(metadata: Mapping[str, Any]) -> frozenset[str] | None:
    """The actors a stored message names (None: it names no one; also for a value this module did not write)."""
    value = metadata.get(TO)
    if not isinstance(value, str) or not value.startswith("["):
        return None
    try:
        named = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(named, list):
        return None
    return frozenset(actor for actor in named if isinstance(actor, str)) or None


def reaches(message: MessageRecord, actor: str, policy: ReplyPolicy) -> bool:
    """Whether a message asks `actor` (an agent with this reply policy) for work: never its own messages."""
    if message.actor == actor:
        return False
    named = recipients(message.metadata)
    if named is not None:
        return actor in named
    return policy == "all" or message.role == PERSON_ROLE
