"""Webhook soak: constant load for a while, and whether the server's CPU per request stays flat (issue 28, item 9).

A real `aitp serve` process (fresh SQLite file, or a fresh database on a MongoDB URL) and this process, which
posts messages at a constant `--rate` into `--threads` threads of one actor whose `--endpoints` webhooks all
point at a local receiver (uvicorn on 127.0.0.1, admitted by AITP_WEBHOOK_ALLOW), so every message is
delivered `--endpoints` times and the delivered ones pile up in the store as history. One clock times both
ends: a message carries its post start (`perf_counter_ns`), and its delivery lag is its arrival minus that.

Per minute: the server's CPU seconds (user + system, /proc) per request answered (ms), deliveries made, and
the delivery lag (p50 / p99). A delivery's cost that grew with the history (the claim and next-due queries
of issue 28 searched every delivery the endpoint ever had) shows as CPU per request climbing minute by minute
and the lag growing; flat, the ratio of the last minute's CPU per request to the second minute's (the first
holds the warm-up) stays near 1.

Run: python bench/webhook_soak.py [--duration 180] [--rate 150] [--threads 50] [--endpoints 2] [--store sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from harness import ADMIN, RESULTS, BenchError, cpu_seconds, machine_info, run_main, start_aitp, store_for
from harness import write_result as save

from aitp import testing

OUT = RESULTS / "webhook_soak.json"
MESSAGE = "thread.message.created"
POSTERS = 16  # concurrent posting clients: the rate is kept however long one POST takes


class Receiver:
    """Records each delivery's arrival and lag (arrival minus the post start the message carries)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, int]] = []  # (monotonic arrival, lag ns)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        arrived = time.perf_counter_ns()
        sent = int(orjson.loads(body)["data"]["content"][0]["text"]["value"].split()[-1])
        self.arrivals.append((time.monotonic(), arrived - sent))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


class Soak:
    def __init__(self, server: testing.ServerProcess, receiver: Receiver, hooks: str, args: argparse.Namespace):
        self.server = server
        self.receiver = receiver
        self.hooks = hooks
        self.args = args
        self.http = httpx.AsyncClient(
            base_url=server.base_url + "/v1",
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=60,
            limits=httpx.Limits(max_connections=POSTERS),
        )
        self.answered: list[float] = []  # monotonic time of each answered POST
        self.errors = 0

    async def setup(self) -> tuple[dict[str, str], list[str]]:
        response = await self.http.post("/keys", json={"actor": "soak"})
        response.raise_for_status()
        headers = {"Authorization": f"Bearer {response.json()['key']}"}
        threads = []
        for _ in range(self.args.threads):
            made = await self.http.post("/threads", json={"actors": [{"id": "soak"}]}, headers=headers)
            made.raise_for_status()
            threads.append(made.json()["id"])
        for n in range(self.args.endpoints):
            body = {"url": f"{self.hooks}/e{n}", "event_types": [MESSAGE]}
            hook = await self.http.post("/webhooks", json=body, headers=headers)
            if hook.status_code != 200:
                raise BenchError(f"POST /webhooks answered {hook.status_code}: {hook.text[:300]}")
        return headers, threads

    async def post_at_rate(self, headers: dict[str, str], threads: list[str], until: float) -> None:
        """POSTERS clients, each keeping 1/POSTERS of the rate on its own schedule (not after the previous
        answer: a slower server falls behind the schedule, it does not slow the load)."""
        interval = POSTERS / self.args.rate

        async def poster(index: int) -> None:
            due, n = time.monotonic() + index * interval / POSTERS, index
            while due < until:
                await asyncio.sleep(max(due - time.monotonic(), 0.0))
                thread_id = threads[n % len(threads)]
                response = await self.http.post(
                    f"/threads/{thread_id}/messages",
                    json={"content": f"soak {n} {time.perf_counter_ns()}"},
                    headers=headers,
                )
                if response.status_code == 200:
                    self.answered.append(time.monotonic())
                else:
                    self.errors += 1
                due, n = due + interval, n + POSTERS

        await asyncio.gather(*(poster(i) for i in range(POSTERS)))

    async def sample(self, started: float, until: float, minutes: list[dict[str, Any]]) -> None:
        """Every minute: CPU per request, deliveries and lag of the minute just ended."""
        pid = self.server.process.pid
        cpu_before, answered_before, arrived_before = cpu_seconds(pid), 0, 0
        minute = 1
        while started + minute * 60 <= until + 1e-6:
            await asyncio.sleep(max(started + minute * 60 - time.monotonic(), 0.0))
            cpu = cpu_seconds(pid)
            answered, arrivals = len(self.answered), list(self.receiver.arrivals)
            requests = answered - answered_before
            lags_ms = [lag / 1e6 for _, lag in arrivals[arrived_before:]]
            row = {
                "minute": minute,
                "requests": requests,
                "deliveries": len(arrivals) - arrived_before,
                "cpu_s": cpu - cpu_before,
                "cpu_ms_per_request": (cpu - cpu_before) * 1000 / requests if requests else float("nan"),
                "lag_p50_ms": statistics.median(lags_ms) if lags_ms else float("nan"),
                "lag_p99_ms": percentile(lags_ms, 0.99),
                "delivered_total": len(arrivals),
            }
            minutes.append(row)
            print(
                f"minute {minute}: {requests} requests, {row['deliveries']} deliveries, CPU {row['cpu_s']:.1f} s"
                f" ({row['cpu_s'] / 60:.0%} of a core), {row['cpu_ms_per_request']:.2f} ms CPU/request,"
                f" lag p50 {row['lag_p50_ms']:.1f} ms p99 {row['lag_p99_ms']:.1f} ms",
                flush=True,
            )
            cpu_before, answered_before, arrived_before = cpu, answered, len(arrivals)
            minute += 1

    async def run(self) -> dict[str, Any]:
        headers, threads = await self.setup()
        started = time.monotonic()
        until = started + self.args.duration
        minutes: list[dict[str, Any]] = []
        await asyncio.gather(self.post_at_rate(headers, threads, until), self.sample(started, until, minutes))
        expected = len(self.answered) * self.args.endpoints
        deadline = time.monotonic() + 60
        while len(self.receiver.arrivals) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if len(minutes) < 2:
            raise BenchError("run at least 2 minutes (--duration 120): the ratio compares the last to the second")
        ratio = minutes[-1]["cpu_ms_per_request"] / minutes[1]["cpu_ms_per_request"]
        return {
            "minutes": minutes,
            "cpu_per_request_last_over_second": ratio,
            "posted": len(self.answered),
            "post_errors": self.errors,
            "delivered": len(self.receiver.arrivals),
            "expected_deliveries": expected,
        }


async def measure(args: argparse.Namespace, store_url: str, tmp: Path) -> dict[str, Any]:
    receiver, port = Receiver(), testing.free_port()
    config = uvicorn.Config(
        receiver, host="127.0.0.1", port=port, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    aitp = start_aitp(store_url, tmp / "serve.log", env={"AITP_WEBHOOK_ALLOW": f"http://127.0.0.1:{port}/"})
    soak = Soak(aitp, receiver, f"http://127.0.0.1:{port}", args)
    try:
        return await soak.run()
    finally:
        await soak.http.aclose()
        aitp.stop()
        server.should_exit = True
        await serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of constant load (at least 120)")
    parser.add_argument("--rate", type=float, default=150.0, help="messages posted per second")
    parser.add_argument("--threads", type=int, default=50, help="threads the messages go to, in turn")
    parser.add_argument("--endpoints", type=int, default=2, help="webhooks of the actor: deliveries per message")
    parser.add_argument("--store", default="sqlite", help="'sqlite' (a fresh file) or a mongodb:// URL")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aitp-soak-") as tmp, store_for(args.store, Path(tmp), "soak") as url:
        figures = asyncio.run(measure(args, url, Path(tmp)))
    result = {
        "parameters": {k: v for k, v in vars(args).items() if k != "out"} | {"out": str(args.out)},
        "machine": machine_info(),
        **figures,
    }
    save(result, args.out)
    print(
        f"CPU per request, last minute / second minute: {figures['cpu_per_request_last_over_second']:.2f}"
        f"  ({figures['posted']} posted, {figures['post_errors']} refused;"
        f" {figures['delivered']} of {figures['expected_deliveries']} deliveries made)"
    )


if __name__ == "__main__":
    run_main(main, "webhook_soak")
