"""An empty request body is answered at once on every POST route, against a real server.

An empty body (`Content-Length: 0`, or a chunked body of no chunk) is read as `{}`, as OpenAI does: a
route whose body fields are all optional (create a thread, modify a thread or a message) answers as for
`{}`; the others refuse it naming the first required parameter (400 `missing_required_parameter`),
whatever the `Content-Type` (JSON, a `+json` type, or none) and with an `Idempotency-Key` too.

It used to hang: a route that skipped FastAPI's parameter solving read the empty body, then handed the request to
FastAPI's path, which read the body again and waited for one that never came, until the client gave up.

The routes come from the app's own route table, so a new POST route is covered without editing this file.
"""

from __future__ import annotations

import json
import re
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from aitp.app import create_app
from aitp.config import Settings
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY

# Generous next to a local answer (milliseconds); the bug was an answer that never came.
CLIENT_TIMEOUT = 10


@dataclass(frozen=True)
class PostRoute:
    template: str
    required: tuple[str, ...] | None  # the body's required fields; None: the body itself is optional
    takes_body: bool = True  # False: an action on the object its path names (rotate a secret, redeliver)

    def __str__(self) -> str:
        return self.template


def post_routes() -> list[PostRoute]:
    """Every POST route under /v1 the app serves, with what its body requires."""
    app = create_app(Settings(store_url="sqlite:///:memory:", admin_key=ADMIN_KEY))
    found = []
    for route in app.routes:
        if not (isinstance(route, APIRoute) and "POST" in route.methods and route.path.startswith("/v1/")):
            continue
        body = route.body_field
        if body is None:  # an action: the empty body is the whole request, answered as any other
            found.append(PostRoute(route.path, None, takes_body=False))
            continue
        required = None
        if body.field_info.is_required():
            schema = body.field_info.annotation.model_json_schema()  # type: ignore[union-attr]
            required = tuple(schema.get("required", ()))
        found.append(PostRoute(route.path, required))
    return found


ROUTES = post_routes()

VARIANTS: dict[str, bytes] = {
    "json, Content-Length 0": b"Content-Type: application/json\r\nContent-Length: 0\r\n\r\n",
    "json, chunked, no chunk": b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "+json type": b"Content-Type: application/merge-patch+json; charset=utf-8\r\nContent-Length: 0\r\n\r\n",
    "no Content-Type": b"Content-Length: 0\r\n\r\n",
    "no Content-Type, chunked": b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "json, Idempotency-Key": b"Content-Type: application/json\r\nContent-Length: 0\r\nIdempotency-Key: {key}\r\n\r\n",
}


def test_the_route_table_has_both_kinds_of_body() -> None:
    """A guard on the generator: routes where an empty body is `{}` and routes that need fields."""
    optional = {route.template for route in ROUTES if route.required is None}
    assert {"/v1/threads", "/v1/thread", "/v1/threads/{thread_id}"} <= optional
    needed = {route.template for route in ROUTES if route.required}
    assert {"/v1/threads/{thread_id}/messages", "/v1/keys", "/v1/capabilities"} <= needed


def exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send a raw request, read one response: status, headers, body (by its Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed without an answer: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed in the middle of the answer"
            body += chunk
        return int(status_line.split()[1]), headers, body


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    from aitp.testing import start_server

    tmp = tmp_path_factory.mktemp("empty-bodies")
    process = start_server(
        f"sqlite:///{tmp / 'aitp.db'}", tmp / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_RATE_LIMIT": "0"}
    )
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def ids(server: ServerProcess) -> dict[str, str]:
    """A thread and one of its messages, for the path parameters."""
    auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=f"{server.base_url}/v1", headers=auth, timeout=CLIENT_TIMEOUT) as client:
        thread = client.post("/threads", json={"messages": ["hi"]}).json()["id"]
        message = client.get(f"/threads/{thread}/messages").json()["data"][0]["id"]
    return {"thread_id": thread, "message_id": message}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_an_empty_body_is_answered_at_once(
    server: ServerProcess, ids: dict[str, str], route: PostRoute, variant: str
) -> None:
    # an id this test does not make names nothing: the answer is a 404, as promptly
    path = re.sub(r"\{(\w+)\}", lambda match: ids.get(match[1], "missing"), route.template)
    head = f"POST {path} HTTP/1.1\r\nHost: aitp.test\r\nAuthorization: Bearer {ADMIN_KEY}\r\n".encode()
    rest = VARIANTS[variant].replace(b"{key}", uuid.uuid4().hex.encode())
    try:
        status, headers, body = exchange(server.port, head + rest)
    except TimeoutError:
        pytest.fail(f"POST {route} with an empty body ({variant}): no answer within {CLIENT_TIMEOUT} s")
    answer: Any = json.loads(body)
    if not route.takes_body:
        assert status in (200, 201, 404), answer
    elif route.required is None:
        assert status in (200, 201), answer  # answered as for `{}`
        assert "error" not in answer
    else:
        assert status == 400, answer
        error = answer["error"]
        assert error["code"] == "missing_required_parameter", error
        assert error["param"] in route.required, error
        assert error["message"] == f"Missing required parameter: '{error['param']}'."
    assert headers["content-type"].startswith("application/json")
