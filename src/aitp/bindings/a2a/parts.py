"""A2A parts <-> AITP content parts.

Text is text. A data part is an AITP capability message: its `$schema` in the part's metadata (or in the
data itself), the rest of the message as the data; it travels in AITP as the message's JSON text, which the
core recognises, validates and correlates as it does any capability message. A URL part with an image
media type is an `image_url` part. Anything else (raw bytes, other files) is refused.
"""

from __future__ import annotations

from typing import Any

import orjson
from a2a.types import Message, Part, Role
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf.json_format import MessageToDict

from aitp.store.base import MessageRecord

SCHEMA = "$schema"
JSON = "application/json"


def aitp_content(message: Message) -> list[Any]:
    """The content of the AITP message an A2A message becomes (400-class errors as A2A errors)."""
    if not message.parts:
        raise InvalidParamsError(message="A message needs at least one part.")
    content: list[Any] = []
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind == "text":
            content.append(part.text)
        elif kind == "data":
            content.append(orjson.dumps(_capability_message(part, index)).decode())
        elif kind == "url" and part.media_type.startswith("image/"):
            content.append({"type": "image_url", "image_url": {"url": part.url}})
        else:
            raise ContentTypeNotSupportedError(
                message=f"parts[{index}]: only text, data and image URL parts are taken (got {kind or 'nothing'})."
            )
    return content


def _capability_message(part: Part, index: int) -> dict[str, Any]:
    data = MessageToDict(part)["data"]
    if not isinstance(data, dict):
        raise InvalidParamsError(message=f"parts[{index}].data must be an object (an AITP capability message).")
    schema = part.metadata.fields.get(SCHEMA)
    if schema is not None and schema.WhichOneof("kind") == "string_value":
        return {SCHEMA: schema.string_value, **{k: v for k, v in data.items() if k != SCHEMA}}
    return data  # its own `$schema`, or none: then it is plain JSON text


def _parts(record: MessageRecord) -> list[Part | dict[str, Any]]:
    """A message's content as A2A parts: capability messages (and unknown parts) as data `Part`s, text and
    image URLs as their JSON already (what protobuf's JSON printer would write for them)."""
    parts: list[Part | dict[str, Any]] = []
    for index, item in enumerate(record.content):
        kind = item.get("type")
        if kind == "text":
            summary = record.aitp[index] if record.aitp else None
            text = item["text"]["value"]
            if summary is not None:
                value = orjson.loads(text)
                part = Part(media_type=JSON)
                part.metadata.update({SCHEMA: value.pop(SCHEMA)})
                part.data.struct_value.update(value)
                parts.append(part)
            else:
                parts.append({"text": text})
        elif kind == "image_url":
            parts.append({"url": item["image_url"]["url"], "mediaType": "image/*"})
        else:
            part = Part(media_type=JSON)
            part.data.struct_value.update(item)
            parts.append(part)
    return parts


def a2a_parts(record: MessageRecord) -> list[Part]:
    """A message's content as A2A parts: capability messages as data parts."""
    return [p if isinstance(p, Part) else _part(p) for p in _parts(record)]


def _part(printed: dict[str, Any]) -> Part:
    """A text or image URL part `_parts` wrote as JSON, as the protobuf part."""
    if "text" in printed:
        return Part(text=printed["text"])
    return Part(url=printed["url"], media_type=printed["mediaType"])


def _message_id(record: MessageRecord) -> str:
    return record.metadata.get("a2a_message_id") or record.id


# read once: attribute access on protobuf's enum wrapper, and its Name(), cost more than the rest of a role
AGENT_ROLE, USER_ROLE = Role.Value("ROLE_AGENT"), Role.Value("ROLE_USER")
AGENT_ROLE_NAME, USER_ROLE_NAME = Role.Name(AGENT_ROLE), Role.Name(USER_ROLE)


def _role(record: MessageRecord, agent: str) -> Role:
    return AGENT_ROLE if record.actor == agent else USER_ROLE


def a2a_message(record: MessageRecord, *, agent: str, task_id: str, context_id: str) -> Message:
    """An AITP message as the A2A message of a task: the agent's as `agent`, anyone else's as `user`.
    Built field by field: the protobuf types' JSON parser costs more than the rest of a SendMessage."""
    message = Message(
        message_id=_message_id(record),
        context_id=context_id,
        task_id=task_id,
        role=_role(record, agent),
        parts=a2a_parts(record),
    )
    message.metadata.update({"aitp_message_id": record.id, "aitp_actor": record.actor})
    return message


def a2a_message_json(record: MessageRecord, *, agent: str, task_id: str, context_id: str) -> dict[str, Any]:
    """`a2a_message` as protobuf's JSON printer (`MessageToDict`) writes it, without building the message:
    printing a whole task took a third of SendMessage's own CPU. Data parts are still printed by protobuf
    (a Struct's numbers are doubles there)."""
    message: dict[str, Any] = {"messageId": _message_id(record), "contextId": context_id}
    if task_id:
        message["taskId"] = task_id
    message["role"] = AGENT_ROLE_NAME if record.actor == agent else USER_ROLE_NAME
    parts = _parts(record)
    if parts:
        message["parts"] = [MessageToDict(p) if isinstance(p, Part) else p for p in parts]
    message["metadata"] = {"aitp_message_id": record.id, "aitp_actor": record.actor}
    return message


def outgoing(record: MessageRecord, remote: str) -> Message:
    """A thread's message as sent to a remote A2A agent standing in the thread as `remote`: the thread is
    the context, the message's id its messageId."""
    return a2a_message(record, agent=remote, task_id="", context_id=record.thread_id)


def notice_message(*, message_id: str, text: str, task_id: str, context_id: str, metadata: dict[str, str]) -> Message:
    """A message of the service on the agent's behalf (no AITP message holds it): why a task failed."""
    message = Message(
        message_id=message_id, context_id=context_id, task_id=task_id, role=AGENT_ROLE, parts=[Part(text=text)]
    )
    message.metadata.update(metadata)
    return message


def notice_message_json(
    *, message_id: str, text: str, task_id: str, context_id: str, metadata: dict[str, str]
) -> dict[str, Any]:
    """`notice_message` as protobuf's JSON printer writes it."""
    return {
        "messageId": message_id,
        "contextId": context_id,
        "taskId": task_id,
        "role": AGENT_ROLE_NAME,
        "parts": [{"text": text}],
        "metadata": dict(metadata),
    }
