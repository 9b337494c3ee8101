"""Store-wide event positions on MongoDB without a document every write touches.

An event's position (`gid`) orders the store-wide log, which inboxes, the admin's log and the tailer
read by cursor. It used to come from one counter document `$inc`ed in every transaction: every writer of
the deployment conflicted on it, which bounds total write throughput by one document's commit rate and
cannot be sharded. Here each instance issues positions itself, and readers only read below a *safe point*
under which nothing can still commit:

- An instance holds a slot (0-127) in `instances` by lease. A position is
  `(milliseconds << 21) | (slot << 14) | n`: increasing per instance (its clock, never going back, and a
  counter within a millisecond), unique across instances (the slot), above every position of stores
  written with the counter (small integers).
- Each instance knows which positions its open transactions hold, and every `HEARTBEAT` seconds publishes
  its *low-water mark*: the lowest of them, or, with none open, the floor of the positions it will issue
  next. Every position it issues later is at or above what it published: its clock only moves forward.
- The safe point is the lowest low-water mark of the instances whose lease is current (this instance's
  own taken live, not as last published). Every event below it has committed or never will; an event that
  commits later has a position at or above it. A reader that reads `gid > cursor AND gid < safe point`
  therefore never skips an event that commits late: it sees it once the safe point passes it.
- A transaction that would commit when less than `COMMIT_MARGIN` is left of its instance's lease aborts
  instead (and the commit itself may take at most `MAX_COMMIT_MS`): a lease that ran out (a paused or
  partitioned instance) stops holding the safe point back, so its late commits must not land.

Costs: one small write per instance per `HEARTBEAT` (not per transaction), and one read of `instances`
per safe-point computation. An instance that dies holds the safe point back until its lease runs out
(`LEASE`): inbox readers wait that long for events newer than its last heartbeat, and lose none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from typing import Any

from pymongo.errors import DuplicateKeyError

from aitp.tasks import cancel

log = logging.getLogger(__name__)

SLOTS = 128
SLOT_BITS, COUNTER_BITS = 7, 14
HEARTBEAT = 0.05  # seconds between low-water marks published
LEASE = 10.0  # seconds a slot stays held without a heartbeat
COMMIT_MARGIN = 3.0  # seconds of lease a transaction needs left to commit
MAX_COMMIT_MS = 1_000
RELEASE_TIMEOUT = 2.0  # seconds a stopping instance waits to give its slot back


class LeaseLost(Exception):
    """This instance's slot lease ran out (or another instance holds its slot): no commit may land."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class Positions:
    """This instance's issuer of positions and its view of the store's safe point."""

    def __init__(self) -> None:
        self.owner = uuid.uuid4().hex
        self.slot: int | None = None
        self._last_ms = 0
        self._n = 0
        self._open: Counter[int] = Counter()  # positions held by transactions not yet ended
        self._lease_until = 0.0  # monotonic time
        self._db: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, db: Any) -> None:
        self._db = db
        await self._claim()
        await self._publish()
        self._task = asyncio.create_task(self._beat(), name="aitp-mongo-positions")

    async def stop(self) -> None:
        await cancel([self._task])
        self._task = None
        if self.slot is not None and self._db is not None:
            # gone at once, rather than when the lease runs out; a server that does not answer soon is not
            # waited for (the lease ends on its own)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(RELEASE_TIMEOUT):
                    await self._db.instances.delete_one({"_id": self.slot, "owner": self.owner})
            self.slot = None

    # issuing

    def issue(self) -> int:
        """A new position, held open until `release`: above every low-water mark published so far."""
        if self.slot is None:
            raise LeaseLost("no slot held")
        now = max(_now_ms(), self._last_ms)
        if now == self._last_ms:
            self._n += 1
            if self._n >> COUNTER_BITS:
                now, self._n = now + 1, 0
        else:
            self._n = 0
        self._last_ms = now
        position = (now << (SLOT_BITS + COUNTER_BITS)) | (self.slot << COUNTER_BITS) | self._n
        self._open[position] += 1
        return position

    def release(self, positions: list[int]) -> None:
        for position in positions:
            self._open[position] -= 1
            if self._open[position] <= 0:
                del self._open[position]

    def check_lease(self) -> None:
        """Raise LeaseLost unless enough of the lease is left for a commit to land before it runs out."""
        if time.monotonic() + COMMIT_MARGIN > self._lease_until:
            raise LeaseLost(f"slot lease ends in less than {COMMIT_MARGIN:g} s")

    def low_water_mark(self) -> int:
        """The lowest position this instance may still commit: the lowest open one, else the next floor."""
        if self._open:
            return min(self._open)
        return max(_now_ms(), self._last_ms + 1) << (SLOT_BITS + COUNTER_BITS)

    async def safe_point(self) -> int:
        """Every event with a position below this has committed or never will."""
        now = time.time()
        others = self._db.instances.find({"expires": {"$gt": now}, "_id": {"$ne": self.slot}}, {"lwm": 1})
        marks = [int(doc["lwm"]) async for doc in others]
        return min([self.low_water_mark(), *marks])

    # the lease

    async def _claim(self) -> None:
        now = time.time()
        for slot in range(SLOTS):
            doc = {"owner": self.owner, "lwm": self.low_water_mark(), "expires": now + LEASE}
            try:
                taken = await self._db.instances.update_one(
                    {"_id": slot, "$or": [{"expires": {"$lte": now}}, {"owner": self.owner}]},
                    {"$set": doc},
                    upsert=True,
                )
            except DuplicateKeyError:
                continue  # held by a live instance
            if taken.matched_count or taken.upserted_id is not None:
                self.slot = slot
                self._lease_until = time.monotonic() + LEASE
                return
        raise RuntimeError(f"all {SLOTS} instance slots of the store are held")

    async def _publish(self) -> None:
        started = time.monotonic()
        mark = self.low_water_mark()  # before the write: what it says holds from now on
        kept = await self._db.instances.update_one(
            {"_id": self.slot, "owner": self.owner}, {"$set": {"lwm": mark, "expires": time.time() + LEASE}}
        )
        if kept.matched_count:
            self._lease_until = started + LEASE
        else:
            log.error("mongo positions: slot %s was taken over; claiming another", self.slot)
            self.slot, self._lease_until = None, 0.0
            await self._claim()

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            try:
                await self._publish()
            except Exception:  # a store hiccup: the lease runs on; commits stop before it ends
                log.exception("mongo positions: heartbeat failed")
