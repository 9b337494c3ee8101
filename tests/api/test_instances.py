"""Several service processes on one store: an event written through any of them reaches subscribers of all."""

from __future__ import annotations

from pathlib import Path

import httpx

from aitp.testing import start_server
from tests.conftest import ADMIN_KEY, Backend
from tests.support.live import ws_connect, ws_events

MESSAGES = 50


async def test_a_subscriber_on_one_instance_receives_in_order_what_another_instance_writes(
    backend: Backend, tmp_path: Path
) -> None:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY}
    first = start_server(backend.url, tmp_path / "a.log", env)
    second = start_server(backend.url, tmp_path / "b.log", env)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=second.base_url + "/v1", headers=admin, timeout=30) as on_b:
            key = (await on_b.post("/keys", json={"actor": "alice"})).json()["key"]
            on_b.headers["Authorization"] = f"Bearer {key}"
            tid = (await on_b.post("/threads", json={"actors": [{"id": "alice"}]})).json()["id"]

            async with ws_connect(first.base_url, f"/threads/{tid}/events/ws", key, params={"after": 1}) as on_a:
                posted = []
                for i in range(MESSAGES):
                    response = await on_b.post(f"/threads/{tid}/messages", json={"content": f"m{i}"})
                    assert response.status_code == 200, response.text
                    posted.append(response.json()["id"])
                received = await ws_events(on_a, MESSAGES)

        assert [e["data"]["id"] for e in received] == posted
        assert [e["seq"] for e in received] == list(range(2, MESSAGES + 2))
        if backend.name != "sqlite":
            assert "following events through a MongoDB change stream" in first.output()
    finally:
        first.stop()
        second.stop()


async def test_a_membership_change_on_one_instance_reaches_posts_on_another(backend: Backend, tmp_path: Path) -> None:
    # instance A reuses the actors it read for bob's first post; his removal through B still stops the next
    env = {"AITP_ADMIN_KEY": ADMIN_KEY}
    first = start_server(backend.url, tmp_path / "a.log", env)
    second = start_server(backend.url, tmp_path / "b.log", env)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with (
            httpx.AsyncClient(base_url=first.base_url + "/v1", headers=admin, timeout=30) as on_a,
            httpx.AsyncClient(base_url=second.base_url + "/v1", headers=admin, timeout=30) as on_b,
        ):
            alice = (await on_b.post("/keys", json={"actor": "alice"})).json()["key"]
            bob = (await on_b.post("/keys", json={"actor": "bob"})).json()["key"]
            as_alice, as_bob = {"Authorization": f"Bearer {alice}"}, {"Authorization": f"Bearer {bob}"}
            created = await on_b.post("/threads", json={"actors": [{"id": "bob"}]}, headers=as_alice)
            tid = created.json()["id"]
            url = f"/threads/{tid}/messages"
            assert (await on_a.post(url, json={"content": "before"}, headers=as_bob)).status_code == 200
            assert (await on_b.delete(f"/threads/{tid}/actors/bob", headers=as_alice)).status_code == 200
            # at once: the append checks membership in its own transaction, whatever this instance remembers
            refused = await on_a.post(url, json={"content": "after"}, headers=as_bob)
            assert refused.status_code == 404, refused.text
            texts = [m["content"][0]["text"]["value"] for m in (await on_b.get(url, headers=as_alice)).json()["data"]]
            assert "before" in texts
    finally:
        first.stop()
        second.stop()
