"""Webhook soak: ten minutes of mixed traffic at fixed offered rates, and whether the server stays flat (issue 28).

A real `aitp serve` process (fresh SQLite file, or a fresh database on a MongoDB URL) and this process, which
offers three kinds of traffic at once, each on its own fixed schedule, into `--threads` threads of one actor:

- posts: `--rate` messages a second (`POST /v1/threads/{id}/messages`, the threads in turn). The actor has
  `--endpoints` webhooks, all pointing at a local receiver (uvicorn on 127.0.0.1 in this process, admitted by
  AITP_WEBHOOK_ALLOW), so every message is delivered `--endpoints` times and the delivered ones pile up in
  the store as history;
- live followers: `--streams` WebSocket subscribers of the threads' events (`/v1/threads/{id}/events/ws`,
  the key in `Authorization`), each following one thread and churning: it closes after a random 5-30 s and
  reconnects at once with `after=` the last event it saw (every event must come exactly once, in order: a
  gap or a repeat is counted);
- reads: `--read-rate` pages a second of a thread's latest messages (`GET /v1/threads/{id}/messages?limit=20`).

Each kind runs as a few clients, each on its own schedule (not after the previous answer): a slower server
makes the clients fall behind the schedule ("behind"), it does not lower the offered load. One clock times
both ends: a message carries its post start (`perf_counter_ns`), and a delivery's (or a stream event's) lag
is its arrival minus that. Latencies are from the actual send start of a request to its answer; how late
that start was against the schedule is recorded apart.

Per minute: the server's CPU seconds (user + system, /proc) per request answered, where a request is a POST
answered 200, a read answered 200 or a WebSocket handshake accepted (webhook deliveries and stream event
frames are work those requests cause, not requests); POST latency p50 / p99 and how far posts started behind
schedule; read latency p99; streams connected (at the minute's end) and stream events received; deliveries
made (distinct: a retried delivery counts once) against those expected (messages stored that minute times
`--endpoints`) and their lag p50 / p99; and this process's own CPU, since a saturated client shows as a slow
server.

A cost that grows with the history (the claim and next-due queries of issue 28 searched every delivery the
endpoint ever had) shows as CPU per request and POST latency climbing minute by minute. The verdicts compare
the last minute with the second (the first holds the warm-up):
- CPU per request, last / second minute <= 1.10;
- POST p99, last / second minute <= 1.10;
- keeps up: every expected delivery made within 60 s after the load stops, and the last minute's delivery
  lag p99 <= 2 s.
The machines are small (2 cores) and shared: the load average is recorded with each minute.

Run: python bench/webhook_soak.py [--duration 600] [--rate 120] [--streams 50] [--read-rate 20]
     [--threads 50] [--endpoints 2] [--store sqlite]   (at least --duration 120; the ratios need 2 minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
import websockets
from harness import (
    ADMIN,
    RESULTS,
    BenchError,
    cpu_seconds,
    load_average,
    machine_info,
    run_main,
    running,
    start_aitp,
    store_for,
)
from harness import write_result as save

from aitp import testing

OUT = RESULTS / "webhook_soak.json"
MESSAGE = "thread.message.created"
POSTERS = 16  # concurrent posting clients: the rate is kept however long one POST takes
READERS = 4  # concurrent reading clients
CHURN = (5.0, 30.0)  # a stream stays connected this many seconds (uniform), then reconnects
TICK = 0.5  # seconds between looks at the streams open and this process's event loop lag
DRAIN = 60.0  # seconds after the load stops for the last deliveries to arrive
TARGET = 1.10  # last minute / second minute
LAG_TARGET_MS = 2000.0  # the last minute's delivery lag p99


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


def trend(values: list[float]) -> float:
    """The least-squares slope of `values` (one per minute) as a share of their mean per minute: a cost that
    grows shows here whatever the noise of one minute (0.0 with fewer than two values)."""
    if len(values) < 2:
        return 0.0
    xs = range(len(values))
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(values)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, values, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return slope / mean_y


def sent_at(message: dict[str, Any]) -> int:
    """The post start (`perf_counter_ns`) a soak message carries as its last word."""
    return int(message["content"][0]["text"]["value"].split()[-1])


class Receiver:
    """Records each delivery's first arrival and its lag (arrival minus the post start the message carries)."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []  # lag in ms of each distinct delivery, in order of arrival
        self.seen: set[tuple[str, str]] = set()  # (endpoint path, message text)
        self.repeats = 0  # deliveries that arrived again (a retry after a lost answer)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        arrived = time.perf_counter_ns()
        data = orjson.loads(body)["data"]
        key = (scope["path"], data["content"][0]["text"]["value"])
        if key in self.seen:
            self.repeats += 1
        else:
            self.seen.add(key)
            self.arrivals.append((arrived - sent_at(data)) / 1e6)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def on_schedule(rate: float, clients: int, until: float, act: Callable[[int, float], Awaitable[None]]) -> None:
    """`clients` tasks calling `act(n, due)`, each keeping 1/clients of `rate` on its own schedule (not after
    the previous answer: a slower server falls behind the schedule, it does not slow the load)."""
    if rate <= 0:
        return
    interval = clients / rate

    async def client(index: int) -> None:
        due, n = time.monotonic() + index * interval / clients, index
        while due < until:
            await asyncio.sleep(max(due - time.monotonic(), 0.0))
            await act(n, due)
            due, n = due + interval, n + clients

    await asyncio.gather(*(client(i) for i in range(clients)))


class Soak:
    def __init__(self, server: testing.ServerProcess, receiver: Receiver, hooks: str, args: argparse.Namespace):
        self.server = server
        self.receiver = receiver
        self.hooks = hooks
        self.args = args
        self.admin = self.client(1, ADMIN)
        self.key = ""  # the soak actor's: every post, read and stream is its
        self.headers: dict[str, str] = {}
        self.threads: list[str] = []
        # Appended as each request completes, so a minute is the slice between two samples.
        self.posts: list[tuple[float, float]] = []  # (latency ms, start behind schedule ms) of each POST answered
        self.reads: list[float] = []  # latency ms of each read answered
        self.connects = 0  # WebSocket handshakes accepted
        self.open_streams = 0
        self.stream_lags: list[float] = []  # lag ms of each message event a stream received
        self.stream_events = 0  # every event frame received
        self.errors: collections.Counter[str] = collections.Counter()
        self.first_errors: list[str] = []

    def client(self, connections: int, key: str) -> httpx.AsyncClient:
        """One connection per scheduled client, so a request never waits for another's connection."""
        return httpx.AsyncClient(
            base_url=self.server.base_url + "/v1",
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
            limits=httpx.Limits(max_connections=connections),
        )

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.first_errors) < 10:
            self.first_errors.append(f"{kind}: {detail[:300]}")

    async def setup(self) -> None:
        response = await self.admin.post("/keys", json={"actor": "soak"})
        response.raise_for_status()
        self.key = response.json()["key"]
        self.headers = {"Authorization": f"Bearer {self.key}"}
        for _ in range(self.args.threads):
            made = await self.admin.post("/threads", json={"actors": [{"id": "soak"}]}, headers=self.headers)
            made.raise_for_status()
            self.threads.append(made.json()["id"])
        for n in range(self.args.endpoints):
            body = {"url": f"{self.hooks}/e{n}", "event_types": [MESSAGE]}
            hook = await self.admin.post("/webhooks", json=body, headers=self.headers)
            if hook.status_code != 200:
                raise BenchError(f"POST /webhooks answered {hook.status_code}: {hook.text[:300]}")

    # ------------------------------------------------------------------------------ the traffic

    async def post(self, http: httpx.AsyncClient, n: int, due: float) -> None:
        start = time.monotonic()
        thread_id = self.threads[n % len(self.threads)]
        try:
            response = await http.post(
                f"/threads/{thread_id}/messages", json={"content": f"soak {n} {time.perf_counter_ns()}"}
            )
        except httpx.HTTPError as exc:
            self.error("post", repr(exc))
            return
        if response.status_code == 200:
            self.posts.append(((time.monotonic() - start) * 1000, (start - due) * 1000))
        else:
            self.error("post", f"{response.status_code} {response.text}")

    async def read(self, http: httpx.AsyncClient, n: int, due: float) -> None:
        start = time.monotonic()
        thread_id = self.threads[(n * 7) % len(self.threads)]
        try:
            response = await http.get(f"/threads/{thread_id}/messages", params={"limit": 20})
        except httpx.HTTPError as exc:
            self.error("read", repr(exc))
            return
        if response.status_code == 200:
            self.reads.append((time.monotonic() - start) * 1000)
        else:
            self.error("read", f"{response.status_code} {response.text}")

    async def follow(self, index: int, until: float) -> None:
        """One live follower of one thread: connected for a random 5-30 s at a time, each reconnect resuming
        after the last event seen."""
        thread_id = self.threads[index % len(self.threads)]
        base = self.server.base_url.replace("http://", "ws://") + f"/v1/threads/{thread_id}/events/ws"
        chance, after = random.Random(index), 0
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            hold = min(loop.time() + chance.uniform(*CHURN), until)
            try:
                async with websockets.connect(
                    f"{base}?after={after}", additional_headers=self.headers, ping_interval=None, open_timeout=30
                ) as ws:
                    self.connects += 1
                    self.open_streams += 1
                    try:
                        after = await self.listen(ws, after, hold)
                    finally:
                        self.open_streams -= 1
            except websockets.ConnectionClosed as closed:
                self.error("stream", f"closed by the server: {closed}")
            except (OSError, websockets.InvalidHandshake, TimeoutError) as exc:
                self.error("stream", f"connect: {exc!r}")
                await asyncio.sleep(1)

    async def listen(self, ws: Any, after: int, hold: float) -> int:
        """Read events until `hold` (loop time) or the server closes; the last seq seen."""
        try:
            async with asyncio.timeout_at(hold):
                async for raw in ws:
                    received = time.perf_counter_ns()
                    frame = orjson.loads(raw)
                    if "seq" not in frame:
                        continue
                    self.stream_events += 1
                    if frame["seq"] != after + 1:
                        self.error("stream order", f"after {after} came {frame['seq']}")
                    after = max(after, frame["seq"])
                    if frame["type"] == MESSAGE:
                        self.stream_lags.append((received - sent_at(frame["data"])) / 1e6)
                self.error("stream", f"closed by the server: {ws.close_code} {ws.close_reason}")
        except TimeoutError:
            pass  # held long enough: churn
        return after

    async def traffic(self, until: float) -> None:
        """All three kinds at once until `until` (time.monotonic, which is also the loop's clock)."""
        posts, reads = self.client(POSTERS, self.key), self.client(READERS, self.key)
        try:
            await asyncio.gather(
                on_schedule(self.args.rate, POSTERS, until, lambda n, due: self.post(posts, n, due)),
                on_schedule(self.args.read_rate, READERS, until, lambda n, due: self.read(reads, n, due)),
                *(self.follow(i, until) for i in range(self.args.streams)),
            )
        finally:
            await posts.aclose()
            await reads.aclose()

    # ------------------------------------------------------------------------------ the figures

    async def sample(self, started: float, until: float, minutes: list[dict[str, Any]]) -> None:
        """Every minute: the figures of the minute just ended."""
        pid, me = self.server.process.pid, os.getpid()
        before = {"cpu": cpu_seconds(pid), "client_cpu": cpu_seconds(me), "posts": 0, "reads": 0, "connects": 0}
        before |= {"arrivals": 0, "stream_lags": 0, "stream_events": 0, "errors": 0}
        minute = 1
        while started + minute * 60 <= until + 1e-6:
            ticks: list[tuple[int, float]] = []
            await self.tick_until(started + minute * 60, ticks)
            now = {
                "cpu": cpu_seconds(pid),
                "client_cpu": cpu_seconds(me),
                "posts": len(self.posts),
                "reads": len(self.reads),
                "connects": self.connects,
                "arrivals": len(self.receiver.arrivals),
                "stream_lags": len(self.stream_lags),
                "stream_events": self.stream_events,
                "errors": sum(self.errors.values()),
            }
            minutes.append(self.minute_row(minute, before, now, ticks))
            print_minute(minutes[-1])
            before, minute = now, minute + 1

    async def tick_until(self, end: float, ticks: list[tuple[int, float]]) -> None:
        """Sleep until `end`, noting every TICK s the streams open and how late the loop woke (ms)."""
        while (now := time.monotonic()) + TICK < end:
            await asyncio.sleep(TICK)
            ticks.append((self.open_streams, (time.monotonic() - now - TICK) * 1000))
        await asyncio.sleep(max(end - time.monotonic(), 0.0))

    def minute_row(
        self, minute: int, before: dict[str, Any], now: dict[str, Any], ticks: list[tuple[int, float]]
    ) -> dict[str, Any]:
        posts = self.posts[before["posts"] : now["posts"]]
        post_ms, behind_ms = [p[0] for p in posts], [p[1] for p in posts]
        reads = self.reads[before["reads"] : now["reads"]]
        lags = self.receiver.arrivals[before["arrivals"] : now["arrivals"]]
        stream_lags = self.stream_lags[before["stream_lags"] : now["stream_lags"]]
        connects = now["connects"] - before["connects"]
        requests = len(posts) + len(reads) + connects
        cpu = now["cpu"] - before["cpu"]
        return {
            "minute": minute,
            "requests": requests,
            "posts": len(posts),
            "reads": len(reads),
            "connects": connects,
            "cpu_s": cpu,
            "cpu_ms_per_request": cpu * 1000 / requests if requests else float("nan"),
            "client_cpu_s": now["client_cpu"] - before["client_cpu"],
            "client_loop_lag_max_ms": max((t[1] for t in ticks), default=float("nan")),
            "post_p50_ms": statistics.median(post_ms) if post_ms else float("nan"),
            "post_p99_ms": percentile(post_ms, 0.99),
            "post_behind_p99_ms": percentile(behind_ms, 0.99),
            "post_behind_max_ms": max(behind_ms, default=float("nan")),
            "read_p99_ms": percentile(reads, 0.99),
            "streams_connected": statistics.mean(t[0] for t in ticks) if ticks else float("nan"),
            "streams_connected_min": min((t[0] for t in ticks), default=0),
            "stream_events": now["stream_events"] - before["stream_events"],
            "stream_lag_p99_ms": percentile(stream_lags, 0.99),
            "deliveries": len(lags),
            "expected_deliveries": len(posts) * self.args.endpoints,
            "lag_p50_ms": statistics.median(lags) if lags else float("nan"),
            "lag_p99_ms": percentile(lags, 0.99),
            "errors": now["errors"] - before["errors"],
            "loadavg": load_average(),
        }

    async def drain(self) -> tuple[int, float]:
        """Wait up to DRAIN s for every expected delivery: (expected, seconds it took or DRAIN)."""
        expected, stopped = len(self.posts) * self.args.endpoints, time.monotonic()
        while len(self.receiver.arrivals) < expected and time.monotonic() < stopped + DRAIN:
            await asyncio.sleep(0.1)
        return expected, time.monotonic() - stopped

    async def run(self) -> dict[str, Any]:
        await self.setup()
        started = time.monotonic()
        until = started + self.args.duration
        minutes: list[dict[str, Any]] = []
        await asyncio.gather(self.traffic(until), self.sample(started, until, minutes))
        expected, drained_s = await self.drain()
        first, last = minutes[1], minutes[-1]
        delivered = len(self.receiver.arrivals)
        cpu = last["cpu_ms_per_request"] / first["cpu_ms_per_request"]
        post = last["post_p99_ms"] / first["post_p99_ms"]
        # this process does the same work every minute: its CPU is the machine's speed that minute (shared
        # machines slow down and speed up), a baseline measured in the same run for the server's
        relative = (last["cpu_s"] / last["client_cpu_s"]) / (first["cpu_s"] / first["client_cpu_s"])
        keeps_up = delivered >= expected and last["lag_p99_ms"] <= LAG_TARGET_MS
        return {
            "minutes": minutes,
            "cpu_per_request_last_over_second": cpu,
            "server_over_client_cpu_last_over_second": relative,
            "cpu_per_request_trend_per_minute": trend([m["cpu_ms_per_request"] for m in minutes[1:]]),
            "post_p99_last_over_second": post,
            "keeps_up": keeps_up,
            "passed": {"cpu_per_request": cpu <= TARGET, "post_p99": post <= TARGET, "keeps_up": keeps_up},
            "posted": len(self.posts),
            "read": len(self.reads),
            "connects": self.connects,
            "stream_events": self.stream_events,
            "delivered": delivered,
            "expected_deliveries": expected,
            "delivery_repeats": self.receiver.repeats,
            "drained_s": drained_s,
            "errors": dict(self.errors),
            "first_errors": self.first_errors,
        }


def print_minute(row: dict[str, Any]) -> None:
    print(
        f"minute {row['minute']}: {row['requests']} requests ({row['posts']} posts, {row['reads']} reads,"
        f" {row['connects']} connects); server CPU {row['cpu_s'] / 60:.0%} of a core,"
        f" {row['cpu_ms_per_request']:.2f} ms/request; client CPU {row['client_cpu_s'] / 60:.0%}, loop lag max"
        f" {row['client_loop_lag_max_ms']:.0f} ms; load {row['loadavg'][0]}\n"
        f"  POST p50 {row['post_p50_ms']:.1f} p99 {row['post_p99_ms']:.1f} ms, started behind schedule p99"
        f" {row['post_behind_p99_ms']:.0f} max {row['post_behind_max_ms']:.0f} ms;"
        f" read p99 {row['read_p99_ms']:.1f} ms\n"
        f"  streams {row['streams_connected']:.1f} connected (min {row['streams_connected_min']}),"
        f" {row['stream_events']} events, lag p99 {row['stream_lag_p99_ms']:.0f} ms; deliveries"
        f" {row['deliveries']}/{row['expected_deliveries']}, lag p50 {row['lag_p50_ms']:.1f} p99"
        f" {row['lag_p99_ms']:.1f} ms; {row['errors']} errors",
        flush=True,
    )


BANNER = ("aitp: store ", "aitp: API at ", "aitp: web UI at ")  # what `aitp serve` prints as it starts
ACCESS_FAILED = re.compile(r'HTTP/[\d.]+" [45]\d\d |\[rejected\]')


def serve_log_problems(server: testing.ServerProcess) -> list[str]:
    """Lines of the server's log that tell of trouble: any not at INFO level (warnings, errors, tracebacks),
    and access lines of requests refused or failed (4xx, 5xx, a WebSocket rejected)."""
    return [
        line
        for line in server.output().splitlines()
        if line.strip() and not line.startswith(BANNER) and (not line.startswith("INFO:") or ACCESS_FAILED.search(line))
    ]


async def measure(args: argparse.Namespace, store_url: str, tmp: Path) -> dict[str, Any]:
    receiver, port = Receiver(), testing.free_port()
    config = uvicorn.Config(
        receiver, host="127.0.0.1", port=port, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        env = {"AITP_WEBHOOK_ALLOW": f"http://127.0.0.1:{port}/"}
        with running(start_aitp(store_url, tmp / "serve.log", env=env)) as aitp:
            soak = Soak(aitp, receiver, f"http://127.0.0.1:{port}", args)
            try:
                figures = await soak.run()
            finally:
                await soak.admin.aclose()
        problems = serve_log_problems(aitp)  # stopped: its shutdown is in the log too
        return figures | {"serve_log_problems": len(problems), "serve_log_tail": problems[-20:]}
    finally:
        server.should_exit = True
        await serving


def verdict(name: str, ok: bool, figure: str) -> str:
    return f"{'PASS' if ok else 'FAIL'}  {name}: {figure}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load (at least 120)")
    parser.add_argument("--rate", type=float, default=120.0, help="messages posted per second")
    parser.add_argument("--streams", type=int, default=50, help="WebSocket followers, churning every 5-30 s")
    parser.add_argument("--read-rate", type=float, default=20.0, help="message pages read per second")
    parser.add_argument("--threads", type=int, default=50, help="threads the messages go to, in turn")
    parser.add_argument("--endpoints", type=int, default=2, help="webhooks of the actor: deliveries per message")
    parser.add_argument("--store", default="sqlite", help="'sqlite' (a fresh file) or a mongodb:// URL")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.duration < 120:
        parser.error("run at least 2 minutes (--duration 120): the ratios compare the last minute to the second")
    with tempfile.TemporaryDirectory(prefix="aitp-soak-") as tmp, store_for(args.store, Path(tmp), "soak") as url:
        figures = asyncio.run(measure(args, url, Path(tmp)))
    result = {
        "parameters": {k: v for k, v in vars(args).items() if k != "out"} | {"out": str(args.out)},
        "machine": machine_info(),
        **figures,
    }
    save(result, args.out)
    cpu, p99 = figures["cpu_per_request_last_over_second"], figures["post_p99_last_over_second"]
    last_lag = figures["minutes"][-1]["lag_p99_ms"]
    print(
        f"{figures['posted']} posted, {figures['read']} read, {figures['connects']} stream connects,"
        f" {figures['stream_events']} stream events; {figures['delivered']} of {figures['expected_deliveries']}"
        f" deliveries made ({figures['delivery_repeats']} repeats), waited {figures['drained_s']:.1f} s after"
        f" the load stopped for them; errors {figures['errors'] or 'none'};"
        f" {figures['serve_log_problems']} problem lines in the serve log"
    )
    for line in figures["first_errors"]:
        print(f"  {line}")
    for line in figures["serve_log_tail"]:
        print(f"  serve log: {line}")
    if len(figures["minutes"]) == 2:
        print("(2 minutes only: the last minute is the second, so both ratios are 1 by construction)")
    print(verdict("CPU per request, last minute / second minute", cpu <= TARGET, f"{cpu:.2f} (<= {TARGET})"))
    print(verdict("POST p99, last minute / second minute", p99 <= TARGET, f"{p99:.2f} (<= {TARGET})"))
    print(
        f"      context: server CPU / this process's CPU (the same work each minute), last / second minute"
        f" {figures['server_over_client_cpu_last_over_second']:.2f}; CPU per request trend from the second minute"
        f" {figures['cpu_per_request_trend_per_minute']:+.1%} a minute"
    )
    print(
        verdict(
            "deliveries keep up",
            figures["keeps_up"],
            f"{figures['delivered']} of {figures['expected_deliveries']} within {DRAIN:.0f} s of the stop,"
            f" last minute's lag p99 {last_lag:.0f} ms (<= {LAG_TARGET_MS:.0f})",
        )
    )


if __name__ == "__main__":
    run_main(main, "webhook_soak")
