"""Whether an actor can be reached now, and how soon it usually replies: what a customer needs to tell a dead
agent from a quiet one.

An actor is reachable through any of:
- `inbox_stream`: its inbox is followed live (WebSocket or SSE) on some instance sharing the store. Each
  instance keeps a beat in the store per actor whose inbox it streams (`InboxBeats`): written when the first
  stream of the actor opens there, refreshed every `BEAT_EVERY` seconds for all of them in one write (never per
  event), removed when the last one closes; a beat of an instance that died ends after `BEAT_LIFE`.
- `webhook`: it has an enabled webhook endpoint whose deliveries succeed (one succeeded, and no failure since).
- `a2a`: it is a remote A2A agent (a card URL) whose last call answered (`note_a2a_call`, by the A2A deliveries).

`usually_replies_in` is the median time, in whole seconds, from a message by someone else in a thread (the first
one since the actor last spoke there) to the actor's next message, over its most recent replies in its newest
threads: a bounded read (`REPLY_THREADS` threads, `REPLY_MESSAGES` messages of each), kept `REPLIES_TTL` seconds.

Who may ask: whoever may see the actor's profile (`identities.shows_profile`: a verified actor's is public, anyone's
to itself and to admins) or shares a thread with it; anyone else is told 404, as of an actor this server does not
know.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

from aitp.errors import NotFound
from aitp.principals import Principal
from aitp.recent import Recent
from aitp.runtime import Runtime, now
from aitp.services import identities
from aitp.store.base import MessageRecord
from aitp.store.presence import CallRecord

log = logging.getLogger(__name__)

BEAT_EVERY = 20.0  # seconds between refreshes of this instance's inbox beats
BEAT_LIFE = 60.0  # how long a beat holds without a refresh (an instance that died stops counting then)
REPLY_THREADS = 16  # the actor's newest threads looked at for its reply times
REPLY_MESSAGES = 25  # the newest messages of each of them: at most 400 messages read
REPLY_SAMPLES = 50  # its most recent replies, of which the median is taken
REPLIES_TTL = 60.0
MAX_REPLIES_KEPT = 10_000
A2A = "a2a"


@dataclass(frozen=True)
class Presence:
    actor: str
    via: list[str]  # of "inbox_stream", "webhook", "a2a", in that order
    usually_replies_in: int | None  # seconds; None without a reply to go by
    checked_at: int

    @property
    def reachable(self) -> bool:
        return bool(self.via)


async def presence_of(rt: Runtime, principal: Principal, actor: str) -> Presence:
    """`GET /v1/actors/{id}/presence`: 404 `actor_not_found` for an actor the caller may not see."""
    await _visible(rt, principal, actor)
    at = time.time()
    followed, webhook, a2a, replies = await asyncio.gather(
        rt.store.presence.followed(actor, at),
        _webhook_healthy(rt, actor),
        _a2a_answering(rt, actor),
        rt.state(reply_times).get(actor, lambda: _reply_time(rt, actor)),
    )
    via = [name for name, ok in (("inbox_stream", followed), ("webhook", webhook), (A2A, a2a)) if ok]
    return Presence(actor, via, replies[0] if replies else None, now())


async def _visible(rt: Runtime, principal: Principal, actor: str) -> None:
    identity = await rt.store.identities.get(actor)
    if identity is not None and (
        identities.shows_profile(principal, identity)
        or await rt.store.a2a.shared_threads(principal.actor, actor, limit=1)
    ):
        return
    raise NotFound(f"No actor '{actor}' is known to this server.", param="actor_id", code="actor_not_found")


async def _webhook_healthy(rt: Runtime, actor: str) -> bool:
    """An enabled endpoint with no failure since its last success (the engine clears `failing_since` on a
    success and sets it on a failure), and one success at least: an endpoint never tried says nothing yet."""
    for endpoint in await rt.store.webhooks.of_actor(actor):
        if endpoint.enabled and endpoint.failing_since is None:
            if await rt.store.webhooks.deliveries(endpoint.id, limit=1, status="succeeded"):
                return True
    return False


async def _a2a_answering(rt: Runtime, actor: str) -> bool:
    settings = await rt.store.a2a.get(actor)
    if settings is None or settings.card_url is None:
        return False
    call = await rt.store.presence.last_call(actor, A2A)
    return call is not None and call.ok


async def note_a2a_call(rt: Runtime, actor: str, answered: bool) -> None:
    """What the last call to a remote A2A agent gave (answered, or failed: no answer, an error, no card): called
    by the A2A deliveries after each exchange. Written when it differs from what this process last wrote for the
    actor, or that is older than `BEAT_EVERY`: an agent answering call after call costs no write per call."""
    written = rt.state(a2a_calls)
    at = time.time()
    last = written.get(actor)
    if last is not None and last[0] == answered and at - last[1] < BEAT_EVERY:
        return
    written[actor] = (answered, at)
    try:
        await rt.store.presence.note_call(CallRecord(actor, A2A, answered, at))
    except Exception as error:  # a store hiccup must not fail the delivery it is noted after
        written.pop(actor, None)
        log.warning("presence: the outcome of the call to %s was not noted: %s", actor, error)


def a2a_calls(rt: Runtime) -> dict[str, tuple[bool, float]]:
    """What this process last wrote of each A2A agent's calls (`rt.state(a2a_calls)`)."""
    return {}


# ------------------------------------------------------------------------------------------ reply times


def reply_times(rt: Runtime) -> Recent[str, tuple[int | None]]:
    """Each actor's usual reply time, as last computed here (`rt.state(reply_times)`)."""
    return Recent(REPLIES_TTL, MAX_REPLIES_KEPT)


async def _reply_time(rt: Runtime, actor: str) -> tuple[int | None]:
    threads = await rt.store.list_threads(actor, limit=REPLY_THREADS, order="desc")
    pages = await asyncio.gather(
        *(rt.store.list_messages(thread.id, limit=REPLY_MESSAGES, order="desc") for thread in threads)
    )
    replies: list[tuple[int, int]] = []  # (when the reply came, how long it took)
    for page in pages:
        replies.extend(replies_in(list(reversed(page)), actor))
    recent = sorted(replies, reverse=True)[:REPLY_SAMPLES]
    return (statistics.median_low([took for _, took in recent]) if recent else None,)


def replies_in(messages: list[MessageRecord], actor: str) -> list[tuple[int, int]]:
    """In one thread's messages (oldest first), each reply of `actor`: when it came and the seconds since the
    first message by someone else after the actor's previous one (what the other side waited)."""
    found: list[tuple[int, int]] = []
    waiting_since: int | None = None
    for message in messages:
        if message.actor != actor:
            if waiting_since is None:
                waiting_since = message.created_at
        elif waiting_since is not None:
            found.append((message.created_at, max(0, message.created_at - waiting_since)))
            waiting_since = None
    return found


# ------------------------------------------------------------------------------------------ inbox beats


class InboxBeats:
    """This instance's beats in the store for the actors whose inbox it streams (`rt.state(inbox_beats)`).

    An actor's writes (its first beat, its leave) run one after another, so a leave never lands after the beat
    of a stream opened just after it; the refresh of every beat is one write every `BEAT_EVERY` seconds, run
    while any stream is open."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.open: Counter[str] = Counter()
        self._writes: dict[str, asyncio.Task[None]] = {}  # each actor's last write, waited for by its next
        self._refresh: asyncio.Task[None] | None = None

    def opened(self, actor: str) -> asyncio.Task[None] | None:
        """A stream of `actor` opened here: its beat's write, if this is its first (else None)."""
        self.open[actor] += 1
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.create_task(self._refreshing(), name="aitp-inbox-beats")
        return self._write(actor, partial(self._beat, [actor])) if self.open[actor] == 1 else None

    def closed(self, actor: str) -> None:
        self.open[actor] -= 1
        if self.open[actor] > 0:
            return
        del self.open[actor]
        self._write(actor, partial(self._leave, actor))
        if not self.open and self._refresh is not None:
            self._refresh.cancel()
            self._refresh = None

    def _write(self, actor: str, write: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        before = self._writes.get(actor)

        async def run() -> None:
            if before is not None:
                await asyncio.wait([before])
            try:
                await write()
            except Exception as error:  # a store hiccup: the next refresh (or the beat's expiry) puts it right
                log.warning("presence: the inbox beat of %s was not written: %s", actor, error)
            finally:
                if self._writes.get(actor) is task:
                    del self._writes[actor]

        task = asyncio.create_task(run())
        self._writes[actor] = task
        return task

    async def _beat(self, actors: list[str]) -> None:
        await self.rt.store.presence.beat(self.rt.hub.instance, actors, time.time() + BEAT_LIFE)

    async def _leave(self, actor: str) -> None:
        if actor not in self.open:  # not opened again meanwhile
            await self.rt.store.presence.leave(self.rt.hub.instance, actor)

    async def _refreshing(self) -> None:
        while self.open:
            await asyncio.sleep(BEAT_EVERY)
            actors = list(self.open)
            try:
                await self._beat(actors)
            except Exception as error:
                log.warning("presence: refreshing %d inbox beats failed: %s", len(actors), error)
                continue
            for actor in actors:
                if actor not in self.open:  # its last stream closed while the refresh was written
                    self._write(actor, partial(self._leave, actor))


def inbox_beats(rt: Runtime) -> InboxBeats:
    return InboxBeats(rt)


@asynccontextmanager
async def inbox_followed(rt: Runtime, principal: Principal) -> AsyncIterator[None]:
    """While the block runs, the principal's actor counts as following its inbox live (not an admin's key:
    an operator's view of every thread says nothing of an agent)."""
    if principal.admin:
        yield
        return
    beats = rt.state(inbox_beats)
    written = beats.opened(principal.actor)
    try:
        if written is not None:
            await asyncio.shield(written)  # reachable once the stream is open (a cancelled open still writes)
        yield
    finally:
        beats.closed(principal.actor)
