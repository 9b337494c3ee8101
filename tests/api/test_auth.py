"""Identity and access: bearer keys, admin-only key management, thread ids never leak."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import API

ROUTES = [
    ("GET", "/threads"),
    ("POST", "/threads"),
    ("POST", "/thread"),
    ("GET", "/threads/t"),
    ("POST", "/threads/t"),
    ("DELETE", "/threads/t"),
    ("GET", "/threads/t/messages"),
    ("POST", "/threads/t/messages"),
    ("GET", "/threads/t/messages/m"),
    ("POST", "/threads/t/messages/m"),
    ("DELETE", "/threads/t/messages/m"),
    ("GET", "/threads/t/actors"),
    ("POST", "/threads/t/actors"),
    ("DELETE", "/threads/t/actors/a"),
    ("GET", "/threads/t/events"),
    ("GET", "/actors/me"),
    ("GET", "/keys"),
    ("POST", "/keys"),
    ("DELETE", "/keys/k"),
]


@pytest.mark.parametrize("method,path", ROUTES)
async def test_every_v1_route_needs_a_key(api: API, method: str, path: str) -> None:
    for client in (api.client(None), api.client("aitp_wrong")):
        response = await client.request(method, path, json={})
        assert response.status_code == 401, (method, path)
        assert response.json()["error"]["type"] == "authentication_error"


async def test_malformed_authorization_header_is_401(api: API) -> None:
    client = api.client(None)
    response = await client.get("/threads", headers={"Authorization": "Basic abc"})
    assert response.status_code == 401


async def test_health_and_openapi_need_no_key(api: API) -> None:
    client = httpx.AsyncClient(transport=api._transport, base_url="http://aitp.test")
    assert (await client.get("/health")).json()["status"] == "ok"
    assert (await client.get("/openapi.json")).status_code == 200


async def test_only_admin_manages_keys(api: API) -> None:
    actor = await api.actor("root.near")
    for method, path in (("GET", "/keys"), ("POST", "/keys"), ("DELETE", "/keys/key_x")):
        response = await actor.request(method, path, json={"actor": "x"})
        assert response.status_code == 403, (method, path)
        assert response.json()["error"]["code"] == "admin_required"


async def test_keys_are_shown_once_listed_without_secret_and_revocable(api: API) -> None:
    created = (await api.admin.post("/keys", json={"actor": "travel-agent.near"})).json()
    assert created["key"].startswith("aitp_") and created["actor"] == "travel-agent.near"
    assert created["admin"] is False
    listed = (await api.admin.get("/keys")).json()["data"]
    entry = next(k for k in listed if k["id"] == created["id"])
    assert "key" not in entry and created["key"].startswith(entry["prefix"])
    assert all(created["key"] not in str(v) for v in entry.values())
    client = api.client(created["key"])
    assert (await client.get("/threads")).status_code == 200
    assert (await api.admin.delete(f"/keys/{created['id']}")).json()["deleted"] is True
    assert (await client.get("/threads")).status_code == 401
    assert (await api.admin.delete(f"/keys/{created['id']}")).status_code == 404


async def test_key_requests_are_validated(api: API) -> None:
    for body, param in (({}, "actor"), ({"actor": ""}, "actor"), ({"actor": "a", "scopes": ["root"]}, "scopes[0]")):
        response = await api.admin.post("/keys", json=body)
        assert response.status_code == 400, body
        assert response.json()["error"]["param"] == param


async def test_a_key_tells_who_it_acts_as(api: API) -> None:
    created = (await api.admin.post("/keys", json={"actor": "shop.near", "scopes": ["capabilities:write"]})).json()
    me = (await api.client(created["key"]).get("/actors/me")).json()
    assert me == {
        "object": "actor.identity",
        "id": "shop.near",
        "admin": False,
        "key_id": created["id"],
        "scopes": ["capabilities:write"],
    }
    admin = (await api.admin.get("/actors/me")).json()
    assert (admin["id"], admin["admin"], admin["key_id"]) == ("admin", True, None)


async def test_an_admin_key_created_through_the_api_is_admin(api: API) -> None:
    key = (await api.admin.post("/keys", json={"actor": "ops", "admin": True})).json()["key"]
    assert (await api.client(key).get("/keys")).status_code == 200


async def test_non_members_get_404_on_every_thread_route(api: API) -> None:
    """A member of thread A probing thread B learns nothing: the same 404 as a missing thread."""
    owner = await api.actor("owner.near")
    prober = await api.actor("prober.near")
    thread_id = (await owner.post("/threads", json={"messages": ["secret"]})).json()["id"]
    message_id = (await owner.get(f"/threads/{thread_id}/messages")).json()["data"][0]["id"]
    probes = [
        ("GET", f"/threads/{thread_id}", None),
        ("POST", f"/threads/{thread_id}", {}),
        ("DELETE", f"/threads/{thread_id}", None),
        ("GET", f"/threads/{thread_id}/messages", None),
        ("POST", f"/threads/{thread_id}/messages", {"content": "x"}),
        ("GET", f"/threads/{thread_id}/messages/{message_id}", None),
        ("DELETE", f"/threads/{thread_id}/messages/{message_id}", None),
        ("GET", f"/threads/{thread_id}/actors", None),
        ("POST", f"/threads/{thread_id}/actors", {"id": "prober.near"}),
        ("GET", f"/threads/{thread_id}/events", None),
    ]
    missing = (await prober.get("/threads/thread_doesnotexist")).json()
    for method, path, body in probes:
        response = await prober.request(method, path, json=body)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == missing["error"]["code"] == "thread_not_found"
    assert (await prober.get("/threads")).json()["data"] == []
