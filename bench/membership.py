"""Inbox write cost against thread membership: POST a text message in a thread of 2 actors and in one of 64,
on one `aitp serve` (embedded SQLite, durable), under wrk, rounds interleaved so that load from other
processes hits both alike.

Who sees an event in its inbox follows from memberships written when actors join and leave, so a message
costs the same whatever the thread's size (before, every event wrote one audience row per member). The
figure: requests/s and server CPU per request in each thread; the ratio is the 2-actor thread's over the
64-actor thread's (per round, then the median; target <= 1.2x).

Run: python bench/membership.py [--rounds 3] [--duration 4] [--connections 16] [--store sqlite|mongodb://...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS,
    BenchError,
    admin_client,
    create_key,
    load_average,
    run_main,
    running,
    start_aitp,
    store_for,
    write_result,
)
from ingest import Target, bodies, wrk_arguments

SIZES = (2, 64)


def thread_of(client: httpx.Client, size: int) -> str:
    actors = [{"id": "user"}, {"id": "shop"}, *({"id": f"member-{i}"} for i in range(size - 2))]
    response = client.post("/threads", json={"actors": actors})
    if response.status_code != 200:
        raise BenchError(f"POST /threads answered {response.status_code}: {response.text[:300]}")
    return str(response.json()["id"])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, store_for(args.store, Path(tmp), "membership") as url:
        body = bodies(Path(tmp))["text"]
        with running(start_aitp(url, Path(tmp) / "serve.log")) as server:
            with admin_client(server) as admin:
                shop, user = create_key(admin, "shop"), create_key(admin, "user")
            with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {user}"}) as c:
                urls = {size: f"{server.base_url}/v1/threads/{thread_of(c, size)}/messages" for size in SIZES}
            target = Target(server, {str(size): url for size, url in urls.items()}, shop)
            rounds = []
            for _ in range(args.rounds):
                rounds.append({str(size): target.measure(str(size), body, args) for size in SIZES})
    per_size = {
        str(size): {
            "rps": statistics.median(r[str(size)]["rps"] for r in rounds),
            "cpu_us": statistics.median(r[str(size)]["server_cpu_us_per_request"] for r in rounds),
        }
        for size in SIZES
    }
    ratios = [r["2"]["rps"] / r["64"]["rps"] for r in rounds]
    cpu_ratios = [r["64"]["server_cpu_us_per_request"] / r["2"]["server_cpu_us_per_request"] for r in rounds]
    return {
        "store": args.store,
        "load_average": load_average(),
        "sizes": per_size,
        "rps_ratio_2_over_64": statistics.median(ratios),
        "cpu_ratio_64_over_2": statistics.median(cpu_ratios),
        "rounds": [round(x, 3) for x in ratios],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    wrk_arguments(parser, connections=16)
    parser.add_argument("--store", default="sqlite")
    parser.add_argument("--out", type=Path, default=RESULTS / "membership.json")
    args = parser.parse_args(argv)
    result = measure(args)
    print(f"inbox write cost by membership ({args.store}; load {result['load_average']})")
    for size, figures in result["sizes"].items():
        print(f"  {size:>2}-actor thread: {figures['rps']:8.0f} req/s, server CPU {figures['cpu_us']:.0f} µs/request")
    ratio = result["rps_ratio_2_over_64"]
    verdict = "met" if ratio <= 1.2 else "MISSED"
    print(f"  ratio 2-actor / 64-actor req/s: {ratio:.2f} (target <= 1.2x: {verdict}) rounds {result['rounds']}")
    print(f"  server CPU per request, 64 over 2: x{result['cpu_ratio_64_over_2']:.2f}")
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "membership")
