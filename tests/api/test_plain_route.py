"""POST /v1/threads/{thread_id}/messages, the ingest hot path, is served by a plain Starlette endpoint
(`openai_threads.messages.post_message`) instead of FastAPI's per-request parameter solving, and answers exactly
as FastAPI serving the route's declared endpoint would: same status, same envelope, same message."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import fastapi.routing
import httpx
import pytest

from aitp.app import create_app
from aitp.bindings.http.route import ApiRoute
from aitp.bindings.openai_threads import messages
from aitp.config import Settings
from aitp.store import Store
from tests.conftest import ADMIN_KEY, API

JSON = "application/json"
# valid bodies and every kind of refusal the body model gives (missing, wrong type, unknown field, enum, union
# branch, nested list item, null for a required body, not an object), then bodies that are not JSON to the
# model: no or another content type, empty, unparseable, unstorable
BODIES: list[tuple[str | None, bytes]] = [
    (JSON, b'{"content": "hello"}'),
    (JSON, b'{"content": ["a", "b"], "metadata": {"k": "v"}}'),
    (JSON, b"{}"),
    (JSON, b'{"content": 5}'),
    (JSON, b'{"content": "x", "role": "bot"}'),
    (JSON, b'{"content": "x", "colour": "red"}'),
    (JSON, b'{"content": [{"type": "text"}]}'),
    (JSON, b'{"content": [{"type": "text", "text": "x"}, {"type": "image_url"}]}'),
    (JSON, b'{"content": "x", "metadata": {"k": 1}}'),
    (JSON, b"[]"),
    (JSON, b"null"),
    (JSON, b'"text"'),
    ("application/merge-patch+json; charset=utf-8", b'{"content": "patch"}'),
    (None, b'{"content": "no type"}'),
    ("text/plain", b'{"content": "plain"}'),
    ("application/x-www-form-urlencoded", b"content=form"),
    (JSON, b""),
    (None, b""),
    (JSON, b'{"content": '),
    (JSON, b'{"content": NaN}'),
    (JSON, b'{"content": "\\ud800"}'),
]


def message_route() -> ApiRoute:
    route = next(r for r in messages.router.routes if getattr(r, "endpoint", None) is messages.create_message)
    assert isinstance(route, ApiRoute) and "POST" in route.methods
    return route


async def _answers(store: Store) -> list[tuple[Any, ...]]:
    """What each body above gets (and a wrong key, and a thread of others), through a fresh app on `store`."""
    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://aitp.test/v1") as client:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = (await client.post("/keys", json={"actor": "root.near"}, headers=admin)).json()["key"]
        headers = {"Authorization": f"Bearer {key}"}
        thread = (await client.post("/threads", json={}, headers=headers)).json()["id"]
        others = (await client.post("/threads", json={}, headers=admin)).json()["id"]
        requests = [(thread, content_type, body, headers) for content_type, body in BODIES]
        requests += [(others, JSON, b'{"content": "x"}', headers)]
        requests += [(thread, JSON, b'{"content": "x"}', {"Authorization": "Bearer aitp_wrong"})]
        answers = []
        for thread_id, content_type, body, request_headers in requests:
            sent = {**request_headers, **({"Content-Type": content_type} if content_type else {})}
            response = await client.post(f"/threads/{thread_id}/messages", content=body, headers=sent)
            answer = response.json()
            if response.status_code == 200:
                answer = {k: answer[k] for k in ("object", "role", "content", "metadata", "aitp")}
            text = json.dumps(answer).replace(thread, "<thread>").replace(others, "<others>")
            answers.append((response.status_code, text))
        return answers


async def test_the_plain_endpoint_answers_exactly_as_fastapi_serving_the_declaration(
    api: API, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = await _answers(store)
    route = message_route()
    monkeypatch.setattr(route, "app", fastapi.routing.request_response(route.get_route_handler()))
    through_fastapi = await _answers(store)
    assert plain == through_fastapi
    assert {status for status, _ in plain} == {200, 400, 401, 404}


async def test_a_posted_message_skips_dependency_solving(api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    solved: list[Callable[..., Any]] = []
    solve = fastapi.routing.solve_dependencies

    async def counting(*args: Any, **kwargs: Any) -> Any:
        solved.append(kwargs["dependant"].call)
        return await solve(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    root = await api.actor("root.near")
    thread = (await root.post("/threads", json={"messages": ["hi"]})).json()["id"]
    solved.clear()
    assert (await root.post(f"/threads/{thread}/messages", json={"content": "hello"})).status_code == 200
    assert solved == []
    # every other route goes through FastAPI
    assert (await root.get(f"/threads/{thread}/messages", params={"limit": 1})).status_code == 200
    assert (await root.post(f"/threads/{thread}")).status_code == 200
    assert len(solved) == 2


def test_the_route_stays_documented() -> None:
    operation = create_app(Settings(store_url="sqlite:///:memory:")).openapi()["paths"][
        "/v1/threads/{thread_id}/messages"
    ]
    assert operation["post"]["requestBody"]["content"][JSON]["schema"] == {
        "$ref": "#/components/schemas/CreateMessageRequest"
    }
    assert [p["name"] for p in operation["post"]["parameters"]] == ["thread_id", "Idempotency-Key"]
