"""The A2A face's JSON-RPC endpoint refuses before it parses, and answers as JSON-RPC 2.0 says, over real HTTP
on every backend (issue 28, items 2, 4 and 8 in part).

Specification: params over a bound (parts per message, characters per part, a data part's JSON, nesting,
metadata, extensions, referenceTaskIds) are refused with -32602 naming the field, with the Threads face's
limits and messages, before protobuf reads them, and nothing is posted; a body that is not JSON is
-32700 with id null and no traceback in the log; a batch or a non-object is -32600; a notification (no
`id`) is neither executed nor answered (204, empty); a body not sent as application/json is refused
(415, a JSON-RPC -32600 naming Content-Type). How long each refusal holds the event loop is measured by
bench/a2a_hostile.py, not here.
"""

from __future__ import annotations

import codecs
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest

from aitp.bindings.a2a.limits import MAX_ITEM_CHARS, MAX_LIST_ITEMS, MAX_METADATA_CHARS
from aitp.config import Settings
from aitp.store import Store
from tests.bindings.test_a2a import service

JSON = {"Content-Type": "application/json"}
URL = "/a2a/shop"
LIMITS = Settings()
SCHEMA = "https://aitp.dev/v1/decisions/schema.json"


@asynccontextmanager
async def endpoint(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """alice's client of `shop`'s JSON-RPC endpoint (A2A 1.0); no agent runs: nothing here should reach it."""
    async with service(store) as svc:
        await svc.a2a_settings("shop", serve=True)
        key = await svc.key("alice")
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with httpx.AsyncClient(base_url=svc.base, headers=headers, timeout=60) as http:
            yield http


async def tasks_of(http: httpx.AsyncClient) -> list[Any]:
    """alice's tasks with shop: what was posted."""
    answer = await http.post(URL, json={"jsonrpc": "2.0", "id": "list", "method": "ListTasks", "params": {}})
    tasks: list[Any] = answer.json()["result"]["tasks"]
    return tasks


def call(method: str, params: Any, request_id: Any = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def send(parts: list[Any], method: str = "SendMessage", **fields: Any) -> dict[str, Any]:
    params = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": parts, **fields.pop("message", {})}}
    return call(method, {**params, **fields})


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def error_info(error: dict[str, Any]) -> dict[str, Any]:
    (info,) = [d for d in error.get("data", []) if d["@type"].endswith("google.rpc.ErrorInfo")]
    metadata: dict[str, Any] = info["metadata"]
    return metadata


def no_traceback(records: list[logging.LogRecord]) -> None:
    logged = [(r.name, r.levelname, r.getMessage()[:80]) for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert logged == []


MANY = LIMITS.max_content_parts * 2000  # tens of thousands of parts: the bodies, under the body limit
BIG_DATA = {"$schema": SCHEMA, "blob": "x" * 800_000}  # 781 KiB as JSON
TEXT_PARTS = [{"text": ""} for _ in range(60_000)]

# (body, the param named, the AITP code in the error's data)
OVER_A_BOUND: dict[str, tuple[dict[str, Any], str, str]] = {
    "40k data parts": (send([{"data": {"n": i}} for i in range(40_000)]), "message.parts", "too_many_parts"),
    "60k text parts": (send(TEXT_PARTS), "message.parts", "too_many_parts"),
    "60k text parts, streaming": (send(TEXT_PARTS, "SendStreamingMessage"), "message.parts", "too_many_parts"),
    "one part over the limit": (
        send([{"text": "x" * (LIMITS.max_part_chars + 1)}]),
        "message.parts[0].text",
        "string_too_long",
    ),
    "a 781 KiB data part": (send([{"text": "hi"}, {"data": BIG_DATA}]), "message.parts[1].data", "string_too_long"),
    "a data part nested too deep": (
        send([{"data": nested(LIMITS.max_json_depth + 1)}]),
        "message.parts[0].data",
        "nesting_too_deep",
    ),
    "ignored message metadata": (
        send([{"text": "hi"}], message={"metadata": {f"k{i}": i for i in range(60_000)}}),
        "message.metadata",
        "too_large",
    ),
    "ignored params metadata": (
        send([{"text": "hi"}], metadata={"k": ["v"] * 60_000}),
        "metadata",
        "too_large",
    ),
    "a part's metadata": (
        send([{"text": "hi", "metadata": {"k": "x" * MAX_METADATA_CHARS}}]),
        "message.parts[0].metadata",
        "too_large",
    ),
    "extensions": (
        send([{"text": "hi"}], message={"extensions": ["https://x.example"] * 40_000}),
        "message.extensions",
        "too_many_items",
    ),
    "an extension too long": (
        send([{"text": "hi"}], message={"extensions": ["h" * (MAX_ITEM_CHARS + 1)]}),
        "message.extensions[0]",
        "string_too_long",
    ),
    "referenceTaskIds": (
        send([{"text": "hi"}], message={"referenceTaskIds": ["t"] * (MAX_LIST_ITEMS + 1)}),
        "message.referenceTaskIds",
        "too_many_items",
    ),
    "0.3 message/send": (
        call(
            "message/send",
            {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": ""}] * 30_000}},
        ),
        "message.parts",
        "too_many_parts",
    ),
}


@pytest.mark.parametrize("case", list(OVER_A_BOUND))
async def test_params_over_a_bound_are_refused_naming_the_field_and_nothing_is_posted(
    store: Store, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    body, param, code = OVER_A_BOUND[case]
    raw = orjson.dumps(body)
    assert len(raw) <= LIMITS.max_body_bytes  # under the body limit: these reach the route
    async with endpoint(store) as http:
        answer = await http.post(URL, content=raw, headers=JSON)
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        reply = answer.json()
        assert reply["id"] == 7 and reply["jsonrpc"] == "2.0", reply
        assert reply["error"]["code"] == -32602, reply
        info = error_info(reply["error"])
        assert (info["param"], info["aitp_code"]) == (param, code), reply
        assert param in reply["error"]["message"]
        assert await tasks_of(http) == []
    no_traceback(caplog.records)


async def test_the_limits_are_the_threads_faces_to_the_character(store: Store) -> None:
    """A message at each limit is taken on the A2A face as on the Threads face; one character more is not."""
    at_limit = [{"text": "x" * LIMITS.max_part_chars}] + [{"text": "y"}] * (LIMITS.max_content_parts - 1)
    async with endpoint(store) as http:
        body = send(at_limit)
        body["params"]["configuration"] = {"returnImmediately": True}
        taken = (await http.post(URL, json=body)).json()
        assert taken["result"]["task"]["id"], str(taken)[:300]
        over = send([*at_limit, {"text": "z"}])
        over["params"]["message"]["messageId"] = "m-2"
        refused = (await http.post(URL, json=over)).json()["error"]
        assert refused["message"] == (
            f"Invalid 'message.parts': at most {LIMITS.max_content_parts} content parts allowed,"
            f" got {LIMITS.max_content_parts + 1}."
        )
        assert len(await tasks_of(http)) == 1


NOT_JSON: dict[str, bytes] = {
    "invalid UTF-8": b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "\xff"}}',
    "UTF-16 with its byte order mark": codecs.BOM_UTF16_LE
    + json.dumps(call("GetTask", {"id": "x"})).encode("utf-16-le"),
    "a UTF-16 byte order mark before UTF-8": codecs.BOM_UTF16_LE + json.dumps(call("GetTask", {"id": "x"})).encode(),
    "nested 10k deep": b"[" * 10_000 + b"]" * 10_000,
    "nested 10k deep in an object": b'{"jsonrpc": "2.0", "id": 1, "params": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
    "cut short": b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"',
    "NaN": b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": NaN}}',
    "empty": b"",
}


@pytest.mark.parametrize("case", list(NOT_JSON))
async def test_a_body_that_is_not_json_is_a_parse_error_without_a_traceback(
    store: Store, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with endpoint(store) as http:
        answer = await http.post(URL, content=NOT_JSON[case], headers=JSON)
        assert answer.status_code == 200
        reply = answer.json()
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        assert len(answer.content) < 400  # a few words of why, never the body
    no_traceback(caplog.records)


async def test_a_utf8_byte_order_mark_is_ignored_as_on_the_threads_face(store: Store) -> None:
    async with endpoint(store) as http:
        answer = await http.post(URL, content=codecs.BOM_UTF8 + orjson.dumps(call("ListTasks", {})), headers=JSON)
        assert answer.json()["result"]["tasks"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[]", "Batch requests are not supported"),
        (orjson.dumps([send([{"text": "hi"}])]), "Batch requests are not supported"),
        (b"1", "A JSON-RPC request is an object"),
        (b'"SendMessage"', "A JSON-RPC request is an object"),
        (b"null", "A JSON-RPC request is an object"),
    ],
)
async def test_a_batch_or_a_value_that_is_not_a_request_is_an_invalid_request(
    store: Store, body: bytes, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with endpoint(store) as http:
        reply = (await http.post(URL, content=body, headers=JSON)).json()
        assert reply["id"] is None and reply["error"]["code"] == -32600, reply
        assert reply["error"]["message"] == message
        assert await tasks_of(http) == []
    no_traceback(caplog.records)


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": 1},  # no method
        {"jsonrpc": "2.0", "id": 1, "method": 5, "params": {}},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ListTasks", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}, "extra": True},
    ],
)
async def test_an_ill_formed_request_object_is_an_invalid_request_logged_without_a_traceback(
    store: Store, body: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK's dispatcher answers these (its own words) and logs each at ERROR with a traceback, ~1.7 KB for a
    client's 30-byte mistake: that line is dropped (its one-line warning stays)."""
    async with endpoint(store) as http:
        reply = (await http.post(URL, content=orjson.dumps(body), headers=JSON)).json()
        assert reply["error"]["code"] == -32600, reply
        assert await tasks_of(http) == []
    no_traceback(caplog.records)


async def test_a_notification_is_neither_executed_nor_answered(store: Store) -> None:
    """JSON-RPC 2.0: a request without an `id` member is a notification, and "The Server MUST NOT reply to a
    Notification". A request with `"id": null` is not one: it is answered (id null)."""
    notifications = [
        {k: v for k, v in send([{"text": "hi"}]).items() if k != "id"},
        {k: v for k, v in send([{"text": "hi"}], "SendStreamingMessage").items() if k != "id"},
        {"jsonrpc": "2.0", "method": "ListTasks"},
        {"jsonrpc": "2.0", "method": "NoSuchMethod", "params": []},
        {k: v for k, v in send([{"text": "x"}] * MANY).items() if k != "id"},  # not even bounded: not read
    ]
    async with endpoint(store) as http:
        for body in notifications:
            answer = await http.post(URL, json=body)
            assert (answer.status_code, answer.content) == (204, b""), body.get("method")
        assert await tasks_of(http) == []
        answered = (await http.post(URL, json=call("GetTask", {"id": "nope"}, request_id=None))).json()
        assert answered["id"] is None and answered["error"]["code"] == -32001  # task not found
        # an ill-formed request without an id is not a notification: its error is answered, id null
        ill_formed = (await http.post(URL, json={"jsonrpc": "2.0", "method": 5})).json()
        assert ill_formed["id"] is None and ill_formed["error"]["code"] == -32600


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None, "application/jsonx"])
async def test_a_body_not_sent_as_json_is_refused_in_json_rpc_shape(store: Store, content_type: str | None) -> None:
    """The A2A spec: JSON-RPC requests are `application/json`. Refused as 415 (the other faces refuse such
    bodies too), the body a JSON-RPC error a client can read; nothing is posted."""
    body = orjson.dumps(send([{"text": "hi"}]))
    async with endpoint(store) as http:
        headers = {"Content-Type": content_type} if content_type else {}
        answer = await http.post(URL, content=body, headers=headers)
        if content_type is None:
            assert "content-type" not in answer.request.headers
        assert answer.status_code == 415
        reply = answer.json()
        assert reply["id"] is None and reply["error"]["code"] == -32600, reply
        assert error_info(reply["error"])["param"] == "Content-Type"
        assert await tasks_of(http) == []
        # with a charset, or in another case, it is JSON
        for declared in ("application/json; charset=utf-8", "Application/JSON"):
            listed = await http.post(
                URL, content=orjson.dumps(call("ListTasks", {})), headers={"Content-Type": declared}
            )
            assert listed.json()["result"]["tasks"] == []
