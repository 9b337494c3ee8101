"""Webhook delivery: latency from a POST to its delivery at a local receiver, idle and under ingest load, and
deliveries per second to 100 endpoints.

A real `aitp serve` process (fresh SQLite file, or a fresh database on a MongoDB URL) and this process,
which posts the timed messages and receives (a uvicorn receiver on 127.0.0.1, admitted by
AITP_WEBHOOK_ALLOW), so one clock times both ends: a message carries its post start (`perf_counter_ns`) and
its delivery's latency is its arrival minus that (the commit, the answer and the delivery engine's wake-up,
read, sign and POST). `from_answer` is the arrival minus the time the POST's answer reached this process
(after the commit: the engine's part alone, less the answer's way back).

- idle: one endpoint; messages posted one at a time, each once the previous one arrived.
- under load: the same, while `--writers` connections post as fast as they can to another thread (whose
  events no endpoint takes: the load is the store's and the engine's, not the receiver's). `--load wrk`
  (default): wrk's connections, in their own process, as bench/ingest.py loads the server. `--load python`:
  httpx clients in this process, as before: ~1,500 msg/s of them take most of a core here, and the timed
  POST queues behind them in this process's event loop. That was the p99 this figure used to report:
  103-146 ms from the post start, 7-9 ms from the answer; the same writers in a process of their own gave
  13-30 ms (issue 15, 2 shared cores).
- throughput: `--endpoints` endpoints, one per actor, all actors in one thread; `--burst` messages posted
  at once; deliveries per second from the first post to the last delivery.

Run: python bench/webhooks.py [--messages 200] [--writers 8] [--load wrk] [--endpoints 100] [--burst 50]
  [--store sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import signal
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from harness import ADMIN, RESULTS, BenchError, load_average, machine_info, run_main, stage, start_aitp, store_for
from harness import write_result as save
from ingest import LUA, wrk_path

from aitp import testing

OUT = RESULTS / "webhooks.json"
MESSAGE = "thread.message.created"


class Receiver:
    """Records each message delivery's latency (arrival minus the post start the message carries), each
    message's first arrival and how often each delivery (webhook-id) came; refuses (503) the paths in
    `refusing` and answers after `delay` seconds."""

    def __init__(self) -> None:
        self.latencies_ns: list[int] = []
        self.arrivals_ns: list[int] = []
        self.count = 0
        self.arrived = asyncio.Event()
        self.first_arrival_ns: dict[str, int] = {}  # message text -> its first 2xx arrival
        self.times: collections.Counter[str] = collections.Counter()  # webhook-id -> requests answered 2xx
        self.first_success_ns: dict[str, int] = {}  # path -> its first 2xx
        self.refusing: set[str] = set()
        self.refused = 0
        self.delay = 0.0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        path = scope["path"]
        if path in self.refusing:
            self.refused += 1
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if self.delay:
            await asyncio.sleep(self.delay)
        arrived = time.perf_counter_ns()
        event = orjson.loads(body)
        text = event["data"]["content"][0]["text"]["value"]
        sent = int(text.split()[-1])
        self.latencies_ns.append(arrived - sent)
        self.arrivals_ns.append(arrived)
        self.first_arrival_ns.setdefault(text, arrived)
        self.first_success_ns.setdefault(path, arrived)
        self.times[dict(scope["headers"])[b"webhook-id"].decode()] += 1
        self.count += 1
        self.arrived.set()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def until(self, count: int) -> None:
        await self.until_true(lambda: self.count >= count)

    async def until_true(self, condition: Callable[[], bool]) -> None:
        while not condition():
            self.arrived.clear()
            await self.arrived.wait()


def percentiles(values_ns: list[int]) -> dict[str, float]:
    ms = sorted(v / 1e6 for v in values_ns)
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "max_ms": ms[-1],
    }


class Bench:
    def __init__(
        self,
        start: Callable[[str, int | None], testing.ServerProcess],
        receiver: Receiver,
        port: int,
        args: argparse.Namespace,
        tmp: Path,
    ) -> None:
        self.tmp = tmp
        self.start = start  # `aitp serve` on the bench's store, its log named, on a port (None: a free one)
        self.server = start("serve.log", None)
        self.base = self.server.base_url + "/v1"
        self.receiver = receiver
        self.hooks = f"http://127.0.0.1:{port}"
        self.args = args
        self.http = httpx.AsyncClient(
            base_url=self.base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60, limits=httpx.Limits()
        )

    async def key(self, actor: str) -> dict[str, str]:
        response = await self.http.post("/keys", json={"actor": actor})
        response.raise_for_status()
        return {"Authorization": f"Bearer {response.json()['key']}"}

    async def thread(self, actors: list[str], headers: dict[str, str]) -> str:
        response = await self.http.post("/threads", json={"actors": [{"id": a} for a in actors]}, headers=headers)
        response.raise_for_status()
        thread_id: str = response.json()["id"]
        return thread_id

    async def hook(self, headers: dict[str, str], path: str) -> None:
        body = {"url": f"{self.hooks}/{path}", "event_types": [MESSAGE]}
        response = await self.http.post("/webhooks", json=body, headers=headers)
        if response.status_code != 200:
            raise BenchError(f"POST /webhooks answered {response.status_code}: {response.text[:300]}")

    async def post(self, thread_id: str, headers: dict[str, str], text: str) -> None:
        response = await self.http.post(f"/threads/{thread_id}/messages", json={"content": text}, headers=headers)
        if response.status_code != 200:
            raise BenchError(f"POST message answered {response.status_code}: {response.text[:300]}")

    async def one_at_a_time(self, thread_id: str, headers: dict[str, str], messages: int) -> dict[str, Any]:
        start = len(self.receiver.latencies_ns)
        answered: list[int] = []
        for k in range(messages):
            await self.post(thread_id, headers, f"hook {k} {time.perf_counter_ns()}")
            answered.append(time.perf_counter_ns())
            await stage(f"deliver message {k}", self.receiver.until(start + k + 1), self.args.stage_timeout)
        after_answer = [a - b for a, b in zip(self.receiver.arrivals_ns[start:], answered, strict=True)]
        return percentiles(self.receiver.latencies_ns[start:]) | {"from_answer": percentiles(after_answer)}

    async def under_writers(
        self, thread_id: str, headers: dict[str, str], busy_thread: str, loader: dict[str, str]
    ) -> tuple[dict[str, Any], float]:
        """Timed messages while `--writers` clients of this process post to the busy thread."""
        stop, written = asyncio.Event(), [0]

        async def write() -> None:
            while not stop.is_set():
                await self.post(busy_thread, loader, f"load {time.perf_counter_ns()}")
                written[0] += 1

        writers = [asyncio.create_task(write()) for _ in range(self.args.writers)]
        started = time.perf_counter()
        try:
            await asyncio.sleep(0.5)
            loaded = await self.one_at_a_time(thread_id, headers, self.args.messages)
        finally:
            stop.set()
            await asyncio.gather(*writers)
        return loaded, written[0] / (time.perf_counter() - started)

    async def under_wrk(
        self, thread_id: str, headers: dict[str, str], busy_thread: str, loader: dict[str, str]
    ) -> tuple[dict[str, Any], float]:
        """Timed messages while wrk (its own process, `--writers` connections) posts to the busy thread."""
        body = self.tmp / "load.json"
        body.write_text('{"content": "load"}')
        token = loader["Authorization"].removeprefix("Bearer ")
        url = f"{self.base}/threads/{busy_thread}/messages"
        # no duration of its own: it runs until the timed messages are done (SIGINT)
        options = ["-t1", f"-c{self.args.writers}", "-d600s", "-s", str(LUA)]
        command = [wrk_path(), *options, url, "--", str(body), token, "load"]
        wrk = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            await asyncio.sleep(0.5)
            loaded = await self.one_at_a_time(thread_id, headers, self.args.messages)
        finally:
            wrk.send_signal(signal.SIGINT)  # wrk stops, then prints its figures
            out, err = await wrk.communicate()
        line = next((x for x in out.decode().splitlines() if x.startswith("WRK_JSON ")), None)
        if line is None:
            raise BenchError(f"wrk failed ({wrk.returncode}): {out.decode()[-800:]}{err.decode()[-800:]}")
        figures = orjson.loads(line.removeprefix("WRK_JSON "))
        return loaded, figures["requests"] / (figures["duration_us"] / 1e6)

    async def outage(self) -> dict[str, Any]:
        """One endpoint, `--outage-threads` threads: a message in each as its receiver goes down (503) and
        another half-way through; after `--outage` s it answers again. Catch-up: from its first success to the
        arrival of the last delivery that waited (target: within 5 s)."""
        args, receiver = self.args, self.receiver
        headers = await self.key("outage")
        threads = [await self.thread(["outage"], headers) for _ in range(args.outage_threads)]
        await self.hook(headers, "outage")
        receiver.refusing.add("/outage")
        texts: list[str] = []
        for half in range(2):
            for k, thread_id in enumerate(threads):
                texts.append(f"outage {half}-{k} {time.perf_counter_ns()}")
                await self.post(thread_id, headers, texts[-1])
            await asyncio.sleep(args.outage / 2)
        back = time.perf_counter_ns()
        receiver.refusing.discard("/outage")
        waited = receiver.until_true(lambda: all(t in receiver.first_arrival_ns for t in texts))
        await stage("deliveries after the outage", waited, args.stage_timeout)
        first = receiver.first_success_ns["/outage"]
        last = max(receiver.first_arrival_ns[t] for t in texts)
        return {
            "outage_s": args.outage,
            "threads": len(threads),
            "waiting": len(texts),
            "refused_attempts": receiver.refused,
            "first_success_after_s": (first - back) / 1e9,  # the retries' backoff: no target
            "catch_up_s": (last - first) / 1e9,
        }

    async def restart(self) -> dict[str, Any]:
        """Messages posted steadily into 10 threads, ~5 a second each (a receiver taking `--restart-delay` s to
        answer, so attempts are under way) while the server is stopped with SIGTERM and started again on its store and
        port. Delay: each answered message's first arrival minus its POST's answer (target: at most 5 s);
        duplicates: deliveries (webhook-id) received more than once."""
        args, receiver = self.args, self.receiver
        headers = await self.key("restart")
        threads = [await self.thread(["restart"], headers) for _ in range(10)]
        await self.hook(headers, "restart")
        receiver.delay = args.restart_delay
        answered: dict[str, int] = {}
        stop = asyncio.Event()

        async def poster(thread_id: str, k: int) -> None:
            n = 0
            while not stop.is_set():
                text, n = f"restart {k}-{n} {time.perf_counter_ns()}", n + 1
                try:
                    await self.post(thread_id, headers, text)
                except (httpx.HTTPError, BenchError):  # the server is stopping or starting
                    await asyncio.sleep(0.05)
                    continue
                answered[text] = time.perf_counter_ns()
                # a thread's deliveries go one at a time (in order): 5 a second stays within what one takes
                await asyncio.sleep(max(0.2 - args.restart_delay, 0.02))

        posters = [asyncio.create_task(poster(t, k)) for k, t in enumerate(threads)]
        await asyncio.sleep(2.0)
        stopping = time.perf_counter_ns()
        self.server = await asyncio.to_thread(self._restart_server)
        started = time.perf_counter_ns()
        await asyncio.sleep(2.0)
        stop.set()
        await asyncio.gather(*posters)
        delivered = receiver.until_true(lambda: all(t in receiver.first_arrival_ns for t in answered))
        await stage("deliveries after the restart", delivered, args.stage_timeout)
        receiver.delay = 0.0
        delays_ns = [receiver.first_arrival_ns[t] - at for t, at in answered.items()]
        return {
            "messages": len(answered),
            "receiver_delay_s": args.restart_delay,
            "down_s": (started - stopping) / 1e9,  # SIGTERM to the new server's first /health answer
            "delay": percentiles(delays_ns),
            "duplicates": sum(n - 1 for n in receiver.times.values()),
        }

    def _restart_server(self) -> testing.ServerProcess:
        port = self.server.port
        self.server.stop()  # SIGTERM, then waits for the process to end
        return self.start("serve-restarted.log", port)

    async def run(self) -> dict[str, Any]:
        args = self.args
        alice = await self.key("alice")
        thread_id = await self.thread(["alice"], alice)
        await self.hook(alice, "alice")
        await self.one_at_a_time(thread_id, alice, 5)  # warm-up
        idle = await self.one_at_a_time(thread_id, alice, args.messages)

        loader = await self.key("loader")
        busy_thread = await self.thread(["loader"], loader)
        if args.load == "wrk":
            loaded, load_rate = await self.under_wrk(thread_id, alice, busy_thread, loader)
        else:
            loaded, load_rate = await self.under_writers(thread_id, alice, busy_thread, loader)

        actors = [f"a{n}" for n in range(args.endpoints)]
        keys = [await self.key(actor) for actor in actors]
        wide = await self.thread(actors, keys[0])
        for n, headers in enumerate(keys):
            await self.hook(headers, f"e{n}")
        before = self.receiver.count
        expected = before + args.burst * args.endpoints
        began = time.perf_counter()
        await asyncio.gather(
            *(self.post(wide, keys[k % len(keys)], f"burst {k} {time.perf_counter_ns()}") for k in range(args.burst))
        )
        await stage(f"{args.burst * args.endpoints} deliveries", self.receiver.until(expected), args.stage_timeout)
        elapsed = time.perf_counter() - began
        burst = percentiles(self.receiver.latencies_ns[before:])
        outage = await self.outage() if args.outage else None
        restart = await self.restart()
        return {
            "idle": idle,
            "under_load": {**loaded, "load_messages_per_s": load_rate, "writers": args.writers, "load": args.load},
            "throughput": {
                "endpoints": args.endpoints,
                "deliveries": args.burst * args.endpoints,
                "seconds": elapsed,
                "deliveries_per_s": args.burst * args.endpoints / elapsed,
                "latency": burst,
            },
            "outage": outage,
            "restart": restart,
            "loadavg_after": load_average(),
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
    env = {"AITP_WEBHOOK_ALLOW": f"http://127.0.0.1:{port}/", "AITP_MAX_ACTORS": str(args.endpoints + 8)}
    bench = Bench(lambda log, at: start_aitp(store_url, tmp / log, env=env, port=at), receiver, port, args, tmp)
    try:
        return await bench.run()
    finally:
        await bench.http.aclose()
        bench.server.stop()
        server.should_exit = True
        await serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200, help="messages timed idle, and again under load")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers (connections) of the ingest load")
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--burst", type=int, default=50, help="messages posted at once to the endpoints' thread")
    parser.add_argument(
        "--load", choices=("wrk", "python"), default="wrk", help="the writers: wrk's connections, or this process's"
    )
    parser.add_argument("--outage", type=float, default=60.0, help="seconds the receiver refuses (0: no outage)")
    parser.add_argument("--outage-threads", type=int, default=20, help="threads waiting through the outage")
    parser.add_argument(
        "--restart-delay", type=float, default=0.05, help="seconds the receiver takes to answer during the restart"
    )
    parser.add_argument("--store", default="sqlite", help="'sqlite' (a fresh file) or a mongodb:// URL")
    parser.add_argument("--stage-timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aitp-webhooks-") as tmp, store_for(args.store, Path(tmp), "hooks") as url:
        figures = asyncio.run(measure(args, url, Path(tmp)))
    result = {
        "parameters": {k: v for k, v in vars(args).items() if k != "out"} | {"out": str(args.out)},
        "machine": machine_info(),
        **figures,
    }
    save(result, args.out)
    idle, loaded, wide = figures["idle"], figures["under_load"], figures["throughput"]
    print(f"webhook latency idle:       p50 {idle['p50_ms']:.1f} ms  p99 {idle['p99_ms']:.1f} ms  (n={idle['n']})")
    print(
        f"webhook latency under load: p50 {loaded['p50_ms']:.1f} ms  p99 {loaded['p99_ms']:.1f} ms"
        f"  ({loaded['load_messages_per_s']:.0f} msg/s of load from {loaded['writers']} {args.load} writers;"
        f" from the answer: p50 {loaded['from_answer']['p50_ms']:.1f} ms  p99 {loaded['from_answer']['p99_ms']:.1f} ms)"
    )
    print(
        f"deliveries to {wide['endpoints']} endpoints: {wide['deliveries_per_s']:.0f}/s"
        f"  ({wide['deliveries']} in {wide['seconds']:.1f} s; p99 {wide['latency']['p99_ms']:.0f} ms)"
    )
    outage, restart = figures["outage"], figures["restart"]
    if outage is not None:
        print(
            f"after a {outage['outage_s']:g} s outage: every waiting delivery ({outage['waiting']} in"
            f" {outage['threads']} threads) within {outage['catch_up_s']:.2f} s of the first success"
            f" ({outage['first_success_after_s']:.1f} s after the receiver came back)"
        )
    print(
        f"SIGTERM restart ({restart['down_s']:.1f} s down):"
        f" delivery delay max {restart['delay']['max_ms'] / 1000:.2f} s,"
        f" p99 {restart['delay']['p99_ms']:.0f} ms ({restart['messages']} messages); {restart['duplicates']} duplicates"
    )


if __name__ == "__main__":
    run_main(main, "webhooks")
