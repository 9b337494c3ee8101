"""A2A params bounded as JSON, before protobuf reads them.

The SDK turns params into protobuf messages (`ParseDict`; pydantic models for 0.3 clients) in Python, one
step per value: 60,000 text parts or a 781 KiB data part held the event loop for most of a second before
any limit was applied. Here the params as JSON parsing made them (`orjson`, already bounded by the body
limit) are checked first, with the Threads face's limits and messages (`aitp.inputs.limits`) so the faces
agree, and refused with -32602 naming the field (`data.param`, as every refusal on this face):

    message.parts                 at most `max_content_parts` parts (`too_many_parts`)
    message.parts[i].text         at most `max_part_chars` characters (`string_too_long`); any other string
                                  of a part (url, raw, filename, ...) too
    message.parts[i].data         nested at most `max_json_depth` levels (`nesting_too_deep`), at most
                                  `max_part_chars` characters as compact JSON (`string_too_long`): the size of
                                  the capability message's JSON text it becomes; a 0.3 `file` object too
    metadata (of params, message, each part)
                                  at most `MAX_METADATA_CHARS` as compact JSON (`too_large`),
                                  `max_json_depth` levels
    message.extensions, message.referenceTaskIds
                                  at most `MAX_LIST_ITEMS` items (`too_many_items`), each at most
                                  `MAX_ITEM_CHARS` characters
    configuration                 as metadata

Shapes (a part that is not an object, an id that is not a string) are left to the SDK's parser, which is
cheap once these bounds hold. Fields protobuf does not know are skipped by it without being read.
"""

from __future__ import annotations

from typing import Any

import orjson

from aitp.config import Settings
from aitp.errors import InvalidRequest
from aitp.inputs import limits

SEND_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})
MAX_METADATA_CHARS = 16 << 10  # a metadata or configuration object as compact JSON: ids, flags, `to`
MAX_LIST_ITEMS = 32  # extensions (as many as an actor's capability declarations), referenceTaskIds
MAX_ITEM_CHARS = 2048  # an extension URL, a task id
LISTS = ("extensions", "referenceTaskIds")


def check_params(method: Any, params: Any, settings: Settings) -> None:
    """Refuse params over a bound (InvalidRequest naming the field); anything else is left to the parser."""
    if type(params) is not dict:
        return
    if "metadata" in params:
        _check_object(params["metadata"], MAX_METADATA_CHARS, settings, "metadata")
    if method not in SEND_METHODS:
        return
    if "configuration" in params:
        _check_object(params["configuration"], MAX_METADATA_CHARS, settings, "configuration")
    message = params.get("message")
    if type(message) is dict:
        _check_message(message, settings)


def _check_message(message: dict[str, Any], settings: Settings) -> None:
    if "metadata" in message:
        _check_object(message["metadata"], MAX_METADATA_CHARS, settings, "message.metadata")
    for name in LISTS:
        items = message.get(name)
        if type(items) is list:
            param = f"message.{name}"
            limits.check_count(items, MAX_LIST_ITEMS, param, "items", "too_many_items")
            for i, item in enumerate(items):
                if type(item) is str:
                    limits.check_length(item, MAX_ITEM_CHARS, f"{param}[{i}]")
    parts = message.get("parts")
    if type(parts) is not list:
        return
    limits.check_count(parts, settings.max_content_parts, "message.parts", "content parts", "too_many_parts")
    for i, part in enumerate(parts):
        if type(part) is dict:
            _check_part(part, settings, f"message.parts[{i}]")


def _check_part(part: dict[str, Any], settings: Settings, param: str) -> None:
    for key, value in part.items():
        if key == "metadata":
            _check_object(value, MAX_METADATA_CHARS, settings, f"{param}.metadata")
        elif type(value) is str:
            limits.check_length(value, settings.max_part_chars, f"{param}.{key}")
        else:  # data (any JSON value), a 0.3 file object
            _check_json(value, settings.max_part_chars, settings, f"{param}.{key}", "string_too_long")


def _check_object(value: Any, limit: int, settings: Settings, param: str) -> None:
    if type(value) is dict or type(value) is list:
        _check_json(value, limit, settings, param, "too_large")


def _check_json(value: Any, limit: int, settings: Settings, param: str, code: str) -> None:
    """Nesting first (orjson refuses to print beyond 255 levels), then the compact JSON text's characters."""
    limits.check_depth(value, settings.max_json_depth, param)
    text = orjson.dumps(value)
    if len(text) > limit:
        size = len(text.decode())  # characters, as a text part is counted (bytes >= characters)
        if size > limit:
            raise InvalidRequest(
                f"Invalid '{param}': too large. Expected at most {limit} characters as compact JSON, got {size}.",
                param=param,
                code=code,
            )
