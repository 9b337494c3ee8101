"""Ingest throughput: POST /v1/threads/{id}/messages on `aitp serve` (embedded SQLite store) against a
bare FastAPI JSON echo of the same bodies on the same route, under the same uvicorn options, driven by
`wrk` (not Python: a Python client saturates the cores and measures itself).

Per body (text, request_decision: products, validated and correlated; every request carries a fresh
request id) the echo and aitp once per SQLite durability mode, each `--duration` seconds, interleaved in
every round so that load from other processes hits all of them alike: `aitp` is the default
(synchronous=FULL: every commit fsyncs the WAL), `aitp_normal` the store URL's `?synchronous=normal`
(only checkpoints fsync). Figures per workload: requests/s (median over rounds), latency percentiles,
server CPU µs per request. Ratios: aitp / echo per round, then the median, for each mode; and FULL / NORMAL.

`--workers N` (N > 1) also measures `aitp serve --workers N` (synchronous=FULL, a store file of its own)
in every round, beside the one-process server: `aitp_workersN`, and the ratio of its requests/s to the
one-process server's per round. Its CPU per request counts every worker (the process tree). On a machine
of few cores the workers share them with wrk and with each other: the figure is what this machine gives.

Run: python bench/ingest.py [--rounds 3] [--duration 5] [--connections 32] [--synchronous full,normal]
     [--workers 2] [--profile]
`--profile` also samples the aitp server with py-spy during one extra run of each aitp workload and prints
where the time goes (the collapsed stacks land in bench/results/ingest-profile-*.txt).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS,
    BenchError,
    Sampler,
    admin_client,
    cpu_seconds,
    create_key,
    load_average,
    machine_info,
    print_profile,
    run_main,
    running,
    start_aitp,
    start_echo,
    write_result,
)

from aitp.capabilities.registry import default_directory
from aitp.testing import ServerProcess

BENCH = Path(__file__).resolve().parent
LUA = BENCH / "wrk" / "post.lua"
EXAMPLE = default_directory() / "aitp-02-decisions" / "1.0.0" / "examples" / "request_decision_products.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
TARGETS = {"text": 0.60, "request_decision": 0.45}
# aitp servers measured, by the SQLite store's synchronous mode: target name and store URL query
SYNCHRONOUS = {"full": ("aitp", ""), "normal": ("aitp_normal", "?synchronous=normal")}
WRK_INSTALL = "wrk is not installed: `apt-get install -y wrk` (Debian/Ubuntu package 'wrk')"


def wrk_path() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise BenchError(WRK_INSTALL)
    return path


def bodies(tmp: Path) -> dict[str, Path]:
    """The two request bodies as files for the Lua script; `__SEQ__` marks the per-request id."""
    message = json.loads(EXAMPLE.read_text())
    message["request_decision"]["id"] = "rd-__SEQ__"
    files = {
        "text": {"content": "I would like some noise-cancelling headphones, under 300 USD please."},
        "request_decision": {"content": json.dumps(message)},
    }
    paths = {}
    for name, body in files.items():
        paths[name] = tmp / f"{name}.json"
        paths[name].write_text(json.dumps(body))
    return paths


def run_wrk(
    url: str, body: Path, token: str, *, duration: float, connections: int, threads: int, headers: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One wrk run; its figures (requests, errors, latency) as wrk's Lua `done` printed them; `headers`
    ("Name: value") are sent with every request."""
    command = [
        wrk_path(),
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        url,
        "--",
        str(body),
        token,
        uuid.uuid4().hex[:8],
        *headers,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("WRK_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}")
    figures: dict[str, Any] = json.loads(line.removeprefix("WRK_JSON "))
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    failed = sum(figures["errors"].values())
    if failed > 0.001 * max(1, figures["requests"]):
        raise BenchError(f"wrk on {url}: {figures['errors']} errors in {figures['requests']} requests")
    return figures


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of a process and of its descendants still running (the workers of
    `aitp serve --workers N`)."""
    total = cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    total += tree_cpu_seconds(int(child))
    return total


class Target:
    """A server under test and what to post where."""

    def __init__(self, server: ServerProcess, urls: dict[str, str], token: str) -> None:
        self.server = server
        self.urls = urls
        self.token = token

    def measure(self, workload: str, body: Path, args: argparse.Namespace) -> dict[str, Any]:
        pid = self.server.process.pid
        cpu = tree_cpu_seconds(pid)
        figures = run_wrk(
            self.urls[workload],
            body,
            self.token,
            duration=args.duration,
            connections=args.connections,
            threads=args.threads,
        )
        figures["server_cpu_us_per_request"] = (tree_cpu_seconds(pid) - cpu) / max(1, figures["requests"]) * 1e6
        return figures


def wrk_arguments(parser: argparse.ArgumentParser, *, duration: float = 4.0, connections: int = 32) -> None:
    """The options `Target.measure` reads (`--duration`, `--connections`, `--threads`), and `--rounds`."""
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=duration, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=connections)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")


def aitp_target(server: ServerProcess) -> Target:
    """Keys for a shop and a user, and one thread per workload in which the shop posts."""
    with admin_client(server) as admin:
        shop, user = create_key(admin, "shop"), create_key(admin, "user")
    urls = {}
    with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {user}"}) as client:
        for workload in ("text", "request_decision"):
            actors = [{"id": "user", "capabilities": [DECISIONS]}, {"id": "shop", "capabilities": [DECISIONS]}]
            response = client.post("/threads", json={"actors": actors})
            if response.status_code != 200:
                raise BenchError(f"POST /threads answered {response.status_code}: {response.text[:300]}")
            urls[workload] = f"{server.base_url}/v1/threads/{response.json()['id']}/messages"
    return Target(server, urls, shop)


def echo_target(server: ServerProcess) -> Target:
    url = f"{server.base_url}/v1/threads/thread_echo/messages"
    return Target(server, {"text": url, "request_decision": url}, "")


# ------------------------------------------------------------------------------ profile


def profile(target: Target, workload: str, body: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """py-spy samples the aitp server during one wrk run; the frames holding the most samples."""
    seconds = max(3, round(args.duration))
    with Sampler(target.server.process.pid, out, seconds + 1) as sampler:
        time.sleep(0.5)
        run_wrk(target.urls[workload], body, target.token, duration=seconds, connections=args.connections, threads=1)
    return sampler.summary


# ------------------------------------------------------------------------------ main


def measure(args: argparse.Namespace) -> dict[str, Any]:
    wrk_path()
    with tempfile.TemporaryDirectory(prefix="aitp-ingest-") as tmp_name:
        tmp = Path(tmp_name)
        files = bodies(tmp)
        with contextlib.ExitStack() as servers:
            targets = {"echo": echo_target(servers.enter_context(running(start_echo(tmp / "echo.log"))))}
            for mode in args.synchronous:  # each on its own file: one's checkpoints never stall the other
                name, query = SYNCHRONOUS[mode]
                url = f"sqlite:///{tmp / f'ingest-{mode}.db'}{query}"
                targets[name] = aitp_target(servers.enter_context(running(start_aitp(url, tmp / f"{name}.log"))))
            if args.workers > 1:  # FULL, as the default server, so the two differ only in their processes
                name, url = f"aitp_workers{args.workers}", f"sqlite:///{tmp / 'ingest-workers.db'}"
                server = start_aitp(url, tmp / f"{name}.log", workers=args.workers)
                targets[name] = aitp_target(servers.enter_context(running(server)))
            order = [(t, w) for w in args.workloads for t in targets]
            for target, workload in order:  # warm-up: first connections, caches, validator, page cache
                run_wrk(
                    targets[target].urls[workload],
                    files[workload],
                    targets[target].token,
                    duration=1,
                    connections=args.connections,
                    threads=args.threads,
                )
            rounds: list[dict[str, dict[str, Any]]] = []
            for _ in range(args.rounds):
                rounds.append(
                    {
                        f"{t}_{w}": {**targets[t].measure(w, files[w], args), "loadavg_1m": load_average()[0]}
                        for t, w in order
                    }
                )
            profiles = {}
            if args.profile:
                profiled = SYNCHRONOUS[args.synchronous[0]][0]
                for workload in args.workloads:
                    out = RESULTS / f"ingest-profile-{workload}.txt"
                    profiles[workload] = profile(targets[profiled], workload, files[workload], args, out)
    return {"rounds": rounds, "profiles": profiles}


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    workloads: dict[str, Any] = {}
    for name in rounds[0]:
        runs = [r[name] for r in rounds]
        workloads[name] = {
            "rps": statistics.median(x["rps"] for x in runs),
            "rps_per_round": [round(x["rps"], 1) for x in runs],
            "latency_p50_ms": statistics.median(x["latency_us"]["p50"] for x in runs) / 1000,
            "latency_p99_ms": statistics.median(x["latency_us"]["p99"] for x in runs) / 1000,
            "server_cpu_us_per_request": statistics.median(x["server_cpu_us_per_request"] for x in runs),
            "requests": sum(x["requests"] for x in runs),
        }
    ratios: dict[str, Any] = {}  # by workload: the default (FULL), as before
    by_synchronous: dict[str, dict[str, Any]] = {}  # by mode, then workload
    full_vs_normal: dict[str, Any] = {}
    for workload, target in TARGETS.items():
        for mode, (name, _) in SYNCHRONOUS.items():
            if f"{name}_{workload}" not in rounds[0]:
                continue
            per_round = [r[f"{name}_{workload}"]["rps"] / r[f"echo_{workload}"]["rps"] for r in rounds]
            figures = {
                "ratio": statistics.median(per_round),
                "per_round": [round(x, 3) for x in per_round],
                "target": target,
                "met": statistics.median(per_round) >= target,
            }
            by_synchronous.setdefault(mode, {})[workload] = figures
            if mode == "full":
                ratios[workload] = figures
        if f"aitp_{workload}" in rounds[0] and f"aitp_normal_{workload}" in rounds[0]:
            per_round = [r[f"aitp_{workload}"]["rps"] / r[f"aitp_normal_{workload}"]["rps"] for r in rounds]
            full_vs_normal[workload] = {
                "ratio": statistics.median(per_round),
                "per_round": [round(x, 3) for x in per_round],
            }
    return {
        "workloads": workloads,
        "ratios": ratios,
        "ratios_by_synchronous": by_synchronous,
        "full_vs_normal": full_vs_normal,
        "workers_vs_one": workers_vs_one(rounds),
    }


def workers_vs_one(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """By workload: requests/s of `aitp serve --workers N` over the one-process server's (both FULL), per
    round then the median; CPU per request of each."""
    found: dict[str, Any] = {}
    for name in rounds[0]:
        many, _, workload = name.partition("_workers")[2].partition("_")
        if not many or f"aitp_{workload}" not in rounds[0]:
            continue
        per_round = [r[name]["rps"] / r[f"aitp_{workload}"]["rps"] for r in rounds]
        found[workload] = {
            "workers": int(many),
            "ratio": statistics.median(per_round),
            "per_round": [round(x, 3) for x in per_round],
        }
    return found


def print_table(result: dict[str, Any]) -> None:  # noqa: C901
    p = result["parameters"]
    print(
        f"ingest: wrk -t{p['threads']} -c{p['connections']} -d{p['duration_s']}s x {p['rounds']} rounds; "
        f"aitp on SQLite vs bare FastAPI echo, same uvicorn options; load {result['machine']['loadavg']}"
    )
    print(f"  {'workload':26}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'server CPU µs/req':>19}")
    for name, w in result["workloads"].items():
        print(
            f"  {name:26}{w['rps']:10.0f}{w['latency_p50_ms']:9.2f}{w['latency_p99_ms']:9.2f}"
            f"{w['server_cpu_us_per_request']:19.0f}"
        )
    for mode, ratios in result["ratios_by_synchronous"].items():
        for workload, r in ratios.items():
            verdict = "met" if r["met"] else "MISSED"
            print(
                f"  ratio aitp/echo {workload:18} synchronous={mode:7} {r['ratio']:.2f} "
                f"(target >= {r['target']:.2f}: {verdict}) rounds {r['per_round']}"
            )
    for workload, r in result["full_vs_normal"].items():
        print(f"  ratio FULL/NORMAL {workload:17} {r['ratio']:.2f} rounds {r['per_round']}")
    for workload, r in result.get("workers_vs_one", {}).items():
        print(f"  ratio {r['workers']} workers/1 {workload:16} {r['ratio']:.2f} rounds {r['per_round']}")
    for workload, prof in result.get("profiles", {}).items():
        print_profile(f"profile aitp {workload}", prof)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    wrk_arguments(parser, duration=5.0)
    parser.add_argument("--profile", action="store_true", help="also sample the server with py-spy")
    parser.add_argument(
        "--workers", type=int, default=1, help="also measure `aitp serve --workers N` (FULL) beside 1 process"
    )
    parser.add_argument(
        "--synchronous",
        type=lambda v: v.split(","),
        default=list(SYNCHRONOUS),
        help="comma-separated SQLite modes to measure, each an aitp server of its own: full (the default), normal",
    )
    parser.add_argument(
        "--workloads", type=lambda v: v.split(","), default=["text", "request_decision"], help="comma-separated"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "ingest.json")
    args = parser.parse_args(argv)
    if not args.synchronous or set(args.synchronous) - set(SYNCHRONOUS):
        parser.error(f"--synchronous takes {','.join(SYNCHRONOUS)}")
    started = time.perf_counter()
    measured = measure(args)
    result = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "parameters": {
            "rounds": args.rounds,
            "duration_s": args.duration,
            "connections": args.connections,
            "threads": args.threads,
            "store": "sqlite",
            "synchronous": args.synchronous,
            "workers": args.workers,
        },
        "machine": machine_info(),
        **summarise(measured["rounds"]),
        "profiles": measured["profiles"],
        "total_s": time.perf_counter() - started,
    }
    print_table(result)
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "ingest")
