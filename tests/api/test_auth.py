"""Bearer keys: admin-only key management, keys shown once and revocable.

Every route needing a key, and thread ids never leaking, are specified over the whole route table in
tests/api/test_security.py."""

from __future__ import annotations

from tests.conftest import API


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
    assert isinstance(me.pop("inbox_cursor"), int)  # where the log stands: 0 on SQLite, a position on MongoDB
    assert me == {
        "object": "actor.identity",
        "id": "shop.near",
        "admin": False,
        "key_id": created["id"],
        "scopes": ["capabilities:write"],
    }
    admin = (await api.admin.get("/actors/me")).json()
    assert (admin["id"], admin["admin"], admin["key_id"]) == ("admin", True, None)
    # the inbox position moves with the store's event log: subscribing after it skips the past
    thread = (await api.client(created["key"]).post("/threads", json={"messages": ["hi"]})).json()
    now = (await api.client(created["key"]).get("/actors/me")).json()["inbox_cursor"]
    inbox = (await api.client(created["key"]).get("/actors/me/events", params={"after": 0})).json()["data"]
    assert [e["cursor"] for e in inbox][-1] <= now and all(e["thread_id"] == thread["id"] for e in inbox)
    assert (await api.client(created["key"]).get("/actors/me/events", params={"after": now})).json()["data"] == []


async def test_an_admin_key_created_through_the_api_is_admin(api: API) -> None:
    key = (await api.admin.post("/keys", json={"actor": "ops", "admin": True})).json()["key"]
    assert (await api.client(key).get("/keys")).status_code == 200
