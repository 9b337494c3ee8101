"""What connected actors cost a message that is not theirs: POST a text message under wrk to a thread of two
actors, with and without `--idle` inbox WebSockets open (each of another actor, in none of the threads
written to), on one `aitp serve` (embedded SQLite, durable); rounds interleaved.

A web UI keeps its actor's inbox WebSocket open: a shop's customers are that many idle inbox streams. Every
inbox stream used to read the store at every event anywhere (1,000 of them: ingest 17x slower); an event now
wakes the inboxes of its thread's members only. The figure: requests/s and server CPU per request, with and
without the idle streams; the ratio is with over without (per round, then the median; target >= 0.75).

Run: python bench/idle_inboxes.py [--idle 1000] [--rounds 3] [--duration 4] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx
import websockets
from harness import (
    RESULTS,
    BenchError,
    admin_client,
    create_key,
    load_average,
    run_main,
    running,
    start_aitp,
    write_result,
)
from ingest import Target, bodies, wrk_arguments

from aitp.testing import ServerProcess

TARGET = 0.75


class IdleInboxes:
    """Inbox WebSockets of actors in no thread written to, held open by an event loop in a thread here."""

    def __init__(self, server: ServerProcess, keys: list[str]) -> None:
        self.server, self.keys = server, keys
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="idle-inboxes", daemon=True)
        self.thread.start()
        self.sockets: list[Any] = []

    def _run(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=300)

    def open(self) -> None:
        self._run(self._open())

    def close(self) -> None:
        self._run(self._close())

    def stop(self) -> None:
        self.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _open(self) -> None:
        base = self.server.base_url
        async with httpx.AsyncClient(base_url=base + "/v1") as client:
            for key in self.keys:
                answer = await client.post("/tickets", headers={"Authorization": f"Bearer {key}"})
                if answer.status_code != 200:
                    raise BenchError(f"POST /tickets answered {answer.status_code}: {answer.text[:300]}")
                url = f"{base.replace('http', 'ws', 1)}/v1/actors/me/events/ws?ticket={answer.json()['ticket']}"
                self.sockets.append(await websockets.connect(url, max_queue=None))
        await asyncio.sleep(0.5)  # each stream has read its (empty) inbox and waits

    async def _close(self) -> None:
        sockets, self.sockets = self.sockets, []
        await asyncio.gather(*(socket.close() for socket in sockets), return_exceptions=True)
        await asyncio.sleep(0.5)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        body = bodies(Path(tmp))["text"]
        with running(start_aitp(f"sqlite:///{Path(tmp) / 'idle.db'}", Path(tmp) / "serve.log")) as server:
            with admin_client(server) as admin:
                shop, user = create_key(admin, "shop"), create_key(admin, "user")
                idle = [create_key(admin, f"customer-{i}") for i in range(args.idle)]
            with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {user}"}) as c:
                created = c.post("/threads", json={"actors": [{"id": "shop"}]})
                if created.status_code != 200:
                    raise BenchError(f"POST /threads answered {created.status_code}: {created.text[:300]}")
            target = Target(server, {"text": f"{server.base_url}/v1/threads/{created.json()['id']}/messages"}, shop)
            inboxes = IdleInboxes(server, idle)
            rounds = []
            try:
                for _ in range(args.rounds):
                    without = target.measure("text", body, args)
                    inboxes.open()
                    with_idle = target.measure("text", body, args)
                    inboxes.close()
                    rounds.append({"without": without, "with": with_idle})
            finally:
                inboxes.stop()

    def median(key: str, figure: str) -> float:
        return statistics.median(r[key][figure] for r in rounds)

    ratios = [r["with"]["rps"] / r["without"]["rps"] for r in rounds]
    return {
        "idle": args.idle,
        "load_average": load_average(),
        "without": {"rps": median("without", "rps"), "cpu_us": median("without", "server_cpu_us_per_request")},
        "with": {"rps": median("with", "rps"), "cpu_us": median("with", "server_cpu_us_per_request")},
        "ratio": statistics.median(ratios),
        "met": statistics.median(ratios) >= TARGET,
        "rounds": [round(x, 3) for x in ratios],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--idle", type=int, default=1000)
    wrk_arguments(parser, connections=16)
    parser.add_argument("--out", type=Path, default=RESULTS / "idle_inboxes.json")
    args = parser.parse_args(argv)
    result = measure(args)
    print(f"POST a message with {args.idle} idle inbox WebSockets open (load {result['load_average']})")
    for name in ("without", "with"):
        figures = result[name]
        print(f"  {name:>7}: {figures['rps']:8.0f} req/s, server CPU {figures['cpu_us']:.0f} µs/request")
    verdict = "met" if result["met"] else "MISSED"
    print(f"  ratio with / without: {result['ratio']:.2f} (target >= {TARGET}: {verdict}) rounds {result['rounds']}")
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "idle_inboxes")
