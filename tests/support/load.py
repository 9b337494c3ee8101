"""The load scenario shared by tests/test_load.py (reduced size, in CI) and bench/load.py (full size).

One real `aitp serve` process and one thread. W writers post M messages each, all writers at once, each
with its own key and its own messages one after another; S live subscribers (WebSocket through
`AitpClient.stream`, and SSE, alternating) follow the thread from `after=0` meanwhile. `run_load` records
every POST's outcome and every subscriber's deliveries, then reads the stored log back; `LoadResult`
checks them (lost, duplicated, reordered) and turns them into figures.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from aitp.client import AitpClient
from aitp.testing import ServerProcess, start_server
from tests.support.live import sse_frames

ADMIN_KEY = "aitp_load_admin_key"
# One key per writer, so a per-key rate limit would only measure itself: switch it off. The owner brings every
# writer and reader into its thread: anyone may contact them.
SERVER_ENV = {
    "AITP_ADMIN_KEY": ADMIN_KEY,
    "AITP_RATE_LIMIT": "0",
    "AITP_MAX_ACTORS": "10000",
    "AITP_CONTACT_POLICY": "anyone",
    # writers are agents posting in threads of their own creating and others': load, not a conversation
    "AITP_TURN_BUDGET": "0",
    "AITP_AGENT_MESSAGES_PER_MINUTE": "0",
}
MESSAGE_CREATED = "thread.message.created"
RETRIES = 2  # per POST that got no answer at all


@dataclass(frozen=True)
class LoadShape:
    """How many writers, messages per writer and live subscribers."""

    writers: int
    messages: int
    subscribers: int

    @classmethod
    def from_env(cls, default: LoadShape, env: Mapping[str, str] = os.environ) -> LoadShape:
        """`default`, each figure overridden by AITP_LOAD_WRITERS / AITP_LOAD_MESSAGES / AITP_LOAD_SUBSCRIBERS."""
        return cls(
            writers=int(env.get("AITP_LOAD_WRITERS") or default.writers),
            messages=int(env.get("AITP_LOAD_MESSAGES") or default.messages),
            subscribers=int(env.get("AITP_LOAD_SUBSCRIBERS") or default.subscribers),
        )

    @property
    def total(self) -> int:
        return self.writers * self.messages


@dataclass
class Post:
    """One POST of a writer: its unique text and what came back (status None: no answer at all)."""

    writer: int
    index: int
    text: str
    started_ns: int
    finished_ns: int = 0
    status: int | None = None
    message_id: str | None = None
    error: str | None = None
    attempts: int = 1

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class Delivery:
    """A `thread.message.created` event as one subscriber received it."""

    seq: int
    message_id: str
    received_ns: int


@dataclass
class Subscriber:
    """A live follower of the thread and everything it received."""

    name: str
    transport: str  # "ws" or "sse"
    deliveries: list[Delivery] = field(default_factory=list)
    last_seq: int = 0
    resumes: int = 0


@dataclass(frozen=True)
class Stored:
    """A message as read back from the store (GET messages, oldest first)."""

    message_id: str
    text: str
    actor: str


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank `q`-th percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class LoadResult:
    shape: LoadShape
    posts: list[Post]
    subscribers: list[Subscriber]
    stored: list[Stored]  # the messages, in the thread's seq order
    event_order: list[str]  # message ids of the event log's `thread.message.created` events, in seq order
    drained_ns: int  # when the last subscriber had received the last event

    def acknowledged(self) -> list[Post]:
        return [p for p in self.posts if p.acknowledged]

    def server_errors(self) -> list[Post]:
        return [p for p in self.posts if p.status is not None and p.status >= 500]

    def unanswered(self) -> list[Post]:
        return [p for p in self.posts if p.status is None]

    def lost(self) -> int:
        """Acknowledged messages missing from the store, plus stored messages some subscriber never got."""
        stored_ids = {m.message_id for m in self.stored}
        missing = sum(1 for p in self.acknowledged() if p.message_id not in stored_ids)
        for subscriber in self.subscribers:
            received = {d.message_id for d in subscriber.deliveries}
            missing += len(stored_ids - received)
        return missing

    def duplicated(self) -> int:
        """Extra copies: of a text in the store, and of a message in any subscriber's deliveries."""
        extra = sum(n - 1 for n in Counter(m.text for m in self.stored).values())
        for subscriber in self.subscribers:
            extra += sum(n - 1 for n in Counter(d.message_id for d in subscriber.deliveries).values())
        return extra

    def reordered_subscribers(self) -> list[str]:
        """Subscribers that received the messages in another order than the thread's seq order."""
        order = [m.message_id for m in self.stored]
        return [s.name for s in self.subscribers if [d.message_id for d in s.deliveries] != order]

    def reordered_writers(self) -> list[int]:
        """Writers whose messages are stored in another order than they posted them."""
        index_of = {p.text: (p.writer, p.index) for p in self.posts}
        seen: dict[int, list[int]] = {}
        for message in self.stored:
            writer, index = index_of[message.text]
            seen.setdefault(writer, []).append(index)
        return [w for w, indexes in seen.items() if indexes != sorted(indexes)]

    def figures(self) -> dict[str, Any]:
        acknowledged = self.acknowledged()
        first = min(p.started_ns for p in self.posts)
        last = max(p.finished_ns for p in self.posts)
        started = {p.message_id: p.started_ns for p in acknowledged}
        lags = [
            (d.received_ns - started[d.message_id]) / 1e6
            for s in self.subscribers
            for d in s.deliveries
            if d.message_id in started
        ]
        latencies = [(p.finished_ns - p.started_ns) / 1e6 for p in acknowledged]
        seconds = (last - first) / 1e9
        return {
            "writers": self.shape.writers,
            "messages_per_writer": self.shape.messages,
            "subscribers": self.shape.subscribers,
            "posts": len(self.posts),
            "acknowledged": len(acknowledged),
            "total_s": round((self.drained_ns - first) / 1e9, 3),
            "post_phase_s": round(seconds, 3),
            "messages_per_s": round(len(acknowledged) / seconds, 1) if seconds else 0.0,
            "post_p50_ms": round(percentile(latencies, 50), 2),
            "post_p99_ms": round(percentile(latencies, 99), 2),
            "delivery_lag_p50_ms": round(percentile(lags, 50), 2),
            "delivery_lag_p99_ms": round(percentile(lags, 99), 2),
            "deliveries": len(lags),
            "status_5xx": len(self.server_errors()),
            "unanswered": len(self.unanswered()),
            "retried": sum(1 for p in self.posts if p.attempts > 1),
            "other_refusals": sum(1 for p in self.posts if p.status is not None and 300 <= p.status < 500),
            "lost": self.lost(),
            "duplicated": self.duplicated(),
            "reordered_subscribers": len(self.reordered_subscribers()),
            "reordered_writers": len(self.reordered_writers()),
            "event_log_matches_messages": self.event_order == [m.message_id for m in self.stored],
            "sse_resumes": sum(s.resumes for s in self.subscribers),
            "errors": dict(Counter((p.error or "")[:120] for p in self.posts if not p.acknowledged)),
        }


# --------------------------------------------------------------------------------- the parts


async def _follow_ws(base_url: str, key: str, thread_id: str, subscriber: Subscriber) -> None:
    # The SDK resumes from its cursor by itself after a drop or a slow-consumer close (4008).
    async with AitpClient(base_url, key) as client, client.stream(thread_id, after=0) as stream:
        async for event in stream:
            subscriber.last_seq = event.seq
            if event.type == MESSAGE_CREATED:
                subscriber.deliveries.append(Delivery(event.seq, event.data["id"], time.perf_counter_ns()))


async def _follow_sse(base_url: str, key: str, thread_id: str, subscriber: Subscriber) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx.Timeout(30, read=None)  # idle streams get keep-alive comments; the caller cancels us
    async with httpx.AsyncClient(base_url=base_url + "/v1", headers=headers, timeout=timeout) as client:
        while True:
            path = f"/threads/{thread_id}/events"
            try:
                async for frame in sse_frames(client, path, params={"after": subscriber.last_seq}):
                    if "status" in frame:
                        raise AssertionError(f"{subscriber.name} refused: {frame}")
                    if frame.get("event") == "end":  # slow consumer: resume from our cursor
                        break
                    if "data" not in frame:
                        continue
                    event = frame["data"]
                    subscriber.last_seq = event["seq"]
                    if event["type"] == MESSAGE_CREATED:
                        subscriber.deliveries.append(
                            Delivery(event["seq"], event["data"]["id"], time.perf_counter_ns())
                        )
            except httpx.TransportError:
                pass  # connection lost: resume from our cursor like any SSE client
            subscriber.resumes += 1


async def _write(client: httpx.AsyncClient, thread_id: str, key: str, writer: int, count: int) -> list[Post]:
    posts: list[Post] = []
    for index in range(count):
        post = Post(writer, index, f"load w{writer:03d} #{index:04d}", time.perf_counter_ns())
        posts.append(post)
        # As a careful client does: a POST that got no answer is sent again under the same Idempotency-Key,
        # so it is stored once whether or not the first attempt reached the store.
        headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"load-{writer}-{index}"}
        for attempt in range(RETRIES + 1):
            post.attempts = attempt + 1
            try:
                response = await client.post(
                    f"/threads/{thread_id}/messages", json={"content": post.text}, headers=headers
                )
            except httpx.TransportError as error:
                post.error = repr(error)
                continue
            post.status = response.status_code
            if post.acknowledged:
                post.message_id = response.json()["id"]
                post.error = None
            else:
                post.error = response.text[:300]
            break
        post.finished_ns = time.perf_counter_ns()
    return posts


async def event_log(client: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    """Every event of the thread, in seq order (read page by page)."""
    events: list[dict[str, Any]] = []
    while True:
        params = {"after": events[-1]["seq"] if events else 0, "limit": 1000}
        page = (await client.get(f"/threads/{thread_id}/events", params=params)).raise_for_status().json()
        events += page["data"]
        if not page["has_more"]:
            return events


async def stored_messages(client: httpx.AsyncClient, thread_id: str) -> list[Stored]:
    """Every message of the thread, oldest first (read page by page)."""
    stored: list[Stored] = []
    after: str | None = None
    while True:
        params: dict[str, Any] = {"order": "asc", "limit": 100, **({"after": after} if after else {})}
        page = (await client.get(f"/threads/{thread_id}/messages", params=params)).raise_for_status().json()
        for message in page["data"]:
            text = message["content"][0]["text"]["value"]
            stored.append(Stored(message["id"], text, message["metadata"]["actor"]))
        if not page["has_more"]:
            return stored
        after = page["data"][-1]["id"]


# --------------------------------------------------------------------------------- the scenario


async def run_load(base_url: str, shape: LoadShape, drain_timeout: float = 120) -> LoadResult:
    """Run the scenario against a server whose admin key is `ADMIN_KEY` and return what happened."""
    limits = httpx.Limits(max_connections=shape.writers + 4, max_keepalive_connections=shape.writers + 4)
    admin_headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=base_url + "/v1", headers=admin_headers, timeout=120, limits=limits) as http:

        async def key_for(actor: str) -> str:
            return (await http.post("/keys", json={"actor": actor})).raise_for_status().json()["key"]

        writer_keys = [await key_for(f"writer-{w:03d}.load") for w in range(shape.writers)]
        reader_keys = [await key_for(f"reader-{r:02d}.load") for r in range(shape.subscribers)]
        actors = [{"id": f"writer-{w:03d}.load"} for w in range(shape.writers)]
        actors += [{"id": f"reader-{r:02d}.load"} for r in range(shape.subscribers)]
        owner = {"Authorization": f"Bearer {await key_for('owner.load')}"}
        thread = await http.post("/threads", json={"actors": actors}, headers=owner)
        thread_id = thread.raise_for_status().json()["id"]

        subscribers = [Subscriber(f"reader-{r:02d}", "ws" if r % 2 == 0 else "sse") for r in range(shape.subscribers)]
        follow = {"ws": _follow_ws, "sse": _follow_sse}
        tasks = [
            asyncio.create_task(follow[s.transport](base_url, key, thread_id, s))
            for s, key in zip(subscribers, reader_keys, strict=True)
        ]
        try:
            # every subscriber has replayed the thread's creation (seq 1) before the first write
            await _until(lambda: all(s.last_seq >= 1 for s in subscribers), tasks, timeout=60)
            batches = await asyncio.gather(
                *(_write(http, thread_id, key, w, shape.messages) for w, key in enumerate(writer_keys))
            )
            last_seq = (await event_log(http, thread_id))[-1]["seq"]
            await _until(lambda: all(s.last_seq >= last_seq for s in subscribers), tasks, timeout=drain_timeout)
            drained_ns = time.perf_counter_ns()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        stored = await stored_messages(http, thread_id)
        event_order = [e["data"]["id"] for e in await event_log(http, thread_id) if e["type"] == MESSAGE_CREATED]
    posts = [p for batch in batches for p in batch]
    return LoadResult(shape, posts, subscribers, stored, event_order, drained_ns)


async def _until(done: Callable[[], bool], tasks: list[asyncio.Task[None]], timeout: float) -> None:
    """Wait until `done()`; a subscriber task that failed, or the timeout, raises."""
    deadline = time.monotonic() + timeout
    while not done():
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise TimeoutError(f"subscribers did not catch up within {timeout:g}s")
        await asyncio.sleep(0.05)


def start_load_server(store_url: str, log: Path) -> ServerProcess:
    """`aitp serve` on `store_url` set up for the scenario (known admin key, no rate limit)."""
    return start_server(store_url, log, SERVER_ENV)
