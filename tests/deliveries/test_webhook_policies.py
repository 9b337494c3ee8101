"""What a receiver's refusals, a caller's cancel, a receiver's return and a restart do to webhook deliveries,
through the HTTP API and a local receiver, on every backend (issue 28, items 5, 6, 8 and 9).

Specification:
- `on_client_error` "skip" (the default): a 4xx other than 408, 410, 429 fails the delivery after 3 attempts
  and its thread's next delivery goes; 408 and 429 are retried as ever. "block": a 4xx is retried like any
  failure, holding its thread back, until a caller cancels the delivery
  (`POST /v1/webhooks/{id}/deliveries/{d}/cancel`, 409 if it is not pending).
- The delivery log filters by `status` and shows finished deliveries within `webhook_retention_days`.
- A success from an endpoint that was failing makes its deliveries waiting for a retry due at once.
- A stopping service lets attempts under way finish (briefly) and records them, so none is sent twice; it
  releases the leases of those it cuts short: the next instance makes them at once.
- A rotated secret keeps the current and the previous secret only: two signatures at most.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
from standardwebhooks import Webhook

from aitp.store import Store
from tests.deliveries.test_webhooks import MESSAGE, deliveries, new_thread, post, recorded, register, service
from tests.support.receiver import Received, Receiver, receiving


def text_of(request: Received) -> str:
    content: str = request.event["data"]["content"][0]["text"]["value"]
    return content


async def listed(client: httpx.AsyncClient, hook_id: str, **params: str) -> httpx.Response:
    return await client.get(f"/webhooks/{hook_id}/deliveries", params={"limit": "100", **params})


async def test_a_refused_event_fails_after_three_attempts_and_its_thread_goes_on(store: Store) -> None:
    def answer(request: Received) -> int:
        return 400 if text_of(request) == "refused" else 200

    async with receiving(Receiver(decide=answer)) as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        assert hook["on_client_error"] == "skip"
        await post(alice, thread_id, "refused")
        await post(alice, thread_id, "next")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)

        assert [text_of(r) for r in receiver.requests] == ["refused"] * 3 + ["next"]  # in order, then on
        found = await recorded(alice, hook["id"], "succeeded")
        assert [(d["status"], d["attempts"], d["last_status"]) for d in found] == [
            ("succeeded", 1, 200),
            ("failed", 3, 400),
        ]
        failed = (await listed(alice, hook["id"], status="failed")).json()["data"]
        assert [d["id"] for d in failed] == [found[1]["id"]]
        assert (await listed(alice, hook["id"], status="pending")).json()["data"] == []


async def test_408_and_429_are_retried_whatever_the_policy(store: Store) -> None:
    async with (
        receiving(Receiver(answers=[429, 408, 429, 408])) as receiver,
        service(store, receiver.url) as api,
    ):
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        await post(alice, thread_id, "busy")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)
        [done] = await recorded(alice, hook["id"], "succeeded")
        assert (done["attempts"], [r.status for r in receiver.requests]) == (5, [429, 408, 429, 408, 200])


async def test_a_blocking_endpoint_holds_its_thread_until_the_refused_delivery_is_canceled(store: Store) -> None:
    def answer(request: Received) -> int:
        return 422 if text_of(request) == "refused" else 200

    async with receiving(Receiver(decide=answer)) as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id, other = await new_thread(alice, "alice"), await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE], on_client_error="block")
        assert hook["on_client_error"] == "block"
        await post(alice, thread_id, "refused")
        await post(alice, thread_id, "held back")
        await receiver.wait_for(lambda r: len(r.requests) >= 5)  # past the 3 attempts a "skip" would make
        await post(alice, other, "elsewhere")
        await receiver.wait_for(lambda r: [text_of(d) for d in r.delivered] == ["elsewhere"])
        assert {text_of(r) for r in receiver.requests} == {"refused", "elsewhere"}  # "held back" never went

        [refused] = [d for d in await deliveries(alice, hook["id"]) if d["last_status"] == 422]
        assert refused["status"] == "pending"
        bob = await api.actor("bob")  # another actor's endpoint is one that does not exist
        foreign = await bob.post(f"/webhooks/{hook['id']}/deliveries/{refused['id']}/cancel")
        assert (foreign.status_code, foreign.json()["error"]["param"]) == (404, "webhook_id")
        canceled = await alice.post(f"/webhooks/{hook['id']}/deliveries/{refused['id']}/cancel")
        assert canceled.status_code == 200, canceled.text
        assert (canceled.json()["status"], canceled.json()["next_attempt_at"]) == ("canceled", None)
        await receiver.wait_for(lambda r: "held back" in {text_of(d) for d in r.delivered})

        again = await alice.post(f"/webhooks/{hook['id']}/deliveries/{refused['id']}/cancel")
        assert again.status_code == 409, again.text
        assert (again.json()["error"]["param"], again.json()["error"]["code"]) == (
            "delivery_id",
            "delivery_not_pending",
        )
        missing = await alice.post(f"/webhooks/{hook['id']}/deliveries/whd_nothing/cancel")
        assert (missing.status_code, missing.json()["error"]["param"]) == (404, "delivery_id")
        assert [d["id"] for d in (await listed(alice, hook["id"], status="canceled")).json()["data"]] == [refused["id"]]
        # the policy can be changed back
        patched = await alice.patch(f"/webhooks/{hook['id']}", json={"on_client_error": "skip"})
        assert patched.json()["on_client_error"] == "skip"


async def test_a_bad_status_filter_or_policy_names_its_field(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        hook = await register(alice, receiver.url)
        bad = await listed(alice, hook["id"], status="lost")
        assert bad.status_code in (400, 422) and bad.json()["error"]["param"] == "status", bad.text
        refused = await alice.post("/webhooks", json={"url": receiver.url, "on_client_error": "ignore"})
        assert refused.status_code in (400, 422) and refused.json()["error"]["param"] == "on_client_error"


async def test_the_log_shows_finished_deliveries_within_the_retention_only(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url, webhook_retention_days=0.0) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        await post(alice, thread_id, "gone soon")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)
        [done] = [r.id for r in receiver.delivered]
        # recorded as succeeded, and then past a retention of 0 days: out of the log, and pruned
        for _ in range(400):
            delivery = await store.webhooks.get_delivery(done)
            if delivery is not None and delivery.status == "succeeded":
                break
            await asyncio.sleep(0.025)
        assert (await listed(alice, hook["id"])).json()["data"] == []
    # a service prunes when it starts (then every PRUNE_EVERY)
    async with service(store, webhook_retention_days=0.0):
        for _ in range(400):
            if await store.webhooks.get_delivery(done) is None:
                break
            await asyncio.sleep(0.025)
        assert await store.webhooks.get_delivery(done) is None


async def test_a_success_brings_the_endpoints_waiting_retries_forward(store: Store) -> None:
    failing = True

    def answer(request: Received) -> int:
        return 503 if failing else 200

    # retries an hour away at least: only a success bringing them forward delivers within the test
    async with (
        receiving(Receiver(decide=answer)) as receiver,
        service(store, receiver.url, webhook_retry_base=7200.0) as api,
    ):
        alice = await api.actor("alice")
        first, second = await new_thread(alice, "alice"), await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        await post(alice, first, "during the outage")
        await receiver.wait_for(lambda r: len(r.requests) == 1)
        for _ in range(400):  # the failure recorded: the endpoint is failing, the delivery waits for its retry
            if (await alice.get(f"/webhooks/{hook['id']}")).json()["failing_since"] is not None:
                break
            await asyncio.sleep(0.025)
        [waiting] = await deliveries(alice, hook["id"])
        assert (waiting["status"], waiting["last_status"]) == ("pending", 503)
        failing = False
        await post(alice, second, "after it")
        await receiver.wait_for(lambda r: len(r.delivered) == 2)
        assert [text_of(r) for r in receiver.delivered] == ["after it", "during the outage"]
        webhook = (await alice.get(f"/webhooks/{hook['id']}")).json()
        assert webhook["failing_since"] is None


@dataclass
class Hanging(Receiver):
    """A receiver that answers no request while `holding` is set (its requests counted, status 0)."""

    holding: bool = True
    let_go: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.holding:
            self.requests.append(Received({}, b"", 0))
            self.arrived.set()
            await self.let_go.wait()
            return
        await super().__call__(scope, receive, send)


async def test_a_stopping_service_releases_the_attempts_it_cuts_short(store: Store) -> None:
    # an attempt may take 600 s, so a lease lasts 605 s: only a released one is taken over within the test
    async with receiving(Hanging()) as receiver:
        assert isinstance(receiver, Hanging)
        async with service(store, receiver.url, webhook_timeout=600.0) as api:
            alice = await api.actor("alice")
            thread_id = await new_thread(alice, "alice")
            hook = await register(alice, receiver.url, event_types=[MESSAGE])
            await post(alice, thread_id, "cut short")
            await receiver.wait_for(lambda r: len(r.requests) == 1)
            [held] = await deliveries(alice, hook["id"])
            assert (await store.webhooks.get_delivery(held["id"])).lease_owner is not None  # type: ignore[union-attr]
        released = await store.webhooks.get_delivery(held["id"])
        assert released is not None and (released.status, released.lease_owner) == ("pending", None)
        receiver.let_go.set()

        receiver.holding = False
        async with service(store, receiver.url, webhook_timeout=600.0):
            await receiver.wait_for(lambda r: len(r.delivered) == 1)
            assert text_of(receiver.delivered[0]) == "cut short"


@dataclass
class Slow(Receiver):
    """A receiver that answers each request once `let_go` is set (`reached` when one waits)."""

    reached: asyncio.Event = field(default_factory=asyncio.Event)
    let_go: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.reached.set()
            await self.let_go.wait()
        await super().__call__(scope, receive, send)


async def test_a_stopping_service_lets_an_attempt_under_way_finish_and_sends_it_once(store: Store) -> None:
    """A deploy's SIGTERM while the receiver is answering: the answer is awaited (briefly) and recorded, so the
    next instance does not send the event again."""
    async with receiving(Slow()) as receiver:
        assert isinstance(receiver, Slow)
        async with service(store, receiver.url) as api:
            alice = await api.actor("alice")
            thread_id = await new_thread(alice, "alice")
            hook = await register(alice, receiver.url, event_types=[MESSAGE])
            await post(alice, thread_id, "under way")
            await asyncio.wait_for(receiver.reached.wait(), 10)
            [held] = await deliveries(alice, hook["id"])
            asyncio.get_running_loop().call_later(0.3, receiver.let_go.set)  # after the stop began
        finished = await store.webhooks.get_delivery(held["id"])
        assert finished is not None and (finished.status, finished.attempts) == ("succeeded", 1)

        async with service(store, receiver.url):
            await asyncio.sleep(0.5)
        assert [text_of(r) for r in receiver.requests] == ["under way"]


@dataclass
class Overlapping(Receiver):
    """A receiver taking `delay` s to answer, counting how many requests it holds at once at most."""

    delay: float = 0.05
    holding: int = 0
    most: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.holding += 1
            self.most = max(self.most, self.holding)
            await asyncio.sleep(self.delay)
            self.holding -= 1
        await super().__call__(scope, receive, send)


async def test_an_endpoint_without_ordering_sends_a_threads_events_concurrently(store: Store) -> None:
    """`ordering` "thread" (the default) sends one event of a thread at a time; "none" several, so a receiver
    slow to answer does not hold a busy thread back; it can be changed later."""
    async with receiving(Overlapping()) as receiver, service(store, receiver.url) as api:
        assert isinstance(receiver, Overlapping)
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        assert hook["ordering"] == "thread"
        for n in range(6):
            await post(alice, thread_id, f"in order {n}")
        await receiver.wait_for(lambda r: len(r.delivered) == 6)
        assert receiver.most == 1
        assert [text_of(r) for r in receiver.delivered] == [f"in order {n}" for n in range(6)]

        changed = await alice.patch(f"/webhooks/{hook['id']}", json={"ordering": "none"})
        assert changed.status_code == 200 and changed.json()["ordering"] == "none", changed.text
        receiver.delay = 0.3
        for n in range(6):
            await post(alice, thread_id, f"any order {n}")
        await receiver.wait_for(lambda r: len(r.delivered) == 12)
        assert receiver.most > 1
        assert sorted(text_of(r) for r in receiver.delivered[6:]) == [f"any order {n}" for n in range(6)]
        refused = await alice.patch(f"/webhooks/{hook['id']}", json={"ordering": "random"})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "ordering", refused.text


async def test_a_delivery_carries_two_signatures_at_most_however_often_the_secret_rotates(store: Store) -> None:
    async with receiving() as receiver, service(store, receiver.url) as api:
        alice = await api.actor("alice")
        thread_id = await new_thread(alice, "alice")
        hook = await register(alice, receiver.url, event_types=[MESSAGE])
        secrets = [hook["secret"]]
        for _ in range(5):
            secrets.append((await alice.post(f"/webhooks/{hook['id']}/rotate_secret")).json()["secret"])
        await post(alice, thread_id, "signed")
        await receiver.wait_for(lambda r: len(r.delivered) == 1)
        [request] = receiver.delivered
        assert len(request.headers["webhook-signature"].split()) == 2
        for secret in secrets[-2:]:  # the current and the previous one verify it; older ones are gone
            Webhook(secret).verify(request.body, request.headers)
