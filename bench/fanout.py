"""Live fan-out on one server instance: WebSocket delivery latency to N subscribers of one thread, against
one subscriber measured in the same run, and server memory per idle WebSocket connection.

A real `aitp serve` process (fresh SQLite file in a temp dir, or a fresh database on a MongoDB URL) and this
client process. N subscribers connect (in batches) with `after=<current seq>`, so they only get live events;
then M messages are posted one at a time, each carrying its client-side send time (`perf_counter_ns`: the
same process posts and receives), and message k+1 is posted only once every subscriber got message k.
A delivery's latency is its receive time minus its message's post start. Server RSS is read from
/proc/<pid>/status before the N subscribers open and once they are open and idle.

Run: python bench/fanout.py [--subscribers 1000] [--messages 50] [--store sqlite|mongodb://...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import websockets
from harness import (
    ADMIN,
    BenchError,
    Sampler,
    cpu_seconds,
    print_profile,
    raise_fd_limit,
    rss_kib,
    stage,
    start_aitp,
    store_for,
    write_result,
)

from aitp.testing import ServerProcess

RESULTS = Path(__file__).parent / "results" / "fanout.json"


def start_server(store_url: str, log: Path, timeout: float) -> ServerProcess:
    """`aitp serve` on a free port, up within `timeout` seconds (per-key limits off: one key subscribes N times)."""
    return start_aitp(store_url, log, timeout)


async def settled_rss(pid: int | str, settle: float, samples: int = 5) -> int:
    """The smallest of a few RSS samples taken after `settle` seconds of quiet."""
    await asyncio.sleep(settle)
    values = []
    for _ in range(samples):
        values.append(rss_kib(pid))
        await asyncio.sleep(0.2)
    return min(values)


# --------------------------------------------------------------------------------- the client


@dataclass
class Round:
    """One measured round: `subscribers` sockets, `messages` posts, every delivery's latency."""

    subscribers: int
    messages: int
    latencies_ns: list[list[int]] = field(default_factory=list)  # per message, in arrival order
    post_ns: list[int] = field(default_factory=list)  # HTTP round trip of each POST
    failure: BaseException | None = None
    closing: bool = False

    def __post_init__(self) -> None:
        self.latencies_ns = [[] for _ in range(self.messages)]
        self.done = [asyncio.Event() for _ in range(self.messages)]

    def deliver(self, k: int, latency_ns: int) -> None:
        got = self.latencies_ns[k]
        got.append(latency_ns)
        if len(got) == self.subscribers:
            self.done[k].set()

    def fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        for event in self.done:
            event.set()


async def listen(ws: Any, run: Round, index: int) -> None:
    """Record each message event's latency as it arrives; any end before the round closes is a failure."""
    try:
        async for raw in ws:
            received = time.perf_counter_ns()
            frame = orjson.loads(raw)
            if frame.get("type") != "thread.message.created":
                continue
            _, k, sent = frame["data"]["content"][0]["text"]["value"].split()
            run.deliver(int(k), received - int(sent))
        if not run.closing:
            run.fail(BenchError(f"subscriber {index} was closed by the server: {ws.close_code} {ws.close_reason}"))
    except websockets.ConnectionClosed as closed:
        if not run.closing:
            run.fail(BenchError(f"subscriber {index} lost its connection: {closed}"))
    except Exception as error:  # noqa: BLE001 - reported by the main task
        run.fail(error)


@dataclass
class Bench:
    server: ServerProcess
    http: httpx.AsyncClient
    thread_id: str
    key: str  # the subscribers' key (a member, not the admin)
    args: argparse.Namespace

    async def current_seq(self) -> int:
        """The thread's last event seq (what a live-only subscriber connects after)."""
        after = 0
        while True:
            response = await self.http.get(f"/threads/{self.thread_id}/events", params={"after": after, "limit": 1000})
            response.raise_for_status()
            page = response.json()
            after = page["last_seq"]
            if not page["has_more"]:
                return after

    async def connect(self, run: Round) -> tuple[list[Any], list[asyncio.Task[None]]]:
        """Open the round's subscribers in batches, all after the current seq."""
        after = await self.current_seq()
        url = (
            self.server.base_url.replace("http://", "ws://")
            + f"/v1/threads/{self.thread_id}/events/ws?"
            + str(httpx.QueryParams({"after": after, "token": self.key}))
        )
        compression = "deflate" if self.args.compression == "deflate" else None
        sockets: list[Any] = []
        tasks: list[asyncio.Task[None]] = []
        for start in range(0, run.subscribers, self.args.batch):
            size = min(self.args.batch, run.subscribers - start)
            batch = await asyncio.gather(
                *(
                    websockets.connect(url, ping_interval=None, compression=compression, open_timeout=30)
                    for _ in range(size)
                )
            )
            for ws in batch:
                tasks.append(asyncio.create_task(listen(ws, run, len(sockets))))
                sockets.append(ws)
        return sockets, tasks

    async def deliver(self, run: Round) -> None:
        """Post the round's messages one at a time, each once every subscriber got the previous one."""
        for k in range(run.messages):
            sent = time.perf_counter_ns()
            response = await self.http.post(
                f"/threads/{self.thread_id}/messages", json={"content": f"fanout {k} {sent}"}
            )
            run.post_ns.append(time.perf_counter_ns() - sent)
            if response.status_code != 200:
                raise BenchError(f"POST message {k} answered {response.status_code}: {response.text[:300]}")
            await stage(
                f"deliver message {k} to {run.subscribers} subscribers", run.done[k].wait(), self.args.message_timeout
            )
            if run.failure is not None:
                raise BenchError(f"during message {k}: {run.failure}")

    async def close(self, run: Round, sockets: list[Any], tasks: list[asyncio.Task[None]]) -> None:
        run.closing = True
        for start in range(0, len(sockets), self.args.batch):
            await asyncio.gather(*(ws.close() for ws in sockets[start : start + self.args.batch]))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def round(self, subscribers: int, messages: int, label: str) -> tuple[Round, dict[str, Any]]:
        """Connect, (measure memory when it is the main round), deliver, close."""
        run = Round(subscribers, messages)
        timeout = self.args.stage_timeout
        extra: dict[str, Any] = {}
        pid = self.server.process.pid
        if label == "main":
            extra["server_rss_before_kib"] = await settled_rss(pid, self.args.settle)
            extra["client_rss_before_kib"] = rss_kib("self")
        started = time.perf_counter()
        sockets, tasks = await stage(f"connect {subscribers} subscribers ({label})", self.connect(run), timeout)
        extra["connect_s"] = time.perf_counter() - started
        try:
            if label == "main":
                extra["server_rss_after_kib"] = await settled_rss(pid, self.args.settle)
                extra["client_rss_after_kib"] = rss_kib("self")
            if run.failure is not None:
                raise BenchError(f"while idle: {run.failure}")
            server_cpu, client_cpu, wall = cpu_seconds(pid), time.process_time(), time.perf_counter()
            with contextlib.ExitStack() as profiling:
                if label == "main" and self.args.profile:
                    sampler = profiling.enter_context(Sampler(pid, RESULTS.parent / "fanout-profile.txt"))
                    await asyncio.sleep(0.5)  # py-spy attaches
                await stage(f"deliver {messages} messages ({label})", self.deliver(run), timeout + messages * 2)
            if label == "main" and self.args.profile:
                extra["profile"] = sampler.summary
            extra["deliver_wall_s"] = time.perf_counter() - wall
            extra["server_cpu_s"] = cpu_seconds(pid) - server_cpu
            extra["client_cpu_s"] = time.process_time() - client_cpu
        finally:
            await stage(f"close {subscribers} subscribers ({label})", self.close(run, sockets, tasks), timeout)
        return run, extra


# --------------------------------------------------------------------------------- figures


def percentile(ordered: list[int], q: float) -> int:
    """Nearest-rank percentile of a sorted list."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def latency_figures(run: Round, extra: dict[str, Any]) -> dict[str, Any]:
    every = sorted(ns for per_message in run.latencies_ns for ns in per_message)
    firsts = sorted(min(m) for m in run.latencies_ns)
    lasts = sorted(max(m) for m in run.latencies_ns)
    spans = sorted(max(m) - min(m) for m in run.latencies_ns)
    posts = sorted(run.post_ns)
    deliveries = len(every)
    ms = 1e-6
    return {
        "subscribers": run.subscribers,
        "messages": run.messages,
        "deliveries": deliveries,
        "p50_ms": percentile(every, 0.50) * ms,
        "p90_ms": percentile(every, 0.90) * ms,
        "p99_ms": percentile(every, 0.99) * ms,
        "max_ms": every[-1] * ms,
        "mean_ms": sum(every) / deliveries * ms,
        "first_delivery_p50_ms": percentile(firsts, 0.5) * ms,
        "last_delivery_p50_ms": percentile(lasts, 0.5) * ms,
        "span_p50_ms": percentile(spans, 0.5) * ms,
        "post_roundtrip_p50_ms": percentile(posts, 0.5) * ms,
        "post_roundtrip_max_ms": posts[-1] * ms,
        "connect_s": extra["connect_s"],
        "deliver_wall_s": extra["deliver_wall_s"],
        "server_cpu_s": extra["server_cpu_s"],
        "client_cpu_s": extra["client_cpu_s"],
        "per_message_ms": [  # in posting order: first, median and last delivery
            [round(sorted(m)[0] * ms, 3), round(sorted(m)[len(m) // 2] * ms, 3), round(max(m) * ms, 3)]
            for m in run.latencies_ns
        ],
        "post_roundtrip_ms": [round(ns * ms, 3) for ns in run.post_ns],
        "server_cpu_us_per_delivery": extra["server_cpu_s"] / deliveries * 1e6,
        "client_cpu_us_per_delivery": extra["client_cpu_s"] / deliveries * 1e6,
    }


def memory_figures(extra: dict[str, Any], subscribers: int) -> dict[str, Any]:
    server = extra["server_rss_after_kib"] - extra["server_rss_before_kib"]
    client = extra["client_rss_after_kib"] - extra["client_rss_before_kib"]
    return {
        "server_rss_before_kib": extra["server_rss_before_kib"],
        "server_rss_after_kib": extra["server_rss_after_kib"],
        "server_kib_per_connection": server / subscribers,
        "client_rss_delta_kib": client,
        "client_kib_per_connection": client / subscribers,
    }


def print_table(result: dict[str, Any]) -> None:
    p, base, main, mem = result["parameters"], result["baseline"], result["fanout"], result["memory"]
    n = p["subscribers"]
    print(
        f"fan-out on one server: {n} subscribers x {p['messages']} messages; store {p['store']}, "
        f"compression {p['compression']}, client loop {p['client_loop']}, {result['machine']['cpu_count']} cpus"
    )
    print(f"{'delivery latency (ms)':24}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}{'span p50':>10}{'POST p50':>10}")
    for name, f in ((f"{1} subscriber", base), (f"{n} subscribers", main)):
        print(
            f"  {name:22}{f['p50_ms']:9.2f}{f['p90_ms']:9.2f}{f['p99_ms']:9.2f}{f['max_ms']:9.2f}"
            f"{f['span_p50_ms']:10.2f}{f['post_roundtrip_p50_ms']:10.2f}"
        )
    r = result["ratios"]
    print(f"ratio p50({n})/p50(1) {r['p50']:.1f}   p99({n})/p99(1) {r['p99']:.1f}")
    print(
        f"per delivery ({n} subs): server CPU {main['server_cpu_us_per_delivery']:.1f} µs, "
        f"client CPU {main['client_cpu_us_per_delivery']:.1f} µs; "
        f"connect {n} took {main['connect_s']:.2f} s"
    )
    if result.get("profile"):
        print_profile("server profile while delivering", result["profile"])
    print(
        f"server RSS {mem['server_rss_before_kib'] / 1024:.1f} -> {mem['server_rss_after_kib'] / 1024:.1f} MiB: "
        f"{mem['server_kib_per_connection']:.1f} KiB per idle connection; "
        f"client RSS delta {mem['client_rss_delta_kib'] / 1024:.1f} MiB "
        f"({mem['client_kib_per_connection']:.1f} KiB each)"
    )


# --------------------------------------------------------------------------------- main


async def setup(server: ServerProcess) -> tuple[httpx.AsyncClient, str, str]:
    """A poster (the thread's creator), a subscriber key (a member), and the thread."""
    async with httpx.AsyncClient(
        base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    ) as admin:
        keys = {}
        for actor in ("poster", "listener"):
            response = await admin.post("/keys", json={"actor": actor})
            response.raise_for_status()
            keys[actor] = response.json()["key"]
    http = httpx.AsyncClient(
        base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {keys['poster']}"}, timeout=30
    )
    response = await http.post("/threads", json={"actors": [{"id": "poster"}, {"id": "listener"}]})
    response.raise_for_status()
    return http, response.json()["id"], keys["listener"]


async def run(args: argparse.Namespace, server: ServerProcess) -> dict[str, Any]:
    http, thread_id, key = await stage("create keys and thread", setup(server), args.stage_timeout)
    try:
        bench = Bench(server, http, thread_id, key, args)
        await bench.round(1, 3, "warm-up")
        baseline, baseline_extra = await bench.round(1, args.messages, "baseline")
        main, main_extra = await bench.round(args.subscribers, args.messages, "main")
    finally:
        await http.aclose()
    base, fan = latency_figures(baseline, baseline_extra), latency_figures(main, main_extra)
    return {
        "baseline": base,
        "fanout": fan,
        "ratios": {"p50": fan["p50_ms"] / base["p50_ms"], "p99": fan["p99_ms"] / base["p99_ms"]},
        "memory": memory_figures(main_extra, args.subscribers),
        "profile": main_extra.get("profile", {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--store", default="sqlite", help="'sqlite' (a fresh file) or a mongodb:// URL")
    parser.add_argument("--batch", type=int, default=100, help="connections opened at once")
    parser.add_argument(
        "--compression", choices=["deflate", "none"], default="deflate", help="offer permessage-deflate (the default)"
    )
    parser.add_argument("--settle", type=float, default=2.0, help="seconds of quiet before reading RSS")
    parser.add_argument("--stage-timeout", type=float, default=120.0)
    parser.add_argument("--message-timeout", type=float, default=30.0, help="per message, for every delivery")
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop", help="the client's event loop")
    parser.add_argument("--profile", action="store_true", help="sample the server with py-spy while it delivers")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    runner: Any = asyncio.run
    loop = args.loop
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            loop = "asyncio"
        else:
            runner = uvloop.run
    started = time.perf_counter()
    try:
        old_soft, soft = raise_fd_limit(args.subscribers + 512)  # before spawning: the server inherits it
        with (
            tempfile.TemporaryDirectory(prefix="aitp-fanout-") as tmp,
            store_for(args.store, Path(tmp), "fanout") as store_url,
        ):
            server = start_server(store_url, Path(tmp) / "serve.log", args.stage_timeout)
            try:
                figures = runner(run(args, server))
            except BenchError as error:
                raise BenchError(f"{error}\n--- server log (tail) ---\n{server.output()[-3000:]}") from None
            finally:
                server.stop()
    except BenchError as error:
        sys.exit(f"fanout: {error}")
    result = {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "parameters": {
            "subscribers": args.subscribers,
            "messages": args.messages,
            "store": "sqlite" if args.store == "sqlite" else "mongodb",
            "batch": args.batch,
            "compression": args.compression,
            "client_loop": loop,
            "settle_s": args.settle,
            "rlimit_nofile": {"was": old_soft, "now": soft},
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "websockets": websockets.__version__,
        },
        **figures,
        "total_s": time.perf_counter() - started,
    }
    print_table(result)
    print(f"total {result['total_s']:.1f} s")
    write_result(result, args.out)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
