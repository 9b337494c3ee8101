"""Several service processes on one store: an event written through any of them reaches subscribers of all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from aitp.testing import start_server
from tests.api.test_capability_registration import ORDERS_URL, order, registration
from tests.conftest import ADMIN_KEY, Backend
from tests.support.live import ws_connect, ws_events
from tests.support.sqlite_lock import write_lock_held

MESSAGES = 50


@asynccontextmanager
async def two_instances(backend: Backend, tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Two server processes on the backend's store, and an admin client of each (anyone may contact the actors
    their keys make)."""
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}
    first = start_server(backend.url, tmp_path / "a.log", env)
    second = start_server(backend.url, tmp_path / "b.log", env)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    try:
        async with (
            httpx.AsyncClient(base_url=first.base_url + "/v1", headers=admin, timeout=30) as on_a,
            httpx.AsyncClient(base_url=second.base_url + "/v1", headers=admin, timeout=30) as on_b,
        ):
            yield on_a, on_b
    finally:
        first.stop()
        second.stop()


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
    async with two_instances(backend, tmp_path) as (on_a, on_b):
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


async def test_a_version_registered_through_one_instance_is_soon_usable_in_posts_on_another(
    backend: Backend, tmp_path: Path
) -> None:
    # A's registry follows the store in the background: nothing on A reads the capability before the posts
    async with two_instances(backend, tmp_path) as (on_a, on_b):
        created = await on_a.post("/threads", json={"actors": [{"id": "admin", "capabilities": [ORDERS_URL]}]})
        url = f"/threads/{created.json()['id']}/messages"
        assert (await on_b.post("/capabilities", json=registration())).status_code == 201
        for _ in range(200):
            posted = await on_a.post(url, json={"content": json.dumps(order())})
            if posted.status_code == 200:
                break
            assert posted.json()["error"]["code"] == "unknown_capability", posted.text
            await asyncio.sleep(0.05)
        assert posted.status_code == 200, posted.text
        assert posted.json()["aitp"][0]["capability"] == "acme-orders"


JOINS = 20
MAX_ACTORS = 4


async def _join_concurrently(backend: Backend, base_urls: list[str]) -> tuple[list[httpx.Response], list[str]]:
    """The creator adds JOINS actors at once, spread over the instances; the responses and the actors after."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=base_urls[0] + "/v1", headers=admin, timeout=60) as setup:
        key = (await setup.post("/keys", json={"actor": "root"})).json()["key"]
        for i in range(JOINS):  # the actors joined must be known, and let root add them
            known = await setup.put(f"/actors/agent-{i}/contact_policy", json={"policy": "anyone"})
            assert known.status_code == 200, known.text
    clients = [
        httpx.AsyncClient(base_url=url + "/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        for url in base_urls
    ]
    try:
        tid = (await clients[0].post("/threads", json={})).json()["id"]
        joins = [
            clients[i % len(clients)].post(f"/threads/{tid}/actors", json={"id": f"agent-{i}"}) for i in range(JOINS)
        ]
        async with write_lock_held(backend):
            pending = asyncio.gather(*joins)
        responses = list(await pending)
        actors = [a["id"] for a in (await clients[-1].get(f"/threads/{tid}/actors")).json()["data"]]
    finally:
        for client in clients:
            await client.aclose()
    return responses, actors


def _assert_exactly_the_limit(responses: list[httpx.Response], actors: list[str]) -> None:
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * (MAX_ACTORS - 1) + [400] * (JOINS - MAX_ACTORS + 1), (len(actors), statuses)
    for response in responses:
        if response.status_code == 400:
            error = response.json()["error"]
            assert (error["code"], error["param"]) == ("too_many_actors", "id")
    assert len(actors) == MAX_ACTORS and actors[0] == "root"


async def test_concurrent_joins_on_one_instance_stop_at_max_actors(backend: Backend, tmp_path: Path) -> None:
    backend.require_isolated_transactions()
    server = start_server(backend.url, tmp_path / "a.log", {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_MAX_ACTORS": "4"})
    try:
        responses, actors = await _join_concurrently(backend, [server.base_url])
    finally:
        server.stop()
    _assert_exactly_the_limit(responses, actors)


async def test_concurrent_joins_through_two_instances_stop_at_max_actors(backend: Backend, tmp_path: Path) -> None:
    backend.require_isolated_transactions()
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_MAX_ACTORS": "4"}
    first = start_server(backend.url, tmp_path / "a.log", env)
    second = start_server(backend.url, tmp_path / "b.log", env)
    try:
        responses, actors = await _join_concurrently(backend, [first.base_url, second.base_url])
    finally:
        first.stop()
        second.stop()
    _assert_exactly_the_limit(responses, actors)
