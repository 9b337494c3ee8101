"""Restart persistence on the embedded SQLite store: a new server process on the same file sees
exactly what the previous one wrote, and per-thread sequence numbers carry on where they stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

USER = "user.near"
SHOP = "shop.near"
CAPABILITIES = ["https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"]


def client(server: ServerProcess, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"})


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json()


def mint_key(server: ServerProcess, actor: str) -> str:
    with client(server, ADMIN_KEY) as admin:
        return ok(admin.post("/keys", json={"actor": actor}))["key"]


def snapshot(http: httpx.Client, thread_id: str) -> dict[str, Any]:
    """Everything a member can read about a thread."""
    return {
        "thread": ok(http.get(f"/threads/{thread_id}")),
        "messages": ok(http.get(f"/threads/{thread_id}/messages", params={"order": "asc", "limit": 100})),
        "actors": ok(http.get(f"/threads/{thread_id}/actors")),
        "events": ok(http.get(f"/threads/{thread_id}/events", params={"limit": 1000})),
        "threads": ok(http.get("/threads")),
    }


def test_thread_messages_and_events_survive_a_restart_and_seq_continues(tmp_path: Path) -> None:
    """Create, modify and delete on one server; a second server on the same file reads it all back
    identically, keys included, and the next write takes the next seq."""
    store_url = f"sqlite:///{tmp_path / 'aitp.db'}"
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}  # the user may bring the shop in

    first = start_server(store_url, tmp_path / "first.log", env)
    try:
        user_key, shop_key = mint_key(first, USER), mint_key(first, SHOP)
        with client(first, user_key) as user, client(first, shop_key) as shop:
            thread = ok(
                user.post(
                    "/threads",
                    json={
                        "actors": [{"id": USER}, {"id": SHOP, "client_id": "shop/1", "capabilities": CAPABILITIES}],
                        "metadata": {"topic": "shoes"},
                    },
                )
            )
            thread_id = thread["id"]
            posted = []
            for i in range(5):
                author, role = (user, "user") if i % 2 == 0 else (shop, "assistant")
                posted.append(
                    ok(
                        author.post(
                            f"/threads/{thread_id}/messages",
                            json={
                                "role": role,
                                "content": [f"message {i}", {"type": "text", "text": "part"}],
                                "metadata": {"n": str(i)},
                            },
                        )
                    )
                )
            ok(user.post(f"/threads/{thread_id}", json={"metadata": {"topic": "boots", "stage": "offer"}}))
            seen = {"metadata": {"n": "1", "seen": "yes"}}
            ok(shop.post(f"/threads/{thread_id}/messages/{posted[1]['id']}", json=seen))
            ok(user.delete(f"/threads/{thread_id}/messages/{posted[2]['id']}"))
            before = snapshot(user, thread_id)
    finally:
        first.stop()

    # What was written before the restart, as the first server reported it.
    assert before["thread"]["metadata"]["topic"] == "boots"
    assert [m["id"] for m in before["messages"]["data"]] == [posted[i]["id"] for i in (0, 1, 3, 4)]
    assert before["messages"]["data"][1]["metadata"] == {"n": "1", "seen": "yes", "actor": SHOP}
    assert [e["type"] for e in before["events"]["data"]] == (
        ["thread.created"]
        + ["thread.message.created"] * 5
        + ["thread.updated", "thread.message.updated", "thread.message.deleted"]
    )
    assert [e["seq"] for e in before["events"]["data"]] == list(range(1, 10))
    assert before["events"]["last_seq"] == 9 and before["events"]["has_more"] is False

    second = start_server(store_url, tmp_path / "second.log", env)
    try:
        with client(second, user_key) as user, client(second, shop_key) as shop:
            after = snapshot(user, thread_id)
            assert after == before
            assert snapshot(shop, thread_id)["events"] == before["events"]

            reply = ok(shop.post(f"/threads/{thread_id}/messages", json={"role": "assistant", "content": "still here"}))
            events = ok(user.get(f"/threads/{thread_id}/events", params={"after": 9}))
            messages = ok(user.get(f"/threads/{thread_id}/messages", params={"order": "asc", "limit": 100}))
    finally:
        second.stop()

    assert [(e["seq"], e["type"]) for e in events["data"]] == [(10, "thread.message.created")]
    assert events["data"][0]["data"] == reply
    assert events["last_seq"] == 10
    assert [m["id"] for m in messages["data"]] == [m["id"] for m in before["messages"]["data"]] + [reply["id"]]
    assert reply["role"] == "assistant" and reply["metadata"] == {"actor": SHOP}


def test_a_deleted_thread_stays_deleted_after_a_restart(tmp_path: Path) -> None:
    """Deletion is durable: the next server answers 404 and keeps only the final event."""
    store_url = f"sqlite:///{tmp_path / 'aitp.db'}"
    env = {"AITP_ADMIN_KEY": ADMIN_KEY}

    first = start_server(store_url, tmp_path / "first.log", env)
    try:
        user_key = mint_key(first, USER)
        with client(first, user_key) as user:
            thread_id = ok(user.post("/threads", json={"messages": ["one", "two"]}))["id"]
            ok(user.delete(f"/threads/{thread_id}"))
    finally:
        first.stop()

    second = start_server(store_url, tmp_path / "second.log", env)
    try:
        with client(second, user_key) as user, client(second, ADMIN_KEY) as admin:
            assert user.get(f"/threads/{thread_id}").status_code == 404
            assert user.get(f"/threads/{thread_id}/messages").status_code == 404
            assert ok(user.get("/threads"))["data"] == []
            assert admin.get(f"/threads/{thread_id}").status_code == 404
    finally:
        second.stop()
