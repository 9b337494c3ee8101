"""Webhook endpoints and their deliveries as stored, and the small store that keeps them (one implementation
per backend).

A delivery is one inbox event on its way to one endpoint. Deliveries are derived from the event log by each
endpoint's cursor (`advance`): nothing is queued beside the log at write time, and deriving the same events
twice (two instances, or a crash between the insert and the cursor's move) inserts nothing twice, since a
delivery's id is its (endpoint, event) pair. Each attempt is made by whoever holds the delivery's lease
(`claim`), and only its holder records the outcome (`finish`). Which deliveries a claim may take is one rule
(`claimable`, `next_ready`) that both backends apply to what they read.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

# canceled: a caller gave up on a pending delivery (its thread moves on); every status but pending is final, and
# a final delivery is kept for the retention period (`prune`), out of every query the engine makes
DeliveryStatus = Literal["pending", "succeeded", "failed", "canceled"]
# which `thread.message.created` events an endpoint takes: every one, or those that ask its actor for work
# (`services.addressing`); stores written before the option read as "all"
EndpointMessages = Literal["all", "addressed"]
# what a 4xx answer (but 408, 410 and 429) does to a delivery: "skip" fails it after a few attempts, so its
# thread goes on; "block" retries it as any failure, holding the thread back (stores written before: "skip")
ClientErrorPolicy = Literal["skip", "block"]
# "thread": a thread's deliveries one at a time, in order; "none": any due delivery, whatever its thread
EndpointOrdering = Literal["thread", "none"]


@dataclass
class WebhookSecret:
    """A signing secret (`whsec_` + base64, the Standard Webhooks form). The current one has no expiry; a
    rotated-out one signs too until `expires_at` (Unix seconds), so receivers can switch without a gap."""

    secret: str
    expires_at: float | None = None


@dataclass
class EndpointRecord:
    id: str
    actor: str  # whose inbox it follows
    url: str
    event_types: list[str]  # empty: every event of the inbox
    enabled: bool
    secrets: list[WebhookSecret]  # the current one first
    created_at: int
    # the inbox position up to which events were turned into deliveries (moved by `advance` only)
    cursor: int = 0
    description: str | None = None
    failing_since: float | None = None  # first failure of the current run of failures; None after a success
    disabled_reason: str | None = None  # why the service disabled it (410, days of failures); None otherwise
    messages: EndpointMessages = "all"
    on_client_error: ClientErrorPolicy = "skip"
    ordering: EndpointOrdering = "thread"


@dataclass
class DeliveryRecord:
    id: str  # the `webhook-id` of every attempt: receivers deduplicate by it
    endpoint_id: str
    thread_id: str
    gid: int  # the event's position in the log (its `cursor` in the body)
    type: str
    body: str  # the JSON text sent, rendered once when the delivery was derived
    created_at: float
    status: DeliveryStatus = "pending"
    attempts: int = 0  # attempts claimed so far (the one under way included)
    next_attempt_at: float = 0.0
    last_attempt_at: float | None = None
    last_status: int | None = None  # the last HTTP status answered; None if no answer (timeout, refused)
    last_error: str | None = None
    lease_owner: str | None = None
    lease_until: float = 0.0


def delivery_id(endpoint_id: str, gid: int) -> str:
    """The delivery of event `gid` to an endpoint: the same id whoever derives it, sorting by gid."""
    return f"whd_{endpoint_id.removeprefix('wh_')}_{gid:012d}"


@dataclass(frozen=True)
class Claim:
    """A claim's terms (see `WebhookStore.claim`): for whom, at what time, until when, how many at most."""

    owner: str
    now: float
    lease_until: float
    limit: int
    ordered: bool = True  # only the oldest pending delivery of each thread (the endpoint's ordering "thread")


@dataclass(frozen=True)
class Pending:
    """What the claim rule reads of a pending delivery."""

    id: str
    thread_id: str
    gid: int
    next_attempt_at: float
    lease_until: float

    @property
    def ready_at(self) -> float:
        """When it may be claimed: its retry time, or when the lease on it runs out, whichever is later."""
        return max(self.next_attempt_at, self.lease_until)


# The claim rule, written once: each backend reads the candidates through its indexes (every pending delivery
# of the endpoint, or only each thread's oldest: a backend's shortcut, never a change of the answer), oldest
# (lowest gid) first, and applies these two functions to them.


def claimable(candidates: Iterable[Pending], terms: Claim) -> list[Pending]:
    """The deliveries a claim takes: of the pending `candidates` (oldest first), those ready at `terms.now`
    (due and unleased), each the oldest pending one of its thread when `terms.ordered` (a thread whose oldest
    is not ready waits whole), at most `terms.limit`."""
    taken: list[Pending] = []
    if terms.limit <= 0:
        return taken
    seen: set[str] = set()  # threads whose oldest pending delivery was read: the rest of each waits for it
    for candidate in candidates:
        if terms.ordered:
            if candidate.thread_id in seen:
                continue
            seen.add(candidate.thread_id)
        if candidate.ready_at <= terms.now:
            taken.append(candidate)
            if len(taken) == terms.limit:
                break
    return taken


def next_ready(candidates: Iterable[Pending], *, ordered: bool) -> float | None:
    """When the next claim can take something from the pending `candidates` (oldest first): the earliest
    `ready_at` among them, each thread's oldest only when `ordered`; None when there is none."""
    seen: set[str] = set()
    ready: list[float] = []
    for candidate in candidates:
        if ordered:
            if candidate.thread_id in seen:
                continue
            seen.add(candidate.thread_id)
        ready.append(candidate.ready_at)
    return min(ready, default=None)


class WebhookStore(abc.ABC):
    # endpoints

    @abc.abstractmethod
    async def create(self, endpoint: EndpointRecord, *, limit: int | None = None) -> bool:
        """Insert an endpoint; with a `limit`, only if its actor has fewer endpoints (False otherwise). The count
        and the insert are one atomic step: concurrent creations, on any instance, never exceed the limit."""

    @abc.abstractmethod
    async def get(self, endpoint_id: str) -> EndpointRecord | None: ...

    @abc.abstractmethod
    async def of_actor(self, actor: str | None) -> list[EndpointRecord]:
        """The endpoints of `actor` (None: of everyone), by id."""

    @abc.abstractmethod
    async def enabled(self) -> list[EndpointRecord]:
        """Every enabled endpoint: what the delivery engine works on."""

    @abc.abstractmethod
    async def update(self, endpoint: EndpointRecord) -> bool:
        """Replace what a caller or the engine may change (url, event types, messages, on_client_error, enabled,
        secrets, description, failing_since, disabled_reason), never the cursor; False if the endpoint is
        gone."""

    @abc.abstractmethod
    async def set_health(self, endpoint_id: str, failing_since: float | None, disabled_reason: str | None) -> None:
        """What the engine learnt of an endpoint: set `failing_since`, and with a `disabled_reason` disable it
        (nothing else touched, so a caller's concurrent change stays)."""

    @abc.abstractmethod
    async def delete(self, endpoint_id: str) -> bool:
        """Delete an endpoint and its deliveries."""

    # deliveries

    @abc.abstractmethod
    async def advance(self, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord]) -> bool:
        """Insert `deliveries` (those already there are kept as they are) and move the endpoint's cursor from
        `after` to `to`; False (the deliveries still inserted) when its cursor was not `after` any more."""

    @abc.abstractmethod
    async def claim(self, endpoint_id: str, terms: Claim) -> list[DeliveryRecord]:
        """Lease at most `terms.limit` deliveries of the endpoint that are due at `terms.now` and unleased (or
        whose lease ran out), oldest first, each the oldest pending one of its thread if `terms.ordered`, to
        `terms.owner` until `terms.lease_until`, counting the attempt. Atomic: two claims never both get one
        delivery."""

    async def advance_and_claim(
        self, endpoint_id: str, after: int, to: int, deliveries: list[DeliveryRecord], claim: Claim
    ) -> tuple[bool, list[DeliveryRecord]]:
        """`advance`, and `claim` in the same write where a backend makes that one commit (SQLite: a new
        delivery is then attempted without a second write in between). Here: `advance` alone, claiming
        nothing (the endpoint's worker claims, concurrently with other endpoints' derivation)."""
        return await self.advance(endpoint_id, after, to, deliveries), []

    @abc.abstractmethod
    async def finish(self, delivery: DeliveryRecord, owner: str) -> bool:
        """Record the outcome of the attempt `owner` claimed (status, next attempt, last_*) and end its lease;
        False, writing nothing, if that lease was lost (another holder took it after it ran out)."""

    async def finish_and_claim(
        self, delivery: DeliveryRecord, owner: str, claim: Claim
    ) -> tuple[bool, list[DeliveryRecord]]:
        """`finish`, then (if the lease was kept) `claim`, in one write where a backend makes that one commit
        (SQLite): a finished delivery's slot goes to what is due next without a second write. Here: the two
        writes in turn."""
        if not await self.finish(delivery, owner):
            return False, []
        return True, await self.claim(delivery.endpoint_id, claim) if claim.limit else []

    @abc.abstractmethod
    async def next_due(self, endpoint_id: str, *, ordered: bool = True) -> float | None:
        """When the endpoint's next pending delivery may be claimed (retry time or lease end; `ordered`: of the
        threads' oldest ones only, as a claim of `Claim.ordered` takes them); None if none.
        Like `claim`, its cost is that of the pending deliveries: never of the finished ones kept."""

    @abc.abstractmethod
    async def hasten(self, endpoint_id: str, now: float) -> int:
        """Make every pending delivery of the endpoint waiting for a retry due at `now` (the endpoint answered
        again: its other threads need not wait out their backoff); how many. One write."""

    @abc.abstractmethod
    async def release(self, owner: str, endpoint_ids: list[str]) -> int:
        """End the leases `owner` holds on those endpoints' pending deliveries (an instance stopping: another
        claims them at once, not when the lease runs out); how many. Their attempts stay counted, and the
        holder's `finish` of them, if one still comes, records nothing."""

    @abc.abstractmethod
    async def prune(self, before: float, limit: int) -> int:
        """Delete at most `limit` finished (not pending) deliveries created before `before`; how many."""

    @abc.abstractmethod
    async def deliveries(
        self,
        endpoint_id: str,
        *,
        limit: int,
        before: int | None = None,
        status: DeliveryStatus | None = None,
        since: float = 0.0,
    ) -> list[DeliveryRecord]:
        """The endpoint's deliveries, newest (highest gid) first, with gid < `before` when given, of `status`
        when given; finished ones only if created at `since` or later (pending ones always)."""

    @abc.abstractmethod
    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None: ...

    @abc.abstractmethod
    async def redeliver(self, delivery_id: str, now: float) -> DeliveryRecord | None:
        """Make a delivery pending again, due at `now` (its attempts counted on); None if there is none."""

    @abc.abstractmethod
    async def cancel(self, delivery_id: str) -> DeliveryRecord | None:
        """Make a pending delivery `canceled` (its lease ended: an attempt under way records nothing), so its
        thread's next one may go; the record after, or None if there is no such pending delivery."""
