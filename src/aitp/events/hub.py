"""Waking subscribers when events they follow are written, by this process or by any other.

Subscribers never take events from the hub: they read the store's event log from their own cursor
(`ThreadFeed.after`, `Hub.inbox_after`), so nothing is lost or doubled at the seam between replay and
live, whatever the timing. The hub only says *when* to look again:

- this process's writes, through the store's commit listener, at once;
- other processes' writes, through a tailer that follows the store (`Store.watch_threads`: a change
  stream on MongoDB, polling of the store-wide event log by gid on SQLite).

Per thread, a `ThreadFeed` keeps the most recent events in memory, fetched once per change, and the frame
each binding renders of each (`ThreadFeed.frames(render)`), so a thousand subscribers of one thread cost
one store read per change and one serialisation per event and binding, not a thousand. The feed keeps
records: what an event looks like on a wire is the binding's `Render`.

The hub also carries what actors are doing right now (`ActivityRecord`: an agent working on an answer),
which is in no log: a record posted here is handed at once to this process's listeners (`Hub.activity`),
and the other instances' hubs read it from the store's short log of activity (`ActivityStore.since`) every
`poll_interval` while someone there listens, skipping what their own process posted. Nothing of it touches
the path of a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterator
from typing import Protocol, TypeVar

from aitp.events.stream import Frame, Render
from aitp.store.activity import ActivityRecord
from aitp.store.base import EventRecord, Store
from aitp.tasks import cancel

log = logging.getLogger(__name__)

RECENT_EVENTS = 1024  # per followed thread, kept in memory for live subscribers
ACTIVITY_BATCH = 1000  # activity records read at once from the store (other instances')

Hears = Callable[[ActivityRecord], None]  # told each activity record of what it listens to


class Wakeup:
    """One waiter's ticket for a `Signal`'s next fire: `await wakeup.wait()` (at once if it has fired)."""

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[None]) -> None:
        self._future = future

    async def wait(self) -> None:
        await self._future

    def is_set(self) -> bool:
        return self._future.done()

    def set(self) -> None:
        """Wake this waiter alone (its signal's other waiters are not woken)."""
        if not self._future.done():
            self._future.set_result(None)


COMPACT_AT = 64  # waiters a signal holds before it drops those that went away (then twice those left)


class Signal:
    """A broadcast wake-up: `waiter()` before reading, then wait on it if there was nothing new.

    Each waiter has its own future, dropped on the next fire: waking N waiters is O(N), and a waiter that
    goes away costs nothing (asyncio.Event removes each woken waiter from a deque: O(N^2) for N waiters).
    Waiters that went away (cancelled, or set alone) are dropped as new ones come too, not only at the next
    fire: a signal that rarely fires, waited on beside a busy one at every turn (the webhook engine's
    endpoint changes, beside every event), held one cancelled future per turn until it fired."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []
        self._compact_at = COMPACT_AT

    def fire(self) -> None:
        waiters, self._waiters = self._waiters, []
        self._compact_at = COMPACT_AT
        for future in waiters:
            if not future.done():  # a cancelled waiter's future
                future.set_result(None)

    def waiter(self) -> Wakeup:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.add(future)
        return Wakeup(future)

    def add(self, future: asyncio.Future[None]) -> None:
        """Set `future` at the next fire (if nothing else has by then)."""
        waiters = self._waiters
        waiters.append(future)
        if len(waiters) >= self._compact_at:  # amortised O(1) per waiter
            self._waiters = waiters = [waiting for waiting in waiters if not waiting.done()]
            self._compact_at = max(COMPACT_AT, 2 * len(waiters))


def first_of(*signals: Signal) -> Wakeup:
    """One waiter on several signals, set by whichever fires first: one future, where a task per signal
    and `asyncio.wait` cost twice as much per turn (a delivery engine waits so at every event)."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    for signal in signals:
        signal.add(future)
    return Wakeup(future)


class ThreadFeed:
    """One followed thread in this process: a wake-up signal and a window of its newest events."""

    def __init__(self, store: Store, thread_id: str) -> None:
        self.store = store
        self.thread_id = thread_id
        self.signal = Signal()
        self.followers = 0
        self._recent: deque[EventRecord] = deque(maxlen=RECENT_EVENTS)
        # per binding's Render, by seq, of events in the window: a logged event never changes
        self._frames: dict[Render, dict[int, Frame]] = {}
        # the thread's last seq as of the last read that reached the end of its log (None: not known): a
        # reader at it or past it is served nothing, without a read, until the next change
        self._head: int | None = None
        self._stale = True
        self._pokes = 0  # changes so far: a read that saw none while it ran is fresh
        self._refreshing: Signal | None = None  # fired when the store read under way ends

    def poke(self) -> None:
        self._stale = True
        self._pokes += 1
        self.signal.fire()

    def frames(self, render: Render) -> Render:
        """`render` shared by the subscribers of this thread in this process: an event's Frame is rendered
        once while the event is in the window; an older event (a replay's) is rendered for its reader alone
        and not kept. `render` is a binding's, the same object for all its streams (the cache's key)."""
        frames = self._frames.get(render)
        if frames is None:
            frames = self._frames[render] = {}

        def frame(record: EventRecord) -> Frame:
            found = frames.get(record.seq)
            if found is None:
                found = render(record)
                recent = self._recent
                if recent and recent[0].seq <= record.seq <= recent[-1].seq:
                    frames[record.seq] = found
            return found

        return frame

    async def after(self, cursor: int, limit: int) -> list[EventRecord]:
        """Events with seq > `cursor`, oldest first, at most `limit`: from memory when it has them."""
        if self._stale or self._refreshing is not None:
            await self._catch_up(cursor)
        recent = self._recent
        if recent and recent[0].seq <= cursor + 1 <= recent[-1].seq:
            start = cursor + 1 - recent[0].seq
            if recent[start].seq == cursor + 1:  # seqs are contiguous within a thread
                return [recent[i] for i in range(start, min(start + limit, len(recent)))]
        if self._head is not None and cursor >= self._head:
            return []
        return await self.store.list_events(self.thread_id, after=cursor, limit=limit)

    async def page(self, cursor: int, limit: int) -> list[EventRecord]:
        """A replaying reader's next events: as `after` when the window reaches back to `cursor`, else
        straight from the store, never kept (filling the window from an old cursor held 1,024 events of the
        thread per replay, and their frames, however little of it the reader took)."""
        recent = self._recent
        if recent and recent[0].seq <= cursor + 1:
            return await self.after(cursor, limit)
        pokes = self._pokes
        events = await self.store.list_events(self.thread_id, after=cursor, limit=limit)
        if len(events) < limit and pokes == self._pokes and not recent and self._refreshing is None:
            # The last page, with nothing written while it was read: the end of the log, which the window
            # starts from (a subscriber opening at the head would read it again at once, then at each change
            # find the window empty and read the store once more). At most a page: bounded as the window is.
            recent.extend(events)
            self._head = events[-1].seq if events else cursor
            self._stale = False
        return events

    def kept(self) -> tuple[int, int]:
        """What this feed holds in memory: (events in its window, rendered frames of every binding)."""
        return len(self._recent), sum(len(frames) for frames in self._frames.values())

    def close(self) -> None:
        """The last follower left: drop the window and its frames (nothing may still read them)."""
        self._recent.clear()
        for frames in self._frames.values():
            frames.clear()  # the binding's dict, which its open streams' `frame` functions hold
        self._head = None
        self._stale = True

    async def _catch_up(self, cursor: int) -> None:
        """One store read per change, however many subscribers ask. Readers arriving while a refresh runs
        wait for it (returning [] then would make them sleep past the events it is fetching), all woken
        at once when it ends: a lock would hand the turn to a thousand waiters one loop iteration apiece."""
        while True:
            refreshed = self._refreshing
            if refreshed is not None:
                await refreshed.waiter().wait()  # someone else's refresh: then look again (stale once more?)
                continue
            if not self._stale:
                return
            refreshed = self._refreshing = Signal()
            self._stale = False
            try:
                await self._refresh(cursor)
            except BaseException:
                self._stale = True  # not fetched (failed, or this reader was cancelled): the next reader retries
                raise
            finally:
                self._refreshing = None
                refreshed.fire()
            return

    async def _refresh(self, cursor: int) -> None:
        if self._recent:
            start = self._recent[-1].seq
        else:
            start = cursor if self._head is None else self._head
        fetched = await self.store.list_events(self.thread_id, after=start, limit=RECENT_EVENTS)
        if len(fetched) == RECENT_EVENTS:  # cut short: there may be more, which the next reader fetches
            self._stale, self._head = True, None
        else:  # the end of the log
            self._head = fetched[-1].seq if fetched else start
        if fetched and self._recent and fetched[0].seq != self._recent[-1].seq + 1:
            self._recent.clear()
        self._recent.extend(fetched)
        # frames of events that left the window go too: from the oldest rendered (most are rendered in seq
        # order, as the window grows), or by a scan if some were rendered out of order
        first = self._recent[0].seq if self._recent else 0
        for frames in self._frames.values():
            while frames:
                oldest = next(iter(frames))
                if oldest >= first:
                    break
                del frames[oldest]
            if len(frames) > len(self._recent):
                for seq in [seq for seq in frames if seq < first]:
                    del frames[seq]  # in place: the binding's streams hold this dict


class _Inbox:
    """One actor's inbox streams in this process: their wake-up signal."""

    def __init__(self) -> None:
        self.signal = Signal()
        self.followers = 0

    def close(self) -> None:
        """The last follower left: nothing to let go of."""


class _Followed(Protocol):
    followers: int

    def close(self) -> None: ...


F = TypeVar("F", bound=_Followed)


@contextlib.contextmanager
def _held(registry: dict[str, F], key: str, make: Callable[[], F]) -> Iterator[F]:
    """`registry[key]`, made if missing, while the `with` block runs: counted among its followers, and
    dropped (and closed) when the last one leaves."""
    held = registry.get(key)
    if held is None:
        held = registry[key] = make()
    held.followers += 1
    try:
        yield held
    finally:
        held.followers -= 1
        if held.followers == 0 and registry.get(key) is held:
            del registry[key]
            held.close()


def _members_unknown(thread_id: str) -> Collection[str] | None:
    return None


class Hub:
    def __init__(self, store: Store, poll_interval: float = 0.1) -> None:
        self.store = store
        self.poll_interval = poll_interval
        self.any_event = Signal()  # fired for every thread: the admin's inbox and the delivery engines wait on it
        self._inboxes: dict[str, _Inbox] = {}
        # the actors of a thread as this process last read them, if it still holds them (None: not known);
        # set by the services (aitp.services.access), which keep recently read threads
        self.members_of: Callable[[str], Collection[str] | None] = _members_unknown
        self._feeds: dict[str, ThreadFeed] = {}
        self._tailer: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[str], None]] = []
        store.add_commit_listener(self.notify)
        self.instance = uuid.uuid4().hex  # names this process's activity records in the store (`origin`)
        # who hears activity here: by thread ("thread ..."), by inbox ("actor ..."), or of every thread ("*")
        self._hearing: dict[str, set[Hears]] = {}
        self._activity_tailer: asyncio.Task[None] | None = None

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """Call `listener(thread_id)` when a thread's record or actors may have changed: at once for this
        process's writes, when the tailer sees the thread's events for other processes' (any event but a
        message event counts: `store.base.changes_thread`)."""
        self._listeners.append(listener)

    def notify(self, thread_id: str, thread_changed: bool = True) -> None:
        """Something was written to `thread_id`: wake whoever follows it (and tell the listeners, unless
        only its messages changed)."""
        if thread_changed:
            for listener in self._listeners:
                listener(thread_id)
        feed = self._feeds.get(thread_id)
        if feed is not None:
            feed.poke()
        self.any_event.fire()
        self._wake_inboxes(thread_id, thread_changed)

    def _wake_inboxes(self, thread_id: str, thread_changed: bool) -> None:
        """Wake the inbox streams of the thread's members. Each woken stream reads the store, so waking every
        one for every event cost a read per connected actor per message anywhere (1,000 idle inbox streams:
        ingest 17x slower). Every inbox is woken when the actors may have changed (a join, a removal, by this
        process or another) or when this process does not know the members."""
        if not self._inboxes:
            return
        members = None if thread_changed else self.members_of(thread_id)
        if members is None:
            for every in self._inboxes.values():
                every.signal.fire()
            return
        for actor in members:
            inbox = self._inboxes.get(actor)
            if inbox is not None:
                inbox.signal.fire()

    @contextlib.contextmanager
    def follow_inbox(self, actor: str) -> Iterator[Signal]:
        """The wake-up signal of `actor`'s inbox streams in this process, while the `with` block runs."""
        with _held(self._inboxes, actor, _Inbox) as inbox:
            yield inbox.signal

    @contextlib.contextmanager
    def follow(self, thread_id: str):  # type: ignore[no-untyped-def]
        """The thread's feed while the `with` block runs (shared by every follower in this process)."""
        with _held(self._feeds, thread_id, lambda: ThreadFeed(self.store, thread_id)) as feed:
            yield feed

    # ----------------------------------------------------------- activity (outside the log)

    @contextlib.contextmanager
    def hear_activity(self, hears: Hears, *, thread_id: str | None = None, actor: str | None = None) -> Iterator[None]:
        """Call `hears(record)` with each activity record of `thread_id`, or of the threads whose members
        included `actor` when it was posted (an inbox), or (neither) of every thread, while the block runs."""
        key = f"thread {thread_id}" if thread_id is not None else f"actor {actor}" if actor is not None else "*"
        hearing = self._hearing.setdefault(key, set())
        hearing.add(hears)
        try:
            yield
        finally:
            hearing.discard(hears)
            if not hearing and self._hearing.get(key) is hearing:
                del self._hearing[key]

    def activity(self, record: ActivityRecord) -> None:
        """Tell whoever hears it here about `record` (posted by this process, or read from the store)."""
        hearing = self._hearing
        if not hearing:
            return
        told: list[Hears] = [*hearing.get(f"thread {record.thread_id}", ()), *hearing.get("*", ())]
        for actor in record.audience:
            told.extend(hearing.get(f"actor {actor}", ()))
        for hears in told:
            try:
                hears(record)
            except Exception:  # one listener's failure must not keep the record from the others
                log.exception("activity: a listener failed")

    async def _tail_activity(self) -> None:
        """Other instances' activity records, read every `poll_interval` while anyone here listens (none
        listening: no read at all; the position is taken afresh when someone does)."""
        after: int | None = None
        while True:
            await asyncio.sleep(self.poll_interval)
            if not self._hearing:
                after = None
                continue
            try:
                if after is None:
                    after = await self.store.activity.head()
                    continue
                for record in await self.store.activity.since(after, ACTIVITY_BATCH):
                    after = record.position
                    if record.origin != self.instance:
                        self.activity(record)
            except Exception:  # a store hiccup must not end activity for good
                log.exception("activity tailer: reading the store failed; retrying in 1s")
                await asyncio.sleep(1.0)

    # ----------------------------------------------------------- other instances

    async def start(self) -> None:
        """Start following writes by other processes sharing the store (`Store.watch_threads`), and their
        activity records."""
        if self._tailer is None:
            self._tailer = asyncio.create_task(self._tail(), name="aitp-event-tailer")
        if self._activity_tailer is None:
            self._activity_tailer = asyncio.create_task(self._tail_activity(), name="aitp-activity-tailer")

    async def stop(self) -> None:
        await cancel([self._tailer, self._activity_tailer])
        self._tailer = self._activity_tailer = None

    async def _tail(self) -> None:
        while True:
            try:
                async for threads in self.store.watch_threads(self.poll_interval):
                    for thread_id, changed in threads.items():
                        self.notify(thread_id, changed)
            except Exception:  # a store hiccup must not end live delivery for good
                log.exception("event tailer: following the event log failed; retrying in 1s")
                await asyncio.sleep(1.0)
