"""Direct routes: POSTs with a JSON body skip FastAPI's dependency solving and answer exactly as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fastapi.routing
import httpx
import pytest

from aitp.api.direct_route import DirectRoute
from aitp.api.route import ApiRoute
from aitp.app import create_app
from aitp.config import Settings
from aitp.store import Store
from tests.conftest import ADMIN_KEY, API

# valid bodies and every kind of refusal the body model gives (missing, wrong type, unknown field,
# enum, union branch, nested list item, null for a required body, not an object)
MESSAGE_BODIES: list[Any] = [
    {"content": "hello"},
    {"content": ["a", "b"], "metadata": {"k": "v"}},
    {},
    {"content": 5},
    {"content": "x", "role": "bot"},
    {"content": "x", "colour": "red"},
    {"content": [{"type": "text"}]},
    {"content": [{"type": "text", "text": "x"}, {"type": "image_url"}]},
    {"content": "x", "metadata": {"k": 1}},
    [],
    None,
]
ACTOR_BODIES: list[Any] = [{"id": "shop.near"}, {}, {"id": 3}, {"id": "x", "capabilities": "nope"}]
THREAD_BODIES: list[Any] = [{}, {"messages": ["hi"]}, {"messages": "hi"}, {"actors": [{"capabilities": []}]}, None]


async def _answers(store: Store) -> list[tuple[Any, ...]]:
    """Status, error code and param for every body above, through a fresh app on `store`."""
    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://aitp.test/v1") as client:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = (await client.post("/keys", json={"actor": "root.near"}, headers=admin)).json()["key"]
        headers = {"Authorization": f"Bearer {key}"}
        thread = (await client.post("/threads", json={}, headers=headers)).json()["id"]
        requests = [(f"/threads/{thread}/messages", body, headers) for body in MESSAGE_BODIES]
        requests += [(f"/threads/{thread}/actors", body, headers) for body in ACTOR_BODIES]
        requests += [("/threads", body, headers) for body in THREAD_BODIES]
        requests += [(f"/threads/{thread}/messages", {"content": "x"}, {"Authorization": "Bearer aitp_wrong"})]
        requests += [("/keys", {"actor": "x"}, headers), ("/keys", {"actor": 1}, admin)]
        answers = []
        for path, body, request_headers in requests:
            response = await client.post(path, json=body, headers=request_headers)
            error = response.json()["error"] if response.status_code >= 400 else {"code": None, "param": None}
            answers.append((path.split("/")[-1], response.status_code, error["code"], error["param"]))
        return answers


async def test_direct_routes_answer_exactly_as_fastapi_does(
    api: API, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct = await _answers(store)
    monkeypatch.setattr(DirectRoute, "get_route_handler", ApiRoute.get_route_handler)
    through_fastapi = await _answers(store)
    assert direct == through_fastapi
    assert {status for _, status, _, _ in direct} >= {200, 400, 401, 403}


async def test_a_post_with_a_json_body_skips_dependency_solving(api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    solved: list[Callable[..., Any]] = []
    solve = fastapi.routing.solve_dependencies

    async def counting(*args: Any, **kwargs: Any) -> Any:
        solved.append(kwargs["dependant"].call)
        return await solve(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    root = await api.actor("root.near")
    solved.clear()
    thread = (await root.post("/threads", json={"messages": ["hi"]})).json()["id"]
    assert (await root.post(f"/threads/{thread}/messages", json={"content": "hello"})).status_code == 200
    assert solved == []
    # routes with query parameters, or a request without a JSON body, still go through FastAPI
    assert (await root.get(f"/threads/{thread}/messages", params={"limit": 1})).status_code == 200
    assert (await root.post(f"/threads/{thread}")).status_code == 200
    assert len(solved) == 2
