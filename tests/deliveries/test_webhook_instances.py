"""Webhook deliveries made by real `aitp serve` processes sharing one store, on every backend.

Specification: each attempt is made by one instance (a lease in the store), so with two instances following
one endpoint every delivery that succeeds at once arrives once; an instance killed with SIGKILL while it
retries loses nothing: once its leases run out, a restarted instance makes every delivery.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

import httpx

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY
from tests.support.receiver import Received, Receiver, receiving

MESSAGE = "thread.message.created"
FAST = {"AITP_WEBHOOK_RETRY_BASE": "0.2", "AITP_WEBHOOK_TIMEOUT": "1", "AITP_WEBHOOK_LEASE_SECONDS": "6"}


def as_admin(server: ServerProcess) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )


async def setup(admin: httpx.AsyncClient, url: str, threads: int) -> tuple[dict[str, str], list[str]]:
    """alice's key headers, her threads, and her webhook to `url` (message events only)."""
    key = (await admin.post("/keys", json={"actor": "alice"})).json()["key"]
    alice = {"Authorization": f"Bearer {key}"}
    made = [await admin.post("/threads", json={"actors": [{"id": "alice"}]}, headers=alice) for _ in range(threads)]
    hook = await admin.post("/webhooks", json={"url": url, "event_types": [MESSAGE]}, headers=alice)
    assert hook.status_code == 200, hook.text
    return alice, [m.json()["id"] for m in made]


async def post_all(admin: httpx.AsyncClient, alice: dict[str, str], threads: list[str], each: int) -> list[str]:
    posted = []
    for i in range(each):
        for thread_id in threads:
            response = await admin.post(f"/threads/{thread_id}/messages", json={"content": f"#{i}"}, headers=alice)
            assert response.status_code == 200, response.text
            posted.append(response.json()["id"])
    return posted


def delivered_ids(receiver: Receiver) -> Counter[str]:
    return Counter(r.event["data"]["id"] for r in receiver.delivered)


async def test_two_instances_never_make_the_same_attempt_twice(serve_backend: Callable[..., ServerProcess]) -> None:
    async with receiving() as receiver:
        env = {**FAST, "AITP_WEBHOOK_ALLOW": receiver.url}
        first, second = serve_backend(**env), serve_backend(**env)
        async with as_admin(first) as on_a, as_admin(second) as on_b:
            alice, threads = await setup(on_a, receiver.url, threads=20)
            # writes through both: each instance hears of every event (its own at once, the other's by tailing)
            posted = await post_all(on_a, alice, threads[:10], 2) + await post_all(on_b, alice, threads[10:], 2)
            await receiver.wait_for(lambda r: len(r.delivered) >= len(posted), timeout=60)
            await asyncio.sleep(1.0)  # anything sent twice would have arrived by now

            assert delivered_ids(receiver) == Counter(posted)  # each once
            assert len(receiver.requests) == len(posted)
            [hook] = (await on_a.get("/webhooks", headers=alice)).json()["data"]
            found = (await on_b.get(f"/webhooks/{hook['id']}/deliveries", params={"limit": 100}, headers=alice)).json()
            assert [(d["status"], d["attempts"]) for d in found["data"]] == [("succeeded", 1)] * len(posted)


async def test_sigkill_while_retrying_then_a_restart_delivers_everything(
    serve_backend: Callable[..., ServerProcess],
) -> None:
    failing = True

    def answer(request: Received) -> int:
        return 500 if failing else 200

    async with receiving(Receiver(decide=answer)) as receiver:
        env = {**FAST, "AITP_WEBHOOK_ALLOW": receiver.url}
        doomed = serve_backend(**env)
        async with as_admin(doomed) as admin:
            alice, threads = await setup(admin, receiver.url, threads=3)
            posted = await post_all(admin, alice, threads, 4)
            # every thread's first delivery has failed at least twice: retries are under way
            await receiver.wait_for(lambda r: len(r.requests) >= 2 * len(threads), timeout=60)
        doomed.process.kill()  # SIGKILL: no shutdown, its leases stay in the store
        doomed.process.wait()
        failing = False

        restarted = serve_backend(**env)
        await receiver.wait_for(lambda r: set(delivered_ids(r)) == set(posted), timeout=60)
        by_thread: dict[str, list[int]] = {}
        for request in receiver.delivered:
            by_thread.setdefault(request.event["thread_id"], []).append(request.event["seq"])
        assert all(seqs == sorted(seqs) for seqs in by_thread.values())  # still in order per thread
        assert restarted.process.poll() is None
