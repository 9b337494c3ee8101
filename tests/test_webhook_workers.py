"""The per-actor webhook limit under `aitp serve --workers 2`, on every backend (issue 28, item 3).

Specification: an actor may have 16 webhooks however its creations arrive: 90 at once, spread by the kernel
over both worker processes, make exactly 16; the others are refused (400 `too_many_webhooks`, param `url`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

import httpx

from aitp.services.webhooks import MAX_ENDPOINTS_PER_ACTOR
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, Backend

CREATIONS = 90
TRIES = 200  # new connections made to reach the second worker, if the burst's did not
ALLOWED = "http://127.0.0.1:9/"  # nothing is delivered: no event follows the creations


async def test_concurrent_creations_across_two_workers_make_exactly_the_limit(
    backend: Backend, serve_store: Callable[..., ServerProcess]
) -> None:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_RATE_LIMIT": "0", "AITP_WEBHOOK_ALLOW": ALLOWED}
    server = serve_store(backend.url, 2, **env)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    limits = httpx.Limits(max_connections=CREATIONS, max_keepalive_connections=0)  # a new connection each
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", timeout=60, limits=limits) as client:
        key = (await client.post("/keys", json={"actor": "alice"}, headers=admin)).json()["key"]
        alice = {"Authorization": f"Bearer {key}"}

        async def create(n: int) -> httpx.Response:
            return await client.post("/webhooks", json={"url": f"{ALLOWED}hooks/{n}"}, headers=alice)

        async def pid() -> int:
            answer: int = (await client.get(server.base_url + "/health")).json()["pid"]
            return answer

        answers, pids = await asyncio.gather(
            asyncio.gather(*(create(n) for n in range(CREATIONS))), asyncio.gather(*(pid() for _ in range(40)))
        )
        seen = set(pids)  # the kernel gives each new connection to either worker: both are serving
        for _ in range(TRIES):
            if len(seen) == 2:
                break
            seen.add(await pid())
        assert len(seen) == 2

        statuses = Counter(a.status_code for a in answers)
        assert statuses == {200: MAX_ENDPOINTS_PER_ACTOR, 400: CREATIONS - MAX_ENDPOINTS_PER_ACTOR}, statuses
        refused = next(a.json()["error"] for a in answers if a.status_code == 400)
        assert (refused["code"], refused["param"]) == ("too_many_webhooks", "url")
        listed = (await client.get("/webhooks", headers=alice)).json()["data"]
        assert len(listed) == MAX_ENDPOINTS_PER_ACTOR
