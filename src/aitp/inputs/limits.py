"""Input limits: cheap checks of counts, lengths and nesting that run before any expensive work.

Services call these first, before validation, negotiation or store calls, so a hostile or buggy client
costs little. Each refusal is a 400 `invalid_request_error` whose `param` names the offending field and
whose `code` says which limit was hit:

    too_many_parts         content parts per message            (`content`)
    string_too_long        characters per content part          (`content[3].text`)
    too_many_actors        actors per thread                    (`actors`)
    too_many_capabilities  capability declarations per actor    (`actors[2].capabilities`)
    schema_too_large       a registered schema's compact JSON   (`schema`)
    nesting_too_deep       JSON nesting (free-form fields, schemas; capability messages are checked
                           where they are parsed, `aitp.capabilities.messages.check_parts`)

The values come from `Settings` (AITP_MAX_* variables). The request body as a whole is limited before
any route reads it (413 `request_too_large`); metadata follows OpenAI's fixed rules
(`aitp.inputs.shapes.check_metadata`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from aitp.config import Settings
from aitp.errors import InvalidRequest, param_path


def nesting_depth(value: Any, stop_above: int) -> int:
    """How deeply containers nest in `value`, a value as JSON parsing makes it (a scalar is 0, `[]` is 1,
    `[{}]` is 2; containers are exactly `dict` and `list`).

    It stops descending once the depth exceeds `stop_above`: the answer is exact up to `stop_above + 1`,
    enough to refuse, the recursion never goes deeper than that and the work never exceeds the value's
    size. (Recursion with exact type checks: half the time of a level-by-level walk on a 4 KB message.)"""
    kind = type(value)
    if kind is not dict and kind is not list:
        return 0
    return _container_depth(value, stop_above)


def _container_depth(node: Any, limit: int) -> int:  # node: a dict or a list
    deepest = 0
    for child in node.values() if type(node) is dict else node:
        kind = type(child)
        if kind is dict or kind is list:
            if limit <= 1:
                return 2  # deeper than `limit` already
            depth = _container_depth(child, limit - 1)
            if depth > deepest:
                deepest = depth
    return deepest + 1


def check_depth(value: Any, limit: int, param: str) -> None:
    """Refuse `value` nesting deeper than `limit` (400 `nesting_too_deep`)."""
    if nesting_depth(value, limit) > limit:
        raise InvalidRequest(
            f"Invalid '{param}': JSON nested deeper than {limit} levels.", param=param, code="nesting_too_deep"
        )


def check_length(value: str, limit: int, param: str) -> None:
    """Refuse a string longer than `limit` characters (400 `string_too_long`)."""
    if len(value) > limit:
        raise InvalidRequest(
            f"Invalid '{param}': string too long. Expected at most {limit} characters, got {len(value)}.",
            param=param,
            code="string_too_long",
        )


def check_count(items: Sequence[Any] | int, limit: int, param: str, what: str, code: str) -> None:
    """Refuse more than `limit` items (400 with `code`)."""
    count = items if isinstance(items, int) else len(items)
    if count > limit:
        raise InvalidRequest(f"Invalid '{param}': at most {limit} {what} allowed, got {count}.", param=param, code=code)


def check_content(content: str | Sequence[Any], settings: Settings, param: str = "content") -> None:
    """A message's `content` as sent: parts per message, characters per part, nesting of part objects.
    Shapes are checked later, by `aitp.inputs.shapes.normalize_content`."""
    if isinstance(content, str):
        check_length(content, settings.max_part_chars, param)
        return
    check_count(content, settings.max_content_parts, param, "content parts", "too_many_parts")
    for i, item in enumerate(content):
        part = f"{param}[{i}]"
        if isinstance(item, str):
            check_length(item, settings.max_part_chars, part)
            continue
        check_depth(item, settings.max_json_depth, part)
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        if isinstance(text, dict):  # the output shape, sent back as input
            if isinstance(text.get("value"), str):
                check_length(text["value"], settings.max_part_chars, f"{part}.text.value")
        elif isinstance(text, str):
            check_length(text, settings.max_part_chars, f"{part}.text")
        image = item.get("image_url")
        if isinstance(image, dict) and isinstance(image.get("url"), str):
            check_length(image["url"], settings.max_part_chars, f"{part}.image_url.url")


def check_message(
    content: str | Sequence[Any], attachments: Sequence[Any] | None, settings: Settings, param: str = ""
) -> None:
    """Every limit on a message to post: its content and the nesting of its attachments."""
    check_content(content, settings, param_path(param, ["content"]))
    if attachments:
        check_depth(list(attachments), settings.max_json_depth, param_path(param, ["attachments"]))


def check_actor_count(count: int, settings: Settings, param: str) -> None:
    """A thread may have at most `max_actors` actors (400 `too_many_actors`). A join is also counted by the
    store, in its own transaction (`Store.put_actor(max_actors=)`): this early check sees the thread as read."""
    if count > settings.max_actors:
        raise too_many_actors(settings.max_actors, count, param)


def too_many_actors(limit: int, count: int, param: str) -> InvalidRequest:
    """The refusal of a thread with `count` actors, more than `limit`."""
    return InvalidRequest(
        f"Invalid '{param}': at most {limit} actors per thread allowed, got {count}.",
        param=param,
        code="too_many_actors",
    )


def check_capabilities(capabilities: Sequence[Any], settings: Settings, param: str) -> None:
    """An actor may declare at most `max_capabilities` capabilities, each a small JSON value."""
    check_count(capabilities, settings.max_capabilities, param, "capabilities per actor", "too_many_capabilities")
    for i, declaration in enumerate(capabilities):
        check_depth(declaration, settings.max_json_depth, f"{param}[{i}]")


def check_schema(schema: Any, settings: Settings, param: str = "schema") -> None:
    """A schema to register: nesting first (orjson refuses to serialise beyond 255 levels), then size."""
    check_depth(schema, settings.max_schema_depth, param)
    size = len(orjson.dumps(schema))
    if size > settings.max_schema_bytes:
        raise InvalidRequest(
            f"Invalid '{param}': the schema is {size} bytes as compact JSON; at most {settings.max_schema_bytes}"
            " allowed.",
            param=param,
            code="schema_too_large",
        )
