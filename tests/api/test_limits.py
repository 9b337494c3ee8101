"""Input limits: every limit accepts exactly its value and refuses one more, before any expensive work.

Specification: a refusal is a 4xx OpenAI envelope whose `code` names the limit and whose `param` names the
field; the request body as a whole is refused with 413 `request_too_large` without the server reading it
all, whether it declares its length or streams it in chunks; posts over the WebSocket follow the same rules.
The limits are the defaults documented in docs/configuration.md (`AITP_MAX_*`) and docs/api.md (Limits).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets

from aitp.config import Settings
from aitp.inputs.limits import nesting_depth
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API
from tests.support.live import ws_connect

DEFAULTS = Settings()
UNKNOWN_SCHEMA = "https://example.com/capabilities/deep/v1.0.0/schema.json"


def nested(depth: int, leaf: Any = 0) -> Any:
    """`leaf` inside `depth` nested lists: nested(2) == [[0]]."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def assert_refused(response: httpx.Response, status: int, code: str, param: str | None) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param), error
    assert error["type"] == "invalid_request_error" and error["message"]


async def thread_of(api: API, creator: str = "alice", **body: Any) -> tuple[httpx.AsyncClient, str]:
    client = await api.actor(creator)
    response = await client.post("/threads", json=body)
    assert response.status_code == 200, response.text
    return client, response.json()["id"]


def test_the_defaults_are_the_documented_ones() -> None:
    assert Settings.from_env({}) == DEFAULTS
    limits = (
        DEFAULTS.max_body_bytes,
        DEFAULTS.max_content_parts,
        DEFAULTS.max_part_chars,
        DEFAULTS.max_actors,
        DEFAULTS.max_thread_messages,
        DEFAULTS.max_capabilities,
        DEFAULTS.max_schema_bytes,
        DEFAULTS.max_schema_depth,
        DEFAULTS.max_json_depth,
        DEFAULTS.max_streams_per_key,
    )
    assert limits == (1 << 20, 32, 256_000, 64, 32, 32, 256 << 10, 32, 32, 64)
    assert (DEFAULTS.rate_limit, DEFAULTS.rate_burst) == (50.0, 100)
    # the request head and connections (aitp.server.http_protocol.LimitedHttpProtocol; tests/test_connection_limits.py)
    heads = (DEFAULTS.max_header_bytes, DEFAULTS.max_headers, DEFAULTS.header_timeout, DEFAULTS.max_connections)
    assert heads == (64 << 10, 100, 10.0, 10_000)
    changed = Settings.from_env({"AITP_MAX_CONTENT_PARTS": "4", "AITP_RATE_LIMIT": "0"})
    assert (changed.max_content_parts, changed.rate_limit) == (4, 0.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AITP_SIGN_IN_KEY_DAYS", "inf"),  # every sign-in failed on the key's expiry (OverflowError)
        ("AITP_SIGN_IN_KEY_DAYS", "1e20"),  # an expiry no store keeps as an integer
        ("AITP_SIGN_IN_KEY_DAYS", "nan"),
        ("AITP_SIGN_IN_KEY_DAYS", "0"),
        ("AITP_IDEMPOTENCY_TTL_HOURS", "23"),
        ("AITP_IDEMPOTENCY_TTL_HOURS", "inf"),
    ],
)
def test_lifetimes_out_of_range_are_refused_at_start_up_naming_the_setting(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})
    assert Settings.from_env({"AITP_SIGN_IN_KEY_DAYS": "36500"}).sign_in_key_days == 36_500


def test_nesting_depth_counts_containers_and_stops_past_the_limit() -> None:
    assert [nesting_depth(v, 32) for v in (0, "[[", [], [{}], {"a": [1, {"b": []}]})] == [0, 0, 1, 2, 4]
    assert nesting_depth(nested(1000), 32) == 33  # no further than needed to refuse


# ------------------------------------------------------------------------------------------ messages


async def test_a_message_may_have_max_content_parts_and_no_more(api: API) -> None:
    client, tid = await thread_of(api)
    limit = DEFAULTS.max_content_parts
    accepted = await client.post(f"/threads/{tid}/messages", json={"content": ["part"] * limit})
    assert accepted.status_code == 200 and len(accepted.json()["content"]) == limit
    refused = await client.post(f"/threads/{tid}/messages", json={"content": ["part"] * (limit + 1)})
    assert_refused(refused, 400, "too_many_parts", "content")


async def test_a_content_part_may_have_max_part_chars_and_no_more(api: API) -> None:
    client, tid = await thread_of(api)
    limit = DEFAULTS.max_part_chars
    full = {"type": "text", "text": "x" * limit}
    accepted = await client.post(f"/threads/{tid}/messages", json={"content": ["a", "b", "c", full]})
    assert accepted.status_code == 200
    assert accepted.json()["content"][3]["text"]["value"] == "x" * limit

    over = {"type": "text", "text": "x" * (limit + 1)}
    refused = await client.post(f"/threads/{tid}/messages", json={"content": ["a", "b", "c", over]})
    assert_refused(refused, 400, "string_too_long", "content[3].text")
    as_string = await client.post(f"/threads/{tid}/messages", json={"content": "x" * (limit + 1)})
    assert_refused(as_string, 400, "string_too_long", "content")
    as_output_shape = {"type": "text", "text": {"value": "x" * (limit + 1), "annotations": []}}
    refused = await client.post(f"/threads/{tid}/messages", json={"content": [as_output_shape]})
    assert_refused(refused, 400, "string_too_long", "content[0].text.value")


async def test_a_capability_message_may_nest_max_json_depth_and_no_more(api: API) -> None:
    api.settings_override(unknown_capabilities="accept")  # so the deepest allowed message is stored as is
    client, tid = await thread_of(api)
    limit = DEFAULTS.max_json_depth

    def message(depth: int) -> str:
        # the message object itself is one level: its payload adds the rest
        return json.dumps({"$schema": UNKNOWN_SCHEMA, "deep": nested(depth - 1)})

    accepted = await client.post(f"/threads/{tid}/messages", json={"content": ["hi", message(limit)]})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["aitp"][1]["validated"] is False
    refused = await client.post(f"/threads/{tid}/messages", json={"content": ["hi", message(limit + 1)]})
    assert_refused(refused, 400, "nesting_too_deep", "content[1]")


async def test_free_form_json_fields_may_nest_max_json_depth_and_no_more(api: API) -> None:
    """Deeper values could not even be stored (orjson writes at most 255 levels): they used to end as 500s."""
    client, tid = await thread_of(api)
    limit = DEFAULTS.max_json_depth
    ok = await client.post("/threads", json={"tool_resources": {"x": nested(limit - 1)}})
    assert ok.status_code == 200, ok.text
    for depth in (limit + 1, 300):
        refused = await client.post("/threads", json={"tool_resources": {"x": nested(depth - 1)}})
        assert_refused(refused, 400, "nesting_too_deep", "tool_resources")
        refused = await client.post(f"/threads/{tid}", json={"tool_resources": {"x": nested(depth - 1)}})
        assert_refused(refused, 400, "nesting_too_deep", "tool_resources")
        attachment = {"file_id": "file_1", "tools": nested(depth - 2)}
        refused = await client.post(f"/threads/{tid}/messages", json={"content": "hi", "attachments": [attachment]})
        assert_refused(refused, 400, "nesting_too_deep", "attachments")
        image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": nested(depth - 2)}}
        refused = await client.post(f"/threads/{tid}/messages", json={"content": [image]})
        assert_refused(refused, 400, "nesting_too_deep", "content[0]")


async def test_limits_apply_to_the_messages_a_thread_is_created_with(api: API) -> None:
    client = await api.actor("alice")
    limit = DEFAULTS.max_thread_messages
    accepted = await client.post("/threads", json={"messages": ["hi"] * limit})
    assert accepted.status_code == 200, accepted.text
    refused = await client.post("/threads", json={"messages": ["hi"] * (limit + 1)})
    assert_refused(refused, 400, "too_many_messages", "messages")

    too_long = "x" * (DEFAULTS.max_part_chars + 1)
    refused = await client.post("/thread", json={"messages": ["hi", too_long]})
    assert_refused(refused, 400, "string_too_long", "messages[1]")
    parts = ["p"] * (DEFAULTS.max_content_parts + 1)
    refused = await client.post("/threads", json={"messages": [{"role": "user", "content": parts}]})
    assert_refused(refused, 400, "too_many_parts", "messages[0].content")


async def test_metadata_follows_openai_rules_with_stable_codes(api: API) -> None:
    client = await api.actor("alice")
    sixteen = {f"k{i}": "v" * 512 for i in range(16)}
    assert (await client.post("/threads", json={"metadata": sixteen})).status_code == 200
    refused = await client.post("/threads", json={"metadata": {**sixteen, "k16": "v"}})
    assert_refused(refused, 400, "too_many_metadata_pairs", "metadata")
    refused = await client.post("/threads", json={"metadata": {"k": "v" * 513}})
    assert_refused(refused, 400, "string_too_long", "metadata.k")
    refused = await client.post("/threads", json={"metadata": {"k" * 65: "v"}})
    assert_refused(refused, 400, "string_too_long", "metadata." + "k" * 64)


# ------------------------------------------------------------------------------------- actors


def others(count: int, **actor: Any) -> list[dict[str, Any]]:
    return [{"id": f"agent-{i}.near", **actor} for i in range(count)]


async def known_others(api: API, count: int) -> None:
    """Make the actors of `others(count)` known: a thread may name only actors the server knows."""
    await api.known(*(other["id"] for other in others(count)))


async def test_a_thread_may_have_max_actors_and_no_more(api: API) -> None:
    """The creator counts: it joins the thread whether it lists itself or not."""
    client = await api.actor("alice")
    limit = DEFAULTS.max_actors
    await known_others(api, limit)
    accepted = await client.post("/threads", json={"actors": others(limit - 1)})
    assert accepted.status_code == 200 and len(accepted.json()["actors"]) == limit
    listed = await client.post("/threads", json={"actors": [{"id": "alice"}, *others(limit - 1)]})
    assert listed.status_code == 200 and len(listed.json()["actors"]) == limit

    refused = await client.post("/threads", json={"actors": others(limit)})
    assert_refused(refused, 400, "too_many_actors", "actors")
    as_metadata = await client.post("/thread", json={"metadata": {"actors": json.dumps(others(limit))}})
    assert_refused(as_metadata, 400, "too_many_actors", "metadata.actors")


async def test_a_full_thread_takes_no_new_actor_but_members_may_still_update(api: API) -> None:
    await known_others(api, DEFAULTS.max_actors - 1)
    await api.known("latecomer.near")
    client, tid = await thread_of(api, actors=others(DEFAULTS.max_actors - 1))
    refused = await client.post(f"/threads/{tid}/actors", json={"id": "latecomer.near"})
    assert_refused(refused, 400, "too_many_actors", "id")
    updated = await client.post(f"/threads/{tid}/actors", json={"id": "alice", "capabilities": [UNKNOWN_SCHEMA]})
    assert updated.status_code == 200, updated.text

    await client.delete(f"/threads/{tid}/actors/agent-0.near")
    assert (await client.post(f"/threads/{tid}/actors", json={"id": "latecomer.near"})).status_code == 200


async def test_an_actor_may_declare_max_capabilities_and_no_more(api: API) -> None:
    client = await api.actor("alice")
    limit = DEFAULTS.max_capabilities
    declarations = [f"https://example.com/capabilities/c{i}/v1.0.0/schema.json" for i in range(limit + 1)]
    await known_others(api, 1)
    accepted = await client.post("/threads", json={"actors": others(1, capabilities=declarations[:limit])})
    assert accepted.status_code == 200, accepted.text
    tid = accepted.json()["id"]

    refused = await client.post("/threads", json={"actors": [{"id": "bob"}, *others(1, capabilities=declarations)]})
    assert_refused(refused, 400, "too_many_capabilities", "actors[1].capabilities")
    refused = await client.post(f"/threads/{tid}/actors", json={"id": "alice", "capabilities": declarations})
    assert_refused(refused, 400, "too_many_capabilities", "capabilities")


# ------------------------------------------------------------------------------- registration


def schema_of_size(size: int) -> dict[str, Any]:
    """A valid JSON Schema whose compact JSON is exactly `size` bytes."""
    schema = {"type": "object", "description": ""}
    padding = size - len(json.dumps(schema, separators=(",", ":")))
    return {**schema, "description": "x" * padding}


def schema_of_depth(depth: int) -> dict[str, Any]:
    """A valid JSON Schema nesting `depth` objects: {"not": {"not": ... {}}}."""
    schema: dict[str, Any] = {}
    for _ in range(depth - 1):
        schema = {"not": schema}
    return schema


async def test_a_schema_may_be_max_schema_bytes_and_no_more(api: API) -> None:
    limit = DEFAULTS.max_schema_bytes
    accepted = await api.admin.post(
        "/capabilities", json={"id": "big", "version": "1.0.0", "schema": schema_of_size(limit)}
    )
    assert accepted.status_code == 201, accepted.text[:500]
    body = {"id": "bigger", "version": "1.0.0", "schema": schema_of_size(limit + 1)}
    assert_refused(await api.admin.post("/capabilities", json=body), 400, "schema_too_large", "schema")


async def test_a_schema_may_nest_max_schema_depth_and_no_more(api: API) -> None:
    limit = DEFAULTS.max_schema_depth
    accepted = await api.admin.post(
        "/capabilities", json={"id": "deep", "version": "1.0.0", "schema": schema_of_depth(limit)}
    )
    assert accepted.status_code == 201, accepted.text
    body = {"id": "deeper", "version": "1.0.0", "schema": schema_of_depth(limit + 1)}
    assert_refused(await api.admin.post("/capabilities", json=body), 400, "nesting_too_deep", "schema")
    body = {"id": "deeper", "version": "1.0.0", "schema": {}, "examples": [{"x": nested(DEFAULTS.max_json_depth)}]}
    assert_refused(await api.admin.post("/capabilities", json=body), 400, "nesting_too_deep", "examples[0]")


# ------------------------------------------------------------------------------------ body size


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` as JSON followed by whitespace (still the same JSON) up to exactly `size` bytes."""
    data = json.dumps(body).encode()
    return data + b" " * (size - len(data))


async def test_a_body_of_max_body_bytes_is_read_and_one_byte_more_is_413(api: API) -> None:
    client, tid = await thread_of(api)
    limit = DEFAULTS.max_body_bytes
    headers = {"content-type": "application/json"}
    accepted = await client.post(f"/threads/{tid}/messages", content=padded({"content": "hi"}, limit), headers=headers)
    assert accepted.status_code == 200, accepted.text
    refused = await client.post(
        f"/threads/{tid}/messages", content=padded({"content": "hi"}, limit + 1), headers=headers
    )
    assert refused.status_code == 413
    assert refused.headers["connection"] == "close"
    assert refused.json() == {
        "error": {
            "message": f"The request body is larger than the server accepts ({limit} bytes).",
            "type": "invalid_request_error",
            "param": None,
            "code": "request_too_large",
        }
    }


class Chunks:
    """A streamed request body (no Content-Length): a first chunk, then `count` chunks of `size` spaces,
    counting how many of those the server asked for."""

    def __init__(self, first: bytes, size: int, count: int) -> None:
        self.first, self.size, self.count = first, size, count
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        for _ in range(self.count):
            self.sent += 1
            yield b" " * self.size


async def test_a_chunked_body_is_counted_as_it_arrives_and_cut_off_at_the_limit(api: API) -> None:
    client, tid = await thread_of(api)
    size = 64 * 1024
    chunks = DEFAULTS.max_body_bytes // size
    headers = {"content-type": "application/json"}
    first = padded({"content": "hi"}, size)
    exactly = Chunks(first, size, chunks - 1)
    accepted = await client.post(f"/threads/{tid}/messages", content=exactly, headers=headers)
    assert accepted.status_code == 200, accepted.text
    assert accepted.request.headers["transfer-encoding"] == "chunked"

    endless = Chunks(first, size, 16 * 1024)  # 1 GiB, were it all read
    refused = await client.post(f"/threads/{tid}/messages", content=endless, headers=headers)
    assert_refused(refused, 413, "request_too_large", None)
    assert endless.sent == chunks  # the one that crossed the limit was the last chunk read


def test_a_real_server_answers_413_before_a_chunked_body_ends(live_server: ServerProcess) -> None:
    """Over a socket: the body never ends, yet the answer comes, and the server closes the connection."""
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/threads HTTP/1.1\r\nHost: aitp\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + ADMIN_KEY.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b" " * (64 * 1024)
        for _ in range(DEFAULTS.max_body_bytes // len(chunk)):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        # one byte over the limit and no terminating chunk: the body is still open when the answer comes
        sock.sendall(b"1\r\n \r\n")
        answer = b""
        while data := sock.recv(65536):
            answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), head
    assert b"connection: close" in head.lower()
    assert json.loads(body)["error"]["code"] == "request_too_large"


async def test_a_post_over_the_websocket_follows_the_same_limits(live_server: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1") as http:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = (await http.post("/keys", json={"actor": "alice"}, headers=admin)).json()["key"]
        created = await http.post("/threads", json={}, headers={"Authorization": f"Bearer {key}"})
        tid = created.json()["id"]
    async with ws_connect(live_server.base_url, f"/threads/{tid}/events/ws", key) as ws:
        parts = ["p"] * (DEFAULTS.max_content_parts + 1)
        await ws.send(json.dumps({"op": "post", "ref": 1, "message": {"content": parts}}))
        await ws.send(json.dumps({"op": "post", "ref": 2, "message": {"content": "x" * (DEFAULTS.max_part_chars + 1)}}))
        replies = {}
        while len(replies) < 2:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if frame.get("op") == "error":
                replies[frame["ref"]] = frame
    assert replies[1]["status"] == 400 and replies[1]["error"]["error"]["code"] == "too_many_parts"
    assert replies[1]["error"]["error"]["param"] == "content"
    assert replies[2]["status"] == 400 and replies[2]["error"]["error"]["code"] == "string_too_long"
    assert replies[2]["error"]["error"]["param"] == "content"


async def test_a_websocket_frame_over_the_body_limit_closes_the_socket_with_1009(live_server: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1") as http:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = (await http.post("/keys", json={"actor": "alice"}, headers=admin)).json()["key"]
    async with ws_connect(live_server.base_url, "/actors/me/events/ws", key) as ws:
        await ws.send(" " * (DEFAULTS.max_body_bytes + 1))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"


@pytest.mark.parametrize("path", ["/threads", "/capabilities"])
async def test_a_declared_length_over_the_limit_is_refused_unread(api: API, path: str) -> None:
    """A Content-Length over the limit is enough: the body is not looked at (here, it is not even JSON)."""
    body = b"x" * (DEFAULTS.max_body_bytes + 1)
    refused = await api.admin.post(path, content=body, headers={"content-type": "application/json"})
    assert_refused(refused, 413, "request_too_large", None)
