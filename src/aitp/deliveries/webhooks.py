"""The webhook delivery engine of one service instance.

- Deriving: each enabled endpoint's actor inbox is read from the endpoint's cursor (`services.inbox`) when
  the hub says something was written (by this process or, through its tailer, any other), and the events
  it takes (`services.webhooks.takes`: its event types; of new messages, all or those addressed to its
  actor) become deliveries (`WebhookStore.advance`); the cursor moves past the others all the same.
  Deliveries are made from the log: none is queued at write time, and two instances deriving the same
  events insert them once.
- Delivering: one worker per endpoint leases due deliveries, each the oldest pending one of its thread (so a
  thread's events reach the endpoint in order), at most `IN_FLIGHT` at a time, and records each outcome.
  Deriving leases the due ones in the same write where the store can (SQLite: one transaction), so a new
  event is attempted without waiting for the worker to wake and claim (two more loop turns and a commit,
  each long under ingest load).
  Workers never wait for each other: one slow endpoint delays no other. A lease outlives an attempt (the
  timeout), so no two instances make one attempt; an instance that dies leaves leases that run out, and
  whichever instance claims next makes the attempt again (at least once).
- Outcomes: 2xx ends a delivery; 410 fails it and disables the endpoint; another 4xx (but 408, 429) fails it
  after `CLIENT_ERROR_ATTEMPTS` on an endpoint that skips (`services.webhooks`), so its thread goes on;
  anything else (other statuses, timeouts, refused connections) is retried with backoff and jitter,
  honouring Retry-After, until `webhook_retry_hours` after the event; an endpoint failing for
  `webhook_disable_days` is disabled. A 2xx from an endpoint that was failing makes its deliveries waiting
  for a retry due at once (`hasten`): the receiver is back, its other threads need not wait out a backoff.
- Stopping (a deploy's SIGTERM): no more claims; attempts under way may finish and be recorded within `DRAIN`
  (so a receiver that answered gets no duplicate), then the rest are cancelled and their leases released, so
  another instance (or this one, restarted) makes them again at once rather than when the lease runs out.
- Pruning: finished deliveries older than `webhook_retention_days` are deleted every `PRUNE_EVERY`, so the
  store holds what the delivery log shows, not every delivery ever made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from aitp.deliveries.attempt import Answer, backoff, http_client, send
from aitp.events.hub import first_of
from aitp.events.stream import Render
from aitp.ids import new_id
from aitp.runtime import Runtime
from aitp.services import inbox, notices, webhooks
from aitp.store.base import EventRecord
from aitp.store.webhooks import Claim, DeliveryRecord, EndpointRecord, delivery_id
from aitp.tasks import cancel

log = logging.getLogger(__name__)

IN_FLIGHT = 8  # attempts under way per endpoint and instance
BATCH = 500  # inbox events read per endpoint and store read
POLL = 1.0  # seconds between looks at the store for what other instances changed (endpoints, redeliveries)
PRUNE_EVERY = 600.0  # seconds between two prunings of finished deliveries past the retention period
DRAIN = 2.0  # seconds a stopping engine lets its attempts under way finish and be recorded
PRUNE_BATCH = 1000  # deliveries deleted per store write (a write lock held briefly, however many there are)


@dataclass
class _Worker:
    task: asyncio.Task[None]
    # the endpoint as last read (each derivation, at least every POLL): its attempts use it without a read each
    endpoint: EndpointRecord
    client: aiohttp.ClientSession  # its attempts' connections, closed with it
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: set[asyncio.Task[bool]] = field(default_factory=set)  # its attempts under way
    claiming: int = 0  # slots held by claims under way
    # deliveries may be waiting for a slot or for an attempt under way (their thread's head, or a retry): each
    # attempt's end makes the worker look; else only what derives deliveries (or POLL) does
    backlog: bool = False
    marked: int = 0  # times the backlog was marked: the worker clears it only if none came during its look
    retrying: bool = False  # an attempt of this instance failed since the last success: deliveries may wait

    def mark(self) -> None:
        self.backlog = True
        self.marked += 1

    @property
    def ordered(self) -> bool:
        """Whether its endpoint takes a thread's deliveries one at a time, in order."""
        return self.endpoint.ordering == "thread"

    @property
    def tasks(self) -> list[asyncio.Task[Any]]:
        return [self.task, *self.in_flight]

    def ended(self, attempt: asyncio.Task[bool]) -> None:
        """An attempt ended: the worker looks if deliveries wait and the attempt did not claim what was due in
        its own write (its result says; a retry to wait for, a lost lease, a cancelled or failed write)."""
        self.in_flight.discard(attempt)
        if self.backlog and (attempt.cancelled() or attempt.exception() is not None or attempt.result()):
            self.wake.set()

    @contextlib.contextmanager
    def slots(self, wanted: int = IN_FLIGHT, *, own: int = 0) -> Iterator[int]:
        """How many attempts (at most `wanted`) a claim may start, held while it runs (the pump's, the worker's
        and the attempts' may overlap); `own`: slots the claimer holds and frees by claiming (a finishing
        attempt's)."""
        free = max(min(IN_FLIGHT - len(self.in_flight) + own - self.claiming, wanted), 0)
        self.claiming += free
        try:
            yield free
        finally:
            self.claiming -= free


class WebhookDeliveries:
    """Started and stopped with the app; `render` is the face's rendering of an inbox event (the body sent)."""

    def __init__(self, rt: Runtime, render: Render) -> None:
        self.rt = rt
        self.render = render
        self.owner = new_id("inst")  # this instance, as the holder of its leases
        self.counters: Counter[str] = Counter()
        self._workers: dict[str, _Worker] = {}
        self._retiring: set[asyncio.Task[None]] = set()  # ending the workers of disabled or deleted endpoints
        self._pump: asyncio.Task[None] | None = None
        self._pruner: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def lease(self) -> float:
        """How long an attempt is held: longer than it can take, so a holder always finishes within it."""
        settings = self.rt.settings
        return max(settings.webhook_lease_seconds, settings.webhook_timeout + 5.0)

    def health(self) -> dict[str, int]:
        """Counters since start: attempts, succeeded, retrying (failed attempts to be made again), failed (given
        up), endpoints_disabled, lost_leases; and the endpoints followed now."""
        return {**self.counters, "endpoints": len(self._workers)}

    async def start(self) -> None:
        if self._pump is None:
            self._pump = asyncio.create_task(self._follow(), name="aitp-webhook-deliveries")
            self._pruner = asyncio.create_task(self._prune_every(), name="aitp-webhook-prune")

    async def stop(self) -> None:
        followed = list(self._workers)
        self._stopping = True  # what ends from now on claims nothing more
        await cancel([*(w.task for w in self._workers.values()), self._pump, self._pruner])
        # attempts under way finish and are recorded if they can within DRAIN: a receiver that answered one gets
        # no duplicate from whoever claims it next (every attempt a deploy cut short came twice)
        under_way = [t for w in self._workers.values() for t in w.in_flight]
        if under_way:
            await asyncio.wait(under_way, timeout=DRAIN)
        await cancel(under_way)
        await asyncio.gather(*self._retiring)
        await asyncio.gather(*(w.client.close() for w in self._workers.values()))
        self._workers.clear()
        self._pump = self._pruner = None
        self._stopping = False
        if followed:
            # the attempts cut short are made again at once by whoever claims next, not a lease later
            try:
                self.counters["leases_released"] += await self.rt.store.webhooks.release(self.owner, followed)
            except Exception:  # the leases run out instead
                log.exception("webhooks: releasing the leases of instance %s failed", self.owner)

    # ------------------------------------------------------------------- pruning

    async def prune(self) -> int:
        """Delete the finished deliveries past the retention period, a batch per write; how many."""
        before = webhooks.retained_since(self.rt.settings, time.time())
        pruned = 0
        while True:
            batch = await self.rt.store.webhooks.prune(before, PRUNE_BATCH)
            pruned += batch
            if batch < PRUNE_BATCH:
                return pruned

    async def _prune_every(self) -> None:
        while True:
            try:
                self.counters["pruned"] += await self.prune()
            except Exception:
                log.exception("webhooks: pruning finished deliveries failed; trying again later")
            await asyncio.sleep(PRUNE_EVERY)

    # ------------------------------------------------------------------ deriving

    async def _follow(self) -> None:
        hub, changed = self.rt.hub, self.rt.state(webhooks.changes)
        while True:
            woken = first_of(hub.any_event, changed)  # taken before reading: nothing missed
            try:
                await self._derive_all()
            except Exception:  # a store hiccup must not end deliveries for good
                log.exception("webhooks: deriving deliveries failed; retrying in 1s")
                await asyncio.sleep(1.0)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL):
                    await woken.wait()

    async def _derive_all(self) -> None:
        endpoints = await self.rt.store.webhooks.enabled()
        for endpoint in endpoints:
            known = endpoint.id in self._workers
            worker = self._worker(endpoint)
            if await self._derive(worker) or not known:
                worker.wake.set()
        followed = {e.id for e in endpoints}
        for gone in [eid for eid in self._workers if eid not in followed]:
            self._retire(self._workers.pop(gone))

    def _retire(self, worker: _Worker) -> None:
        """End the worker of a disabled or deleted endpoint, its attempts under way too, without holding up
        deriving; through `tasks.cancel`, which cancels again a task that lost its cancellation (one that
        did would go on delivering to an endpoint its actor turned off)."""
        ending = asyncio.create_task(self._end(worker), name="aitp-webhook-retire")
        self._retiring.add(ending)
        ending.add_done_callback(self._retiring.discard)

    @staticmethod
    async def _end(worker: _Worker) -> None:
        await cancel(worker.tasks)
        await worker.client.close()

    async def _derive(self, worker: _Worker) -> bool:
        """Turn the endpoint's new inbox events into deliveries; whether the worker should look at them. Where
        the store claims in the same write (SQLite), the due ones are attempted at once: no wake-up of the
        worker and second write between a commit and its delivery (the end of each attempt wakes it)."""
        endpoint = worker.endpoint
        store, cursor, found = self.rt.store, endpoint.cursor, False
        while True:
            events = await inbox.read(store, endpoint.actor, cursor, BATCH)
            if not events:
                return found
            # what the endpoint does not take becomes no delivery; the cursor moves past it all the same
            made = [self._delivery(endpoint, e) for e in events if webhooks.takes(endpoint, e)]
            to = inbox.cursor_of(events[-1])
            with worker.slots(len(made)) as free:
                terms = self._terms(worker, free)
                moved, claimed = await store.webhooks.advance_and_claim(endpoint.id, cursor, to, made, terms)
                self._start(worker, endpoint, claimed)
            left = bool({d.id for d in made} - {d.id for d in claimed})  # for the worker, when it may go
            if left:
                worker.mark()
            if not moved:
                return True  # another instance moved the cursor first (what it derived is the same)
            found, cursor = found or left, to

    def _delivery(self, endpoint: EndpointRecord, event: EventRecord) -> DeliveryRecord:
        at = time.time()
        return DeliveryRecord(
            id=delivery_id(endpoint.id, event.gid),
            endpoint_id=endpoint.id,
            thread_id=event.thread_id,
            gid=event.gid,
            type=event.type,
            body=self.render(event).json,
            created_at=at,
            next_attempt_at=at,
        )

    # ---------------------------------------------------------------- delivering

    def _worker(self, endpoint: EndpointRecord) -> _Worker:
        """The endpoint's worker (started if it has none), holding the endpoint as just read."""
        worker = self._workers.get(endpoint.id)
        if worker is None:
            task = asyncio.create_task(self._work(endpoint.id), name=f"aitp-webhook-{endpoint.id}")
            worker = self._workers[endpoint.id] = _Worker(task, endpoint, http_client(IN_FLIGHT))
        worker.endpoint = endpoint
        return worker

    def _start(self, worker: _Worker, endpoint: EndpointRecord, claimed: list[DeliveryRecord]) -> None:
        """Attempt the claimed deliveries, each in a task of the worker's (cancelled with it)."""
        for delivery in claimed:
            task = asyncio.create_task(self._attempt(worker, endpoint, delivery))
            worker.in_flight.add(task)
            task.add_done_callback(worker.ended)

    async def _work(self, endpoint_id: str) -> None:
        worker = self._workers[endpoint_id]
        try:
            await self._work_on(endpoint_id, worker)
        finally:  # the endpoint disabled or deleted: an attempt cut short is made again later (`stop` drains)
            if not self._stopping:
                for task in list(worker.in_flight):
                    task.cancel()

    def _terms(self, worker: _Worker, limit: int) -> Claim:
        """A claim of at most `limit` deliveries of the worker's endpoint, from now, for this instance's lease."""
        at = time.time()
        return Claim(self.owner, at, at + self.lease, limit, worker.ordered)

    async def _work_on(self, endpoint_id: str, worker: _Worker) -> None:
        store = self.rt.store.webhooks
        while True:
            worker.wake.clear()
            marked = worker.marked
            try:
                with worker.slots() as free:
                    claimed = await store.claim(endpoint_id, self._terms(worker, free)) if free else []
                    if not free or len(claimed) == free:
                        worker.mark()  # there may be more
                    if claimed:
                        self._start(worker, worker.endpoint, claimed)
                        continue
                due = await store.next_due(endpoint_id, ordered=worker.ordered) if free else None
                if free and due is None and worker.marked == marked:
                    worker.backlog = False  # nothing pending, nothing under way
            except Exception:
                log.exception("webhooks: claiming deliveries of %s failed; retrying in 1s", endpoint_id)
                due = time.time() + 1.0
            pause = POLL if due is None else min(max(due - time.time(), 0.0), POLL)
            with contextlib.suppress(TimeoutError):  # not wait_for: on Python 3.11 it can lose a cancellation
                async with asyncio.timeout(pause):
                    await worker.wake.wait()

    async def _attempt(self, worker: _Worker, endpoint: EndpointRecord, delivery: DeliveryRecord) -> bool:
        """Make the attempt and record it; a delivery that ended (sent, or refused for good) claims what is due
        in the same write, in the slot it frees. Whether the worker should look (`_Worker.ended`)."""
        settings = self.rt.settings
        answer = await send(worker.client, endpoint, delivery, settings)
        at = time.time()
        self.counters["attempts"] += 1
        delivery.last_attempt_at, delivery.last_status, delivery.last_error = at, answer.status, answer.error
        disable = None
        if answer.succeeded:
            delivery.status = "succeeded"
        elif answer.status == 410:
            delivery.status = "failed"
            disable = "the endpoint answered 410 Gone"
        elif webhooks.skips(endpoint, answer.status) and delivery.attempts >= webhooks.CLIENT_ERROR_ATTEMPTS:
            delivery.status = "failed"  # the receiver refuses this event: its thread goes on
        else:
            deadline = delivery.created_at + settings.webhook_retry_hours * 3600
            if at >= deadline:
                delivery.status = "failed"
            else:
                wait = backoff(delivery.attempts, settings.webhook_retry_base, answer.retry_after)
                delivery.next_attempt_at = min(at + wait, deadline)
                worker.mark()  # its worker looks when this attempt ends, and waits for the retry
                worker.retrying = True
        goes_on = delivery.status != "pending" and disable is None and not self._stopping
        try:
            with worker.slots(own=1) as free:
                terms = self._terms(worker, free if goes_on else 0)
                kept, claimed = await self.rt.store.webhooks.finish_and_claim(delivery, self.owner, terms)
                self._start(worker, worker.endpoint, claimed)
            if not kept:
                self.counters["lost_leases"] += 1
                return True
            self.counters[delivery.status if delivery.status != "pending" else "retrying"] += 1
            await self._note_health(worker, endpoint, answer, at, disable)
        except Exception:  # unrecorded: the lease runs out and the attempt is made again (at least once)
            log.exception("webhooks: recording the attempt of %s failed", delivery.id)
            return True
        return not goes_on or len(claimed) == terms.limit  # a retry to wait for, or more may be due

    async def _note_health(
        self, worker: _Worker, endpoint: EndpointRecord, answer: Answer, at: float, disable: str | None
    ) -> None:
        """Keep the endpoint's run of failures; disable it on 410 or after `webhook_disable_days` of them."""
        store = self.rt.store.webhooks
        if answer.succeeded:
            if endpoint.failing_since is None and not worker.retrying:
                return  # the usual case: no write beyond the attempt's
            worker.retrying = False
            # the receiver is back: what waits for a retry (on any instance) is due now, in one write
            if await store.hasten(endpoint.id, at):
                worker.mark()
                worker.wake.set()
            if endpoint.failing_since is not None:
                endpoint.failing_since = None
                await store.set_health(endpoint.id, None, None)
            return
        since = endpoint.failing_since if endpoint.failing_since is not None else at
        days = self.rt.settings.webhook_disable_days
        if disable is None and at - since >= days * 86_400:
            disable = f"every attempt failed for {days:g} days"
        if disable is not None:
            log.warning("webhooks: endpoint %s of %s disabled: %s", endpoint.id, endpoint.actor, disable)
            self.counters["endpoints_disabled"] += 1
            # shielded: disabling the endpoint makes the engine cancel its worker, this attempt's task included,
            # which must not cut the notice short
            await asyncio.shield(self._disable(endpoint, since, disable))
            self._wake_pump()
        elif endpoint.failing_since is None:
            endpoint.failing_since = since
            await store.set_health(endpoint.id, since, None)

    async def _disable(self, endpoint: EndpointRecord, since: float, reason: str) -> None:
        """Disable the endpoint, then tell its actor (a `webhook.disabled` event in its notices thread)."""
        await self.rt.store.webhooks.set_health(endpoint.id, since, reason)
        notice = {"webhook_id": endpoint.id, "url": endpoint.url, "reason": reason, "failing_since": int(since)}
        await notices.notify(self.rt.store, endpoint.actor, "webhook.disabled", notice)

    def _wake_pump(self) -> None:
        self.rt.state(webhooks.changes).fire()
