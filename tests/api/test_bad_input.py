"""Bad input of every kind is refused with a 4xx error envelope whose `param` names the field at fault.

The corpus: malformed JSON, wrong types, huge strings, deep nesting, invalid UTF-8 and lone surrogates,
numbers JSON cannot carry, unknown fields, negative and huge limits, cursors from another thread, ids of
deleted objects. Every case runs on both stores: what a store cannot hold (a lone surrogate is not UTF-8,
BSON has no integer beyond 64 bits) is refused before it gets there. Where no field exists (the body is
not JSON at all) `param` is null, as in OpenAI's API.
"""

from __future__ import annotations

import codecs
import json
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API
from tests.support.live import ws_connect


@dataclass(frozen=True)
class Case:
    """One bad request and the answer expected: the status and the field named in `error.param`."""

    method: str
    path: str  # may name {thread}, {message}, {other_message}, {gone_thread}, {gone_message}, {revoked_key}
    param: str | None
    status: int = 400
    body: Any = None
    raw: bytes | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        sent = self.raw if self.raw is not None else self.body
        return f"{self.method} {self.path} {self.params or ''} {str(sent)[:80]}"


def post(path: str, body: Any, param: str | None, status: int = 400) -> Case:
    return Case("POST", path, param, status, body=body)


def post_raw(path: str, raw: bytes, param: str | None) -> Case:
    return Case("POST", path, param, raw=raw)


def get(path: str, param: str | None, status: int = 400, **params: Any) -> Case:
    return Case("GET", path, param, status, params=params)


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


MESSAGES = "/threads/{thread}/messages"
MESSAGE = "/threads/{thread}/messages/{message}"
CAPABILITY = {"id": "acme-bad-input", "version": "1.0.0", "schema": {"type": "object"}}
SURROGATE = "\ud800"
PLACEHOLDER = re.compile(r"\{(\w+)\}")

CORPUS: dict[str, list[Case]] = {
    "malformed JSON": [
        post_raw("/threads", b"{nope", None),
        post_raw(MESSAGES, b'{"content": "x",}', None),
        post_raw(MESSAGES, b'{"content": "x"', None),
        post_raw(MESSAGES, b'{"content": "x"} {}', None),
        post_raw("/keys", b"{'actor': 'x'}", None),
        post_raw(MESSAGES, b'{"content": "x"}\xff', None),  # invalid UTF-8 outside any string
    ],
    "wrong types": [
        post("/threads", {"messages": "hi"}, "messages"),
        post("/threads", {"messages": [1]}, "messages[0]"),
        post("/threads", {"messages": [{"content": 5}]}, "messages[0].content"),
        post("/threads", {"messages": [{"content": "x", "role": "robot"}]}, "messages[0].role"),
        post("/threads", {"metadata": "x"}, "metadata"),
        post("/threads", {"metadata": {"k": 1}}, "metadata.k"),
        post("/threads", {"metadata": {"actors": 5}}, "metadata.actors"),
        post("/threads", {"metadata": {"actors": '[{"id": 5}]'}}, "metadata.actors[0].id"),
        post("/threads", {"actors": {"id": "x"}}, "actors"),
        post("/threads", {"actors": [{"id": 5}]}, "actors[0].id"),
        post("/threads", {"actors": [{"id": "shop", "capabilities": "x"}]}, "actors[0].capabilities"),
        post("/threads", {"actors": [{"id": "shop", "capabilities": [5]}]}, "actors[0].capabilities[0]"),
        post("/threads", {"parent_id": 5}, "parent_id"),
        post("/threads", {"tool_resources": []}, "tool_resources"),
        post("/threads/{thread}", {"metadata": []}, "metadata"),
        post(MESSAGES, {"content": 5}, "content"),
        post(MESSAGES, {"content": [5]}, "content[0]"),
        post(MESSAGES, {"content": []}, "content"),
        post(MESSAGES, {"content": [{"type": "text", "text": 5}]}, "content[0].text"),
        post(MESSAGES, {"content": [{"type": "video"}]}, "content[0].type"),
        post(MESSAGES, {"content": "x", "role": 5}, "role"),
        post(MESSAGES, {"content": "x", "attachments": "a"}, "attachments"),
        post(MESSAGES, {"content": "x", "attachments": [{"file_id": 5}]}, "attachments[0].file_id"),
        post(MESSAGES, {"content": "x", "metadata": {"actor": 5}}, "metadata.actor"),
        post(MESSAGE, {"metadata": "x"}, "metadata"),
        post("/threads/{thread}/actors", {"id": 5}, "id"),
        post("/threads/{thread}/actors", {"id": "a", "client_id": 5}, "client_id"),
        post("/keys", {"actor": 5}, "actor"),
        post("/keys", {"actor": "a", "admin": "maybe"}, "admin"),
        post("/keys", {"actor": "a", "admin": 0}, "admin"),
        post("/keys", {"actor": "a", "scopes": ["root"]}, "scopes[0]"),
        post("/capabilities", {**CAPABILITY, "id": 5}, "id"),
        post("/capabilities", {**CAPABILITY, "version": "1"}, "version"),
        post("/capabilities", {**CAPABILITY, "schema": "s"}, "schema"),
        post("/capabilities", {**CAPABILITY, "examples": "x"}, "examples"),
        post("/capabilities", {**CAPABILITY, "aliases": [5]}, "aliases[0]"),
        get("/threads", "limit", limit="x"),
        get("/threads", "order", order="sideways"),
        get("/threads/{thread}/events", "after", after="x"),
        get("/actors/me/events", "limit", limit="1.5"),
    ],
    "huge strings": [
        post("/threads/{thread}/actors", {"id": "a" * 257}, "id"),
        post("/threads/{thread}/actors", {"id": "a", "client_id": "c" * 257}, "client_id"),
        post("/keys", {"actor": "a" * 257}, "actor"),
        post("/threads", {"metadata": {"k": "v" * 513}}, "metadata.k"),
        post("/threads", {"metadata": {"k" * 65: "v"}}, "metadata." + "k" * 64),
        post("/capabilities", {**CAPABILITY, "id": "a" * 101}, "id"),
        post("/capabilities", {**CAPABILITY, "title": "t" * 201}, "title"),
        post("/capabilities", {**CAPABILITY, "description": "d" * 4001}, "description"),
        get("/threads/" + "t" * 5000, "thread_id", 404),
        get("/threads/{thread}/messages/" + "m" * 5000, "message_id", 404),
        get(MESSAGES, "after", after="m" * 5000),
        get("/capabilities/" + "c" * 5000, "capability_id", 404),
    ],
    "deep nesting": [
        post("/threads", {"metadata": {"k": nested(200)}}, "metadata.k"),
        post("/threads", {"messages": [nested(200)]}, "messages[0]"),
        post(MESSAGES, {"content": [nested(200)]}, "content[0]"),
        # deeper than any JSON parser here goes: no field can be named
        post_raw("/threads", b'{"tool_resources": ' + b"[" * 5000 + b"]" * 5000 + b"}", None),
    ],
    "invalid unicode": [
        post_raw(MESSAGES, b'{"content": "\xff"}', "content"),
        post_raw(MESSAGES, b'{"content": "\xed\xa0\x80"}', "content"),  # a surrogate encoded as UTF-8
        post_raw(MESSAGES, b'{"content": ["ok", "\xc3"]}', "content[1]"),  # truncated sequence
        post(MESSAGES, {"content": SURROGATE}, "content"),
        post(MESSAGES, {"content": "\udc00 low"}, "content"),
        post(MESSAGES, {"content": ["ok", SURROGATE]}, "content[1]"),
        post(MESSAGES, {"content": [{"type": "text", "text": SURROGATE}]}, "content[0].text"),
        post(MESSAGES, {"content": "x", "metadata": {"k": SURROGATE}}, "metadata.k"),
        post(MESSAGES, {"content": "x", "metadata": {SURROGATE: "v"}}, "metadata"),
        post(MESSAGES, {"content": "x", "attachments": [{"file_id": SURROGATE}]}, "attachments[0].file_id"),
        post("/threads", {"messages": [SURROGATE]}, "messages[0]"),
        post("/threads", {"messages": [{"content": SURROGATE}]}, "messages[0].content"),
        post("/threads", {"parent_id": SURROGATE}, "parent_id"),
        post("/threads", {"actors": [{"id": SURROGATE}]}, "actors[0].id"),
        post("/threads", {"actors": [{"id": "a", "capabilities": [SURROGATE]}]}, "actors[0].capabilities[0]"),
        post(
            "/threads",
            {"tool_resources": {"code_interpreter": {"file_ids": [SURROGATE]}}},
            "tool_resources.code_interpreter.file_ids[0]",
        ),
        post("/threads/{thread}", {"metadata": {"k": SURROGATE}}, "metadata.k"),
        post("/threads/{thread}", {"tool_resources": {SURROGATE: {}}}, "tool_resources"),
        post(MESSAGE, {"metadata": {"k": SURROGATE}}, "metadata.k"),
        post("/threads/{thread}/actors", {"id": SURROGATE}, "id"),
        post("/keys", {"actor": SURROGATE}, "actor"),
        post("/capabilities", {**CAPABILITY, "schema": {"title": SURROGATE}}, "schema.title"),
        # a NUL character is fine in text but BSON keys cannot hold one
        post(MESSAGES, {"content": "x\u0000y", "metadata": {"a\u0000": "v"}}, "metadata"),
        post("/threads", {"tool_resources": {"files": {"a\u0000": 1}}}, "tool_resources.files"),
        post("/capabilities", {**CAPABILITY, "schema": {"properties": {"\u0000": {}}}}, "schema.properties"),
    ],
    "numbers JSON cannot carry": [
        post_raw("/threads", b'{"tool_resources": {"a": NaN}}', "tool_resources.a"),
        post_raw("/threads", b'{"tool_resources": {"a": [1, -Infinity]}}', "tool_resources.a[1]"),
        post_raw("/threads", b'{"tool_resources": {"a": 1e400}}', "tool_resources.a"),
        post("/threads", {"tool_resources": {"a": 2**63}}, "tool_resources.a"),
        post("/threads", {"tool_resources": {"a": -(2**63) - 1}}, "tool_resources.a"),
        post("/threads", {"tool_resources": {"a": 10**30}}, "tool_resources.a"),
        post(MESSAGES, {"content": "x", "attachments": [{"file_id": "f", "bytes": 2**64}]}, "attachments[0].bytes"),
        post("/capabilities", {**CAPABILITY, "schema": {"maximum": 10**40}}, "schema.maximum"),
    ],
    "unknown fields": [
        post("/threads", {"colour": "red"}, "colour"),
        post("/threads", {"messages": [{"content": "x", "colour": 1}]}, "messages[0].colour"),
        post("/threads", {"actors": [{"id": "a", "colour": 1}]}, "actors[0].colour"),
        post("/threads/{thread}", {"colour": 1}, "colour"),
        post(MESSAGES, {"content": "x", "colour": 1}, "colour"),
        post(MESSAGE, {"colour": 1}, "colour"),
        post("/threads/{thread}/actors", {"id": "a", "colour": 1}, "colour"),
        post("/keys", {"actor": "a", "colour": 1}, "colour"),
        post("/capabilities", {**CAPABILITY, "colour": 1}, "colour"),
    ],
    "negative and huge limits": [
        *(
            get(path, "limit", limit=limit)
            for path in ("/threads", MESSAGES, "/threads/{thread}/events", "/actors/me/events")
            for limit in (-1, 0, 10**30)
        ),
        get("/threads", "limit", limit=101),
        get(MESSAGES, "limit", limit=101),
        get("/threads/{thread}/events", "limit", limit=1001),
        *(
            get(path, "after", after=after)
            for path in ("/threads/{thread}/events", "/actors/me/events")
            for after in (-1, 2**63, 10**30)
        ),
        Case(
            "GET",
            "/threads/{thread}/events",
            "Last-Event-ID",
            headers={"Accept": "text/event-stream", "Last-Event-ID": str(10**30)},
        ),
    ],
    "cursors": [
        get(MESSAGES, "after", after="{other_message}"),
        get(MESSAGES, "before", before="{other_message}"),
        # (a message deleted since still marks its place: tests/bindings/test_openai_conversations.py)
        get(MESSAGES, "before", after="{message}", before="nonsense"),
    ],
    "deleted objects": [
        get("/threads/{gone_thread}", "thread_id", 404),
        post("/threads/{gone_thread}", {"metadata": {}}, "thread_id", 404),
        Case("DELETE", "/threads/{gone_thread}", "thread_id", 404),
        post("/threads/{gone_thread}/messages", {"content": "x"}, "thread_id", 404),
        get("/threads/{gone_thread}/messages", "thread_id", 404),
        get("/threads/{gone_thread}/messages/{gone_thread_message}", "thread_id", 404),
        get("/threads/{gone_thread}/actors", "thread_id", 404),
        post("/threads/{gone_thread}/actors", {"id": "a"}, "thread_id", 404),
        get("/threads/{gone_thread}/events", "thread_id", 404),
        get("/threads/{gone_thread}/capabilities", "thread_id", 404),
        post("/threads", {"parent_id": "{gone_thread}"}, "parent_id", 404),
        get("/threads/{thread}/messages/{gone_message}", "message_id", 404),
        post("/threads/{thread}/messages/{gone_message}", {"metadata": {"k": "v"}}, "message_id", 404),
        Case("DELETE", "/threads/{thread}/messages/{gone_message}", "message_id", 404),
        Case("DELETE", "/threads/{thread}/actors/leaver", "actor_id", 404),
        Case("DELETE", "/keys/{revoked_key}", "key_id", 404),
    ],
}


async def objects(root: httpx.AsyncClient) -> dict[str, str]:
    """Ids the corpus refers to: live ones, another thread's message, and deleted ones."""

    async def create(path: str, body: Any) -> dict[str, Any]:
        response = await root.post(path, json=body)
        assert response.status_code == 200, response.text
        return response.json()

    async def first_message(thread_id: str) -> str:
        return (await root.get(f"/threads/{thread_id}/messages")).json()["data"][0]["id"]

    thread = (await create("/threads", {"actors": [{"id": "shop"}, {"id": "leaver"}], "messages": ["hi"]}))["id"]
    other = (await create("/threads", {"messages": ["elsewhere"]}))["id"]
    gone_thread = (await create("/threads", {"messages": ["soon gone"]}))["id"]
    ids = {
        "thread": thread,
        "message": await first_message(thread),
        "other_message": await first_message(other),
        "gone_thread": gone_thread,
        "gone_thread_message": await first_message(gone_thread),
        "gone_message": (await create(f"/threads/{thread}/messages", {"content": "soon gone"}))["id"],
        "revoked_key": (await create("/keys", {"actor": "revoked"}))["id"],
    }
    for path in (
        f"/threads/{gone_thread}",
        f"/threads/{thread}/messages/{ids['gone_message']}",
        f"/threads/{thread}/actors/leaver",
        f"/keys/{ids['revoked_key']}",
    ):
        assert (await root.delete(path)).status_code == 200, path
    return ids


def fill(value: Any, ids: dict[str, str]) -> Any:
    """The value with `{name}` placeholders replaced by the ids in `objects`."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda match: ids.get(match[1], match[0]), value)
    if isinstance(value, dict):
        return {key: fill(item, ids) for key, item in value.items()}
    return value


async def send(client: httpx.AsyncClient, case: Case, ids: dict[str, str]) -> httpx.Response:
    if case.raw is not None:
        content = case.raw
    elif case.body is not None:
        # json.dumps (unlike httpx) writes lone surrogates as `\ud800` escapes, as a JSON client may
        content = json.dumps(fill(case.body, ids)).encode()
    else:
        content = None
    headers = {**case.headers, **({"content-type": "application/json"} if content is not None else {})}
    return await client.request(
        case.method, fill(case.path, ids), content=content, params=fill(case.params, ids), headers=headers
    )


def mismatch(case: Case, response: httpx.Response) -> str | None:
    """What is wrong with the answer to `case`, or None."""
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return f"{case}: {response.status_code} without an error envelope: {response.text[:200]}"
    if set(error) != {"message", "type", "param", "code"} or not error["message"]:
        return f"{case}: malformed envelope {error}"
    if (response.status_code, error["param"]) != (case.status, case.param):
        return f"{case}: got {response.status_code} param={error['param']!r}, want {case.status} param={case.param!r}"
    return None


@pytest.mark.parametrize("category", CORPUS)
async def test_bad_input_is_refused_naming_the_field(api: API, category: str) -> None:
    ids = await objects(api.admin)
    problems = [problem for case in CORPUS[category] if (problem := mismatch(case, await send(api.admin, case, ids)))]
    assert not problems, "\n".join(problems)


async def test_everything_json_can_carry_is_kept(api: API) -> None:
    """The strict reading refuses nothing valid: a byte order mark, escaped pairs, NUL in text, int64 bounds."""
    tool_resources = {"limits": [2**63 - 1, -(2**63), 1e300], "$dotted.key": "x"}
    body = {"messages": ["emoji \ud83d\ude00 and a\u0000b"], "tool_resources": tool_resources}
    content = codecs.BOM_UTF8 + json.dumps(body).encode()
    response = await api.admin.post("/threads", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    thread = (await api.admin.get(f"/threads/{response.json()['id']}")).json()
    assert thread["tool_resources"] == tool_resources
    message = (await api.admin.get(f"/threads/{thread['id']}/messages")).json()["data"][0]
    assert message["content"][0]["text"]["value"] == "emoji 😀 and a\u0000b"


async def test_a_method_the_route_lacks_is_405_naming_the_allowed_ones(api: API) -> None:
    """Also where the chat UI, served at `/`, would otherwise answer: API paths belong to the API."""
    ids = await objects(api.admin)
    for method, path, allowed in [
        ("GET", f"/threads/{ids['thread']}/actors/shop", "DELETE"),
        ("OPTIONS", "/threads", "GET, POST"),
        ("PUT", f"/threads/{ids['thread']}/messages", "GET, POST"),
    ]:
        response = await api.admin.request(method, path)
        assert response.status_code == 405, (method, path)
        assert response.headers["allow"] == allowed
        assert response.json()["error"]["code"] == "method_not_allowed"
    unknown = await api.admin.get("/nothing/here")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_url")


@pytest.fixture
def server(serve_backend: Callable[..., ServerProcess]) -> ServerProcess:
    return serve_backend()


async def test_a_websocket_frame_is_read_as_strictly_as_a_body(server: ServerProcess) -> None:
    """A frame posted over the WebSocket meets the same edge as an HTTP body; the socket stays usable."""
    auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=f"{server.base_url}/v1", headers=auth) as root:
        ids = await objects(root)
    refused = [
        ({"content": "x", "attachments": [{"file_id": "f", "bytes": 2**63}]}, "message.attachments[0].bytes"),
        ({"content": SURROGATE}, "message.content"),
        ({"content": "x", "metadata": {"k\u0000": "v"}}, "message.metadata"),
    ]
    async with ws_connect(server.base_url, f"/threads/{ids['thread']}/events/ws", ADMIN_KEY) as ws:

        async def reply_to(message: dict[str, Any]) -> dict[str, Any]:
            await ws.send(json.dumps({"op": "post", "ref": 1, "message": message}))
            while "op" not in (frame := json.loads(await ws.recv())):
                pass  # an event
            return frame

        for message, param in refused:
            reply = await reply_to(message)
            # the frame could not be read, so neither could its `ref`
            assert (reply["op"], reply["ref"], reply["status"], reply["error"]["error"]["param"]) == (
                "error",
                None,
                400,
                param,
            )
        assert (await reply_to({"content": "still open"}))["op"] == "posted"
    assert "unhandled error" not in server.output()


# --- cost: a request without a valid key is refused unread; a bad body's fault is found at bounded cost ---


def _answer(port: int, request: bytes, timeout: float = 10) -> tuple[int, dict[str, Any]]:
    """Send a raw request (maybe only its head) and read the answer: status and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = sock.recv(65536)
            assert chunk, f"closed without a whole answer: {data!r}"
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _length(data: bytes) -> int:
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    found = re.search(r"content-length:\s*(\d+)", head)
    return int(found[1]) if found else 0


@pytest.mark.parametrize("authorization", [None, "Bearer aitp_wrong_key", "Basic eDp5"])
@pytest.mark.parametrize("idempotency_key", [None, "retry-1"])
def test_a_request_without_a_valid_key_is_refused_before_its_body_is_read(
    live_server: ServerProcess, authorization: str | None, idempotency_key: str | None
) -> None:
    """The head announces a 1 MB body that never comes: the 401 comes anyway, so nothing waited for it."""
    head = "POST /v1/threads/thread_x/messages HTTP/1.1\r\nHost: aitp.test\r\nContent-Type: application/json\r\n"
    head += "Content-Length: 1000000\r\n"
    head += f"Authorization: {authorization}\r\n" if authorization else ""
    head += f"Idempotency-Key: {idempotency_key}\r\n" if idempotency_key else ""
    try:
        status, answer = _answer(live_server.port, (head + "\r\n").encode())
    except TimeoutError:
        pytest.fail("no answer: the server waited for the body of a request it should refuse unread")
    assert status == 401, answer
    assert answer["error"]["type"] == "authentication_error"


async def test_an_unauthenticated_body_is_neither_parsed_nor_hashed(api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    import orjson

    from aitp.services import idempotency

    looked_at: list[str] = []
    loads, fingerprint = orjson.loads, idempotency.fingerprint
    monkeypatch.setattr(orjson, "loads", lambda *a, **k: looked_at.append("parsed") or loads(*a, **k))
    monkeypatch.setattr(idempotency, "fingerprint", lambda *a, **k: looked_at.append("hashed") or fingerprint(*a, **k))
    body = b"[" + b"[]," * 1000 + b"NaN]"
    ids = await objects(api.admin)
    looked_at.clear()
    for path in ("/threads", f"/threads/{ids['thread']}/messages", "/keys", "/capabilities"):
        for headers in ({}, {"Idempotency-Key": "k1"}):
            for client in (api.client(None), api.client("aitp_wrong_key")):
                response = await client.post(
                    path, content=body, headers={"content-type": "application/json", **headers}
                )
                assert response.status_code == 401, response.text
    assert looked_at == []


LARGE = 128 << 10  # over EXPLAIN_MAX_BYTES


def _large(value_json: bytes) -> bytes:
    """A body of LARGE bytes and more, holding `value_json` at its end, in `tool_resources`."""
    filler = b"f" * LARGE
    return b'{"messages": ["' + filler + b'"], "tool_resources": {"v": ' + value_json + b"}}"


async def test_a_large_body_is_refused_by_position_without_looking_for_the_field(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond EXPLAIN_MAX_BYTES the fault is told by position (or the value), `param` null: no lenient
    parse and no walk of the value, whose cost grows with the body."""
    from aitp.inputs import strict_json

    assert getattr(strict_json, "EXPLAIN_MAX_BYTES", LARGE) < LARGE

    def forbidden(*args: Any) -> Any:
        raise AssertionError("a large body was parsed leniently or walked")

    monkeypatch.setattr(strict_json, "_first_problem", forbidden)
    monkeypatch.setattr(strict_json, "json", SimpleNamespace(loads=forbidden, JSONDecodeError=json.JSONDecodeError))
    cases = {
        b"[1, NaN]": ("numbers must be finite", "at line 1 column"),
        b"[-Infinity]": ("numbers must be finite", "at line 1 column"),
        b"1e400": ("numbers must be finite", "at line 1 column"),
        b'"\\ud800"': ("valid UTF-8", "at line 1 column"),
        b'"\xff"': ("valid UTF-8", "at line 1 column"),
        b"[1, 12345678901234567890123]": ("64 bits", "12345678901234567890123"),
        b"-9223372036854775809": ("64 bits", "-9223372036854775809"),
        b'{"a\\u0000b": 1}': ("NUL", ""),
    }
    for value, (reason, where) in cases.items():
        response = await api.admin.post("/threads", content=_large(value), headers={"content-type": "application/json"})
        assert response.status_code == 400, (value, response.text)
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("invalid_value", None), (value, error)
        assert reason in error["message"] and where in error["message"], (value, error)
    syntax = await api.admin.post("/threads", content=_large(b"[1,"), headers={"content-type": "application/json"})
    assert (syntax.status_code, syntax.json()["error"]["code"]) == (400, "invalid_json")


async def test_a_large_body_keeps_what_json_can_carry(api: API) -> None:
    """The scans that replace the walk on large bodies refuse nothing valid: long digit runs and NUL escapes
    inside strings, an escaped backslash before `u0000` in a key, 64-bit bounds, long fractions and exponents."""
    value = (
        b'{"ints": [9223372036854775807, -9223372036854775808, 9200000000000000000], "floats": '
        b"[1.12345678901234567890123, 1e0000000000000000000001, 12345678901234567890.5, 1E-12345678901234567890], "
        b'"text": "12345678901234567890 \\u0000 and \\"12345678901234567890123\\": 1", '
        b'"back\\\\u0000slash": "\\\\", "q\\"": "\\\\\\u0000", "\\u0000 in a value": 1}'
    )
    content = _large(value).replace(b'"tool_resources": {"v": ', b'"tool_resources": {"v": ', 1)
    response = await api.admin.post("/threads", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text  # a NUL key after all: "\u0000 in a value" is a key
    assert "NUL" in response.json()["error"]["message"]
    value = value.replace(b', "\\u0000 in a value": 1', b', "v": "\\u0000 in a value"')
    response = await api.admin.post("/threads", content=_large(value), headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    kept = response.json()["tool_resources"]["v"]
    assert kept["ints"] == [2**63 - 1, -(2**63), 9200000000000000000]
    assert kept["back\\u0000slash"] == "\\" and kept['q"'] == "\\\u0000"
