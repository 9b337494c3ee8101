"""Webhooks, end to end on every backend: endpoints registered through the API, events written through the
API, deliveries received by real local HTTP receivers (`tests.support.receiver`) from the service's own
delivery engine (the app runs with its lifespan, as `aitp serve` runs it).

Specification: a delivery is the inbox event exactly as the inbox sends it, signed in the Standard Webhooks
format (the `standardwebhooks` library's own verifier accepts it); it is retried until a 2xx, under one id,
and not sent again once that is recorded; a thread's events reach an endpoint in order; 410 disables the
endpoint; destinations on private or loopback addresses are refused unless allowed.
"""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from aitp.app import create_app
from aitp.config import Settings
from aitp.deliveries.webhooks import WebhookDeliveries
from aitp.store import Store
from tests.conftest import ADMIN_KEY, API, Backend
from tests.support.receiver import Received, Receiver, receiving

MESSAGE = "thread.message.created"


@asynccontextmanager
async def service(store: Store, *allowed: str, **changes: Any) -> AsyncIterator[API]:
    """The app on `store`, started as `aitp serve` starts it (delivery engine included), fast retries."""
    values: dict[str, Any] = {"webhook_retry_base": 0.05, **changes}
    settings = Settings(store_url="unused://", admin_key=ADMIN_KEY, webhook_allow=allowed, **values)
    app = create_app(settings, store=store)
    async with app.router.lifespan_context(app):
        yield API(httpx.ASGITransport(app=app), app)


async def register(client: httpx.AsyncClient, url: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/webhooks", json={"url": url, **fields})
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def new_thread(client: httpx.AsyncClient, *actors: str) -> str:
    response = await client.post("/threads", json={"actors": [{"id": a} for a in actors]})
    assert response.status_code == 200, response.text
    thread_id: str = response.json()["id"]
    return thread_id


async def post(client: httpx.AsyncClient, thread_id: str, text: str) -> dict[str, Any]:
    response = await client.post(f"/threads/{thread_id}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()
    return message


async def deliveries(client: httpx.AsyncClient, hook_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/webhooks/{hook_id}/deliveries", params={"limit": 100})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["data"]
    return found


async def recorded(client: httpx.AsyncClient, hook_id: str, status: str, count: int = 1) -> list[dict[str, Any]]:
    """The endpoint's deliveries once `count` of them have `status` (the engine records an outcome after the
    receiver answered)."""
    for _ in range(400):
        found = await deliveries(client, hook_id)
        if sum(d["status"] == status for d in found) >= count:
            return found
        await asyncio.sleep(0.025)
    raise AssertionError(f"not {count} {status} deliveries: {found}")


async def disabled_after_one_post(
    api: API, receiver: Receiver, text: str
) -> tuple[httpx.AsyncClient, dict[str, Any], str]:
    """alice's endpoint at `receiver` once the service has disabled it after her post of `text` in a new thread
    (alice's client, the endpoint, the thread)."""
    alice = await api.actor("alice")
    thread_id = await new_thread(alice, "alice")
    hook = await register(alice, receiver.url, event_types=[MESSAGE])
    await post(alice, thread_id, text)
    await receiver.wait_for(lambda r: len(r.requests) == 1)
    for _ in range(200):
        disabled: dict[str, Any] = (await alice.get(f"/webhooks/{hook['id']}")).json()
        if not disabled["enabled"]:
            return alice, disabled, thread_id
        await asyncio.sleep(0.025)
    raise AssertionError(f"not disabled: {disabled}")


async def notices(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """The `webhook.disabled` events of the actor's inbox, once there is one (the service notes the endpoint
    disabled, then tells its actor)."""
    for _ in range(200):
        inbox = (await client.get("/actors/me/events", params={"after": 0})).json()["data"]
        found = [e["data"] for e in inbox if e["type"] == "webhook.disabled"]
        if found:
            return found
        await asyncio.sleep(0.025)
    raise AssertionError("no webhook.disabled event in the inbox")


async def test_a_delivery_is_the_inbox_event_signed_so_the_librarys_own_verifier_accepts_it(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        hook = await register(alice, receiver.url)
        assert hook["secret"].startswith("whsec_") and hook["event_types"] == [] and hook["enabled"]
        thread_id = await new_thread(alice, "alice")
        await post(alice, thread_id, "hello")
        inbox = (await alice.get("/actors/me/events", params={"after": 0})).json()["data"]
        await receiver.wait_for(lambda r: len(r.delivered) >= len(inbox))

        verifier = Webhook(hook["secret"])
        assert [verifier.verify(r.body, r.headers) for r in receiver.requests] == inbox
        assert [r.event["cursor"] for r in receiver.requests] == [e["cursor"] for e in inbox]
        assert inbox[-1]["type"] == MESSAGE and inbox[-1]["data"]["content"][0]["text"]["value"] == "hello"
        assert all(r.headers["webhook-signature"].startswith("v1,") for r in receiver.requests)
        tampered = receiver.requests[-1].body.replace(b"hello", b"hullo")
        try:
            verifier.verify(tampered, receiver.requests[-1].headers)
            raise AssertionError("a changed body verified")
        except Exception as error:
            assert type(error).__name__ == "WebhookVerificationError"


async def test_a_receiver_failing_three_times_gets_the_event_once_more_and_never_after_success(store: Store) -> None:
    async with receiving(Receiver(answers=[500, 503, 502])) as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        first = await post(alice, thread_id, "first")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)

        attempts = receiver.requests
        assert [r.status for r in attempts] == [500, 503, 502, 200]
        assert len({r.id for r in attempts}) == 1 and len({r.body for r in attempts}) == 1
        assert attempts[0].event["data"]["id"] == first["id"]
        [done] = await recorded(alice, hook["id"], "succeeded")
        assert (done["id"], done["status"], done["attempts"], done["last_status"]) == (
            attempts[0].id,
            "succeeded",
            4,
            200,
        )
        assert done["next_attempt_at"] is None

        second = await post(alice, thread_id, "second")
        await receiver.wait_for(lambda r: len(r.delivered) == 2)
        assert [r.event["data"]["id"] for r in receiver.requests] == [first["id"]] * 4 + [second["id"]]


async def test_each_thread_reaches_the_endpoint_in_order_under_20_concurrent_writers(
    store: Store, backend: Backend
) -> None:
    backend.require_isolated_transactions()  # 20 concurrent writers of two threads
    failing = Counter[str]()

    def answer(request: Received) -> int:
        # the first attempt of every third delivery fails: retries interleave with later events
        failing[request.id] += 1
        return 500 if request.event["cursor"] % 3 == 0 and failing[request.id] == 1 else 200

    writers, per_writer = 20, 5
    # 100 agents' messages with no person's: no turn budget here (tests/api/test_turns.py tries it)
    async with (
        receiving(Receiver(decide=answer)) as receiver,
        service(store, receiver.url, turn_budget=0) as api,
    ):
        alice = await api.actor("alice")
        names = [f"w{n}" for n in range(writers)]
        await api.known(*names)
        threads = [await new_thread(alice, "alice", *names) for _ in range(2)]
        await register(alice, receiver.url, event_types=[MESSAGE])
        clients = [await api.actor(name) for name in names]

        async def write(n: int) -> None:
            for i in range(per_writer):
                await post(clients[n], threads[(n + i) % 2], f"w{n} #{i}")

        await asyncio.gather(*(write(n) for n in range(writers)))
        await receiver.wait_for(lambda r: len(r.delivered) == writers * per_writer)

        assert Counter(r.id for r in receiver.delivered).most_common(1)[0][1] == 1  # each event once
        for thread_id in threads:
            log = (await alice.get(f"/threads/{thread_id}/events", params={"after": 0, "limit": 1000})).json()
            written = [e["seq"] for e in log["data"] if e["type"] == MESSAGE]
            arrived = [r.event["seq"] for r in receiver.delivered if r.event["thread_id"] == thread_id]
            assert arrived == written
            # and no attempt of a later event went out before an earlier one of its thread succeeded
            attempted = [r.event["seq"] for r in receiver.requests if r.event["thread_id"] == thread_id]
            assert attempted == sorted(attempted)


async def test_410_fails_the_delivery_and_disables_the_endpoint(store: Store) -> None:
    async with receiving(Receiver(answers=[410])) as receiver, service(store, receiver.url) as api:
        alice, hook, thread_id = await disabled_after_one_post(api, receiver, "gone?")
        assert hook["disabled_reason"] == "the endpoint answered 410 Gone"
        [failed] = await recorded(alice, hook["id"], "failed")
        assert (failed["status"], failed["attempts"], failed["last_status"]) == ("failed", 1, 410)

        await post(alice, thread_id, "not sent while disabled")
        enabled = await alice.patch(f"/webhooks/{hook['id']}", json={"enabled": True})
        assert (enabled.json()["enabled"], enabled.json()["disabled_reason"]) == (True, None)
        # re-enabled, it resumes where it stopped: the event written meanwhile is not lost
        await receiver.wait_for(lambda r: len(r.delivered) == 1)
        assert receiver.delivered[0].event["data"]["content"][0]["text"]["value"] == "not sent while disabled"


async def test_private_and_loopback_destinations_are_refused_unless_allowed(store: Store) -> None:
    async with service(store, "http://127.0.0.1:9/allowed/", webhook_deny=("https://hooks.example.com/no/",)) as api:
        alice = await api.actor("alice")
        for url in (
            "http://127.0.0.1:9/other",
            "http://localhost:9/allowed/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.7/",
            "http://0.0.0.0:9/",
            "https://hooks.example.com/no/x",
        ):
            refused = await alice.post("/webhooks", json={"url": url})
            assert (refused.status_code, refused.json()["error"]["code"]) == (403, "url_not_allowed"), url
        for url in ("ftp://example.com/", "http://user:pw@example.com/", "/relative"):
            invalid = await alice.post("/webhooks", json={"url": url})
            assert (invalid.status_code, invalid.json()["error"]["code"]) == (422, "invalid_url"), url
        assert (await alice.post("/webhooks", json={"url": "http://127.0.0.1:9/allowed/x"})).status_code == 200
        assert (await alice.post("/webhooks", json={"url": "http://93.184.215.14/hooks"})).status_code == 200


async def test_a_destination_is_checked_again_before_every_attempt(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        api.settings_override(webhook_allow=())  # the operator withdraws it
        await post(alice, thread_id, "to a now private place")
        for _ in range(200):
            found = await deliveries(alice, hook["id"])
            if found and found[0]["attempts"] >= 1 and found[0]["last_error"]:
                break
            await asyncio.sleep(0.05)
        assert found[0]["status"] == "pending" and found[0]["last_status"] is None
        assert "destination refused" in found[0]["last_error"]
        assert receiver.requests == []


async def test_a_rotated_out_secret_still_signs_during_its_grace_period_and_redelivery_keeps_the_id(
    store: Store,
) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        rotated = (await alice.post(f"/webhooks/{hook['id']}/rotate_secret")).json()
        assert rotated["secret"] != hook["secret"] and rotated["id"] == hook["id"]
        await post(alice, thread_id, "signed twice")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)
        [request] = receiver.requests
        assert len(request.headers["webhook-signature"].split(" ")) == 2
        for secret in (hook["secret"], rotated["secret"]):
            assert Webhook(secret).verify(request.body, request.headers)["data"]["id"] == request.event["data"]["id"]

        [done] = await recorded(alice, hook["id"], "succeeded")
        again = await alice.post(f"/webhooks/{hook['id']}/deliveries/{done['id']}/redeliver")
        assert (again.status_code, again.json()["status"]) == (200, "pending")
        await receiver.wait_for(lambda r: len(r.delivered) == 2)
        assert receiver.requests[1].id == request.id and receiver.requests[1].body == request.body


async def test_retry_after_is_honoured(store: Store) -> None:
    receiver = Receiver(answers=[429], extra_headers=[(b"retry-after", b"2")])
    async with receiving(receiver), service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        await post(alice, thread_id, "later, please")
        await receiver.wait_for(lambda r: len(r.requests) == 1)
        for _ in range(100):
            [waiting] = await deliveries(alice, hook["id"])
            if waiting["last_status"] == 429:
                break
            await asyncio.sleep(0.05)
        assert waiting["status"] == "pending" and waiting["next_attempt_at"] - waiting["last_attempt_at"] >= 1


async def test_an_actor_manages_its_own_webhooks_and_an_admin_anyones(store: Store) -> None:
    async with service(store, "http://127.0.0.1:9/") as api:
        alice, bob = await api.actor("alice"), await api.actor("bob")
        hook = await register(alice, "http://127.0.0.1:9/a")
        assert (await bob.get(f"/webhooks/{hook['id']}")).status_code == 404
        assert (await bob.delete(f"/webhooks/{hook['id']}")).status_code == 404
        assert (await bob.get(f"/webhooks/{hook['id']}/deliveries")).status_code == 404
        assert (await bob.patch(f"/webhooks/{hook['id']}", json={"enabled": False})).status_code == 404
        assert (await bob.post(f"/webhooks/{hook['id']}/rotate_secret")).status_code == 404
        assert (await bob.post(f"/webhooks/{hook['id']}/deliveries/whd_x_1/redeliver")).status_code == 404
        assert (await bob.post("/webhooks", json={"url": "http://127.0.0.1:9/b", "actor": "alice"})).status_code == 403
        assert (await bob.get("/webhooks")).json()["data"] == []
        assert "secret" not in (await alice.get("/webhooks")).json()["data"][0]

        assert (await api.admin.post("/webhooks", json={"url": "http://127.0.0.1:9/c"})).status_code == 400
        for_bob = await register(api.admin, "http://127.0.0.1:9/c", actor="bob")
        assert for_bob["actor"] == "bob"
        assert [h["id"] for h in (await bob.get("/webhooks")).json()["data"]] == [for_bob["id"]]
        assert {h["id"] for h in (await api.admin.get("/webhooks")).json()["data"]} == {hook["id"], for_bob["id"]}
        deleted = await alice.delete(f"/webhooks/{hook['id']}")
        assert deleted.json() == {"id": hook["id"], "object": "webhook.deleted", "deleted": True}
        assert (await alice.get(f"/webhooks/{hook['id']}")).status_code == 404


async def test_a_slow_endpoint_delays_no_other(store: Store) -> None:
    held = asyncio.Event()  # the slow receiver answers nothing until the fast one has everything

    class Slow(Receiver):
        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            await held.wait()
            await super().__call__(scope, receive, send)

    async with receiving(Slow()) as slow, receiving() as fast, service(store, slow.url, fast.url) as api:
        alice = await api.actor("alice")
        threads = [await new_thread(alice, "alice") for _ in range(3)]
        await register(alice, slow.url, event_types=[MESSAGE])
        await register(alice, fast.url, event_types=[MESSAGE])
        for n in range(12):
            await post(alice, threads[n % 3], f"#{n}")
        await fast.wait_for(lambda r: len(r.delivered) == 12)
        assert slow.requests == []
        held.set()
        await slow.wait_for(lambda r: len(r.delivered) == 12)


async def test_an_endpoint_failing_for_the_configured_days_is_disabled_and_health_counts_it(store: Store) -> None:
    async with (
        receiving(Receiver(answers=[500])) as receiver,
        service(store, receiver.url, webhook_disable_days=0.0) as api,
    ):
        alice, hook, _ = await disabled_after_one_post(api, receiver, "into the void")
        assert hook["disabled_reason"] == "every attempt failed for 0 days" and hook["failing_since"] is not None
        [waiting] = await deliveries(alice, hook["id"])
        assert (waiting["status"], waiting["last_status"]) == ("pending", 500)  # kept for when it is enabled

        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}  # the counters are the operator's
        async with httpx.AsyncClient(transport=api._transport, base_url="http://aitp.test", headers=admin) as root:
            counters = (await root.get("/health")).json()["webhooks"]
        assert (counters["attempts"], counters["retrying"], counters["endpoints_disabled"]) == (1, 1, 1)


async def test_an_attempt_connects_to_the_address_it_checked_not_to_a_second_resolution(
    store: Store, monkeypatch: Any
) -> None:
    """DNS rebinding: a name that resolves to an allowed address when checked and to another when httpx would
    connect. The attempt resolves once and connects to the address it checked, naming the host in Host."""
    loop_type = type(asyncio.get_running_loop())
    real_getaddrinfo = loop_type.getaddrinfo
    answers = iter(["127.0.0.1"])

    async def rebinding(self: Any, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return await real_getaddrinfo(self, host, port, *args, **kwargs)
        address = next(answers, "203.0.113.9")  # TEST-NET-3: a second resolution would go nowhere
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(loop_type, "getaddrinfo", rebinding)
    async with receiving() as receiver:
        named = receiver.url.replace("127.0.0.1", "rebind.test")
        async with service(store, named, webhook_timeout=2.0) as api:
            alice = await api.actor("alice")
            thread_id = await new_thread(alice, "alice")
            hook = await register(alice, named, event_types=[MESSAGE])
            answers = iter(["127.0.0.1"])  # the registration resolved it once already
            await post(alice, thread_id, "pinned")
            [delivered] = await recorded(alice, hook["id"], "succeeded")
            assert delivered["attempts"] == 1
            assert receiver.requests[0].headers["host"] == named.removeprefix("http://").split("/")[0]


async def test_an_actor_is_told_when_its_endpoint_is_disabled(store: Store) -> None:
    """Through its inbox: a `webhook.disabled` event of its notices thread, which its streams and its other
    webhooks carry too."""
    async with (
        receiving(Receiver(answers=[500])) as receiver,
        service(store, receiver.url, webhook_disable_days=0.0) as api,
    ):
        alice, hook, _ = await disabled_after_one_post(api, receiver, "into the void")
        [notice] = await notices(alice)
        assert notice == {
            "webhook_id": hook["id"],
            "url": receiver.url,
            "reason": "every attempt failed for 0 days",
            "failing_since": hook["failing_since"],
        }
        titles = [t["metadata"].get("title") for t in (await alice.get("/threads")).json()["data"]]
        assert sorted(titles, key=str) == [None, "Notices from the service"]


async def test_a_deleted_endpoints_worker_ends_even_if_its_cancellation_is_lost(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation can be lost (Python 3.11's wait_for inside pymongo): the worker of an endpoint its actor
    deleted is cancelled again until it ends, instead of going on delivering."""
    monkeypatch.setattr("aitp.tasks.RECANCEL_AFTER", 0.05)
    work_on = WebhookDeliveries._work_on
    lost: list[str] = []
    ended = asyncio.Event()

    async def losing_one_cancellation(self: WebhookDeliveries, endpoint_id: str, worker: Any) -> None:
        try:
            await work_on(self, endpoint_id, worker)
        except asyncio.CancelledError:
            if lost:
                raise
            lost.append(endpoint_id)  # eaten, as inside the driver's await; the worker goes on
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                ended.set()
                raise

    monkeypatch.setattr(WebhookDeliveries, "_work_on", losing_one_cancellation)
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        await post(alice, await new_thread(alice, "alice"), "one")
        await receiver.wait_for(lambda r: len(r.requests) == 1)
        assert (await alice.delete(f"/webhooks/{hook['id']}")).status_code == 200
        await asyncio.wait_for(ended.wait(), 10)
    assert lost == [hook["id"]]
