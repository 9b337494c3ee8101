"""Memory that live streams take and give back (issue 14, item 7): the server's resident memory (RSS) before,
at peak and after, for rounds of SSE subscribers of large events and for replays of a large thread.

A real `aitp serve` (fresh SQLite file in a temp dir) per scenario, and this client:

- subscribers: `--rounds` rounds; in each, `--subscribers` SSE subscribers follow a new thread while
  `--messages` messages of `--size` bytes are posted, then leave once they have them all;
- replays: a thread of `--thread-messages` such messages is written, then replayed over SSE `--replays`
  times in turn, each stream closed once it has read the whole thread.

RSS (VmRSS of /proc/<pid>/status) is sampled every 50 ms: "before" once the server is up (subscribers:
after one small warm-up round; replays: after the thread is written and replayed once), "peak" the
highest sample while the scenario runs, "after" `--settle` seconds after the last stream closed. The issue
measured 3 rounds of 8 subscribers of 1,100 x 100 KB messages (75 MB -> 7.7 GB, never back) and 20
replays of a 20 MB thread (+1.16 GB) on c81f8a1; the defaults are smaller so that the run takes about a
minute. "before" figures come from the same script run against another checkout:
`git archive c81f8a1 | tar -x -C /tmp/before` then
`PYTHONPATH=/tmp/before/src python bench/stream_memory.py --label before` (the servers inherit PYTHONPATH).

Run: python bench/stream_memory.py [--rounds 3] [--subscribers 8] [--messages 300] [--replays 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
from harness import ADMIN, RESULTS, BenchError, machine_info, rss_kib, running, stage, start_aitp

import aitp
from aitp.testing import ServerProcess

MIB = 1024  # KiB


class Peak:
    """The highest RSS of a process, sampled every `interval` seconds while the block runs."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval, self.kib = pid, interval, 0

    async def _sample(self) -> None:
        while True:
            self.kib = max(self.kib, rss_kib(self.pid))
            await asyncio.sleep(self.interval)

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[Peak]:
        task = asyncio.create_task(self._sample())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.kib = max(self.kib, rss_kib(self.pid))


@contextlib.contextmanager
def server_in(tmp: Path, name: str) -> Iterator[ServerProcess]:
    with running(start_aitp(f"sqlite:///{tmp / (name + '.db')}", tmp / f"{name}.log")) as server:
        yield server


async def client_for(server: ServerProcess) -> httpx.AsyncClient:
    """A client acting as a fresh actor key."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=admin, timeout=60) as client:
        response = await client.post("/keys", json={"actor": "alice"})
        if response.status_code != 200:
            raise BenchError(f"POST /keys answered {response.status_code}: {response.text[:300]}")
    headers = {"Authorization": f"Bearer {response.json()['key']}"}
    return httpx.AsyncClient(base_url=server.base_url + "/v1", headers=headers, timeout=120)


async def post_messages(client: httpx.AsyncClient, tid: str, count: int, text: str) -> None:
    for _ in range(count):
        response = await client.post(f"/threads/{tid}/messages", json={"content": text})
        if response.status_code != 200:
            raise BenchError(f"POST message answered {response.status_code}: {response.text[:300]}")


async def follow(client: httpx.AsyncClient, tid: str, count: int, ready: asyncio.Event | None = None) -> None:
    """Read the thread's SSE stream until `count` messages came, then close it."""
    got = 0
    headers = {"Accept": "text/event-stream"}
    async with client.stream("GET", f"/threads/{tid}/events", headers=headers) as response:
        async for line in response.aiter_lines():
            if ready is not None:
                ready.set()
            if line == "event: thread.message.created":
                got += 1
                if got == count:
                    return


async def settle(pid: int, seconds: float) -> int:
    """RSS after `seconds` of quiet (the lowest of the last few samples)."""
    await asyncio.sleep(max(0.0, seconds - 0.5))
    samples = []
    for _ in range(5):
        samples.append(rss_kib(pid))
        await asyncio.sleep(0.1)
    return min(samples)


async def a_round(client: httpx.AsyncClient, subscribers: int, messages: int, text: str) -> None:
    tid = (await client.post("/threads", json={})).json()["id"]
    ready = [asyncio.Event() for _ in range(subscribers)]
    readers = [asyncio.create_task(follow(client, tid, messages, r)) for r in ready]
    await stage("subscribers connect", asyncio.gather(*(r.wait() for r in ready)), 30)
    await post_messages(client, tid, messages, text)
    await stage("subscribers read every message", asyncio.gather(*readers), 300)


async def subscribers_case(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    text = "x" * args.size
    with server_in(tmp, "subscribers") as server:
        pid = server.process.pid
        async with await client_for(server) as client:
            await a_round(client, 2, 5, text)  # warm-up: what any first stream allocates for good
            before = await settle(pid, args.settle)
            rounds = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                async with Peak(pid).watching() as peak:
                    await a_round(client, args.subscribers, args.messages, text)
                seconds = time.perf_counter() - started
                after = await settle(pid, args.settle)
                rounds.append({"peak_mib": peak.kib / MIB, "after_mib": after / MIB, "seconds": seconds})
                print(
                    f"  round {len(rounds)}: peak {rounds[-1]['peak_mib']:.0f} MiB, "
                    f"after {rounds[-1]['after_mib']:.0f} MiB"
                )
    return {
        "before_mib": before / MIB,
        "peak_mib": max(r["peak_mib"] for r in rounds),
        "after_mib": rounds[-1]["after_mib"],
        "rounds": rounds,
        "data_mib_per_round": args.messages * args.size / (1 << 20),
        "seconds": sum(r["seconds"] for r in rounds),  # the rounds themselves, not the settling between
    }


async def replays_case(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    text = "x" * args.size
    with server_in(tmp, "replays") as server:
        pid = server.process.pid
        async with await client_for(server) as client:
            tid = (await client.post("/threads", json={})).json()["id"]
            await stage("write the thread", post_messages(client, tid, args.thread_messages, text), 300)
            await stage("warm-up replay", follow(client, tid, args.thread_messages), 120)
            before = await settle(pid, args.settle)
            started = time.perf_counter()
            async with Peak(pid).watching() as peak:
                for _ in range(args.replays):
                    await stage("replay", follow(client, tid, args.thread_messages), 120)
            seconds = time.perf_counter() - started
            after = await settle(pid, args.settle)
    return {
        "before_mib": before / MIB,
        "peak_mib": peak.kib / MIB,
        "after_mib": after / MIB,
        "thread_mib": args.thread_messages * args.size / (1 << 20),
        "seconds": seconds,
    }


def line(name: str, figures: dict[str, Any]) -> str:
    grown = figures["after_mib"] - figures["before_mib"]
    return (
        f"{name}: RSS before {figures['before_mib']:.0f} MiB, peak {figures['peak_mib']:.0f} MiB, "
        f"after {figures['after_mib']:.0f} MiB ({grown:+.0f} MiB kept) in {figures['seconds']:.1f} s"
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"label": args.label, "machine": machine_info(), "parameters": {}}
    result["parameters"] = {k: v for k, v in vars(args).items() if k not in ("out", "label")}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        print(
            f"subscribers: {args.rounds} rounds of {args.subscribers} SSE subscribers, "
            f"{args.messages} x {args.size / 1000:.0f} KB messages each"
        )
        result["subscribers"] = await subscribers_case(args, tmp)
        print(line("subscribers", result["subscribers"]))
        print(f"replays: {args.replays} SSE replays of a {args.thread_messages} x {args.size / 1000:.0f} KB thread")
        result["replays"] = await replays_case(args, tmp)
        print(line("replays", result["replays"]))
    result["loadavg_after"] = list(os.getloadavg())
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=8)
    parser.add_argument("--messages", type=int, default=300, help="per round")
    parser.add_argument("--size", type=int, default=100_000, help="bytes of text per message")
    parser.add_argument("--thread-messages", type=int, default=200, help="messages in the replayed thread")
    parser.add_argument("--replays", type=int, default=10)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after the last stream before 'after'")
    parser.add_argument("--label", default="current", help="what code this is (before / after / ...)")
    parser.add_argument("--out", type=Path, default=RESULTS / "stream_memory.json")
    args = parser.parse_args(argv)
    print(f"aitp from {Path(aitp.__file__).parent} ({args.label}); load {os.getloadavg()[0]:.2f}")
    result = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
