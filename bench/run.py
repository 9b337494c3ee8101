"""Every benchmark in one command: one table of absolute figures and ratios against their targets, and
`bench/results/latest.json` with everything each benchmark measured.

Each benchmark runs as its own process (it starts and stops its own servers, in temp dirs); one that
fails or overruns its time is reported as such and the others still run. The exit status is 1 when a
benchmark failed (a missed target is a finding, not a failure). Ratios are measured within one run of
one benchmark, against a baseline it measures itself: compare ratios across machines, not absolutes.

Run: python bench/run.py [--quick] [--only ingest,fanout] [--with-load]
  --quick      short runs (about 1.5 minutes), for trying the harness; figures are noisier
  --with-load  also bench/load.py (200 writers, subscribers following), if present
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"

# name -> (arguments for a full run, arguments for --quick, time limit in seconds)
BENCHMARKS: dict[str, tuple[list[str], list[str], float]] = {
    "validation": (["--rounds", "7"], ["--rounds", "3"], 180),
    "ingest": (
        ["--rounds", "5", "--duration", "4", "--workers", "2"],
        ["--rounds", "1", "--duration", "2", "--workers", "2"],
        480,
    ),
    "fanout": (["--subscribers", "1000", "--messages", "50"], ["--subscribers", "300", "--messages", "15"], 300),
    "scale": (
        ["--sizes", "1000,100000,1000000", "--threads", "100000", "--samples", "100"],
        ["--sizes", "1000,10000,100000", "--threads", "10000", "--samples", "30"],
        420,
    ),
    "load": (["--writers", "200", "--messages", "50"], ["--writers", "50", "--messages", "10"], 420),
    "hostile_schemas": ([], ["--sizes", "700", "--depths", "12", "--rounds", "3"], 300),
    "stream_memory": ([], ["--rounds", "2", "--messages", "100", "--thread-messages", "100", "--replays", "5"], 300),
    "webhooks": ([], ["--messages", "50", "--writers", "4", "--burst", "20"], 300),
    "membership": ([], ["--rounds", "1", "--duration", "2"], 180),
    "idle_inboxes": ([], ["--idle", "300", "--rounds", "1", "--duration", "2"], 300),
    "a2a_send": ([], ["--rounds", "1", "--duration", "2"], 180),
    "a2a_hostile": ([], ["--rounds", "2"], 180),
    "sign_in": ([], ["--rounds", "1", "--duration", "2", "--synchronous", "full"], 240),
}


def run_one(name: str, quick: bool) -> dict[str, Any]:
    """Run bench/<name>.py; its JSON result, or {"error": ...} saying why there is none."""
    full, short, limit = BENCHMARKS[name]
    out = RESULTS / f"{name}.json"
    out.unlink(missing_ok=True)
    log = RESULTS / f"{name}.log"
    command = [sys.executable, str(BENCH / f"{name}.py"), *(short if quick else full), "--out", str(out)]
    started = time.perf_counter()
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(command[1:])}  (log: {log.relative_to(BENCH.parent)})")
    with log.open("w") as handle:
        # its own session: on a timeout the whole group (the benchmark and the servers it started) is ended
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
            return {"error": f"did not finish within {limit:g}s", "seconds": time.perf_counter() - started}
    seconds = time.perf_counter() - started
    if code != 0 or not out.exists():
        tail = [line for line in log.read_text(errors="replace").splitlines() if not line.startswith("INFO:")]
        return {"error": f"exit {code}: " + "\n".join(tail[-12:]), "seconds": seconds}
    result: dict[str, Any] = json.loads(out.read_text())
    result["seconds"] = seconds
    return result


# ------------------------------------------------------------------------------ the table

Row = tuple[str, str, str, str]  # measure, value, ratio or baseline, target and verdict


def verdict(met: bool | None, target: str) -> str:
    if met is None:
        return target
    return f"{target}: {'met' if met else 'MISSED'}"


def validation_rows(r: dict[str, Any]) -> list[Row]:
    agreement = r.get("agreement", {})
    fast = r.get("fastjsonschema_us")
    return [
        (
            "validate request_decision (jsonschema-rs)",
            f"{r['jsonschema_rs_us']:.1f} µs",
            f"jsonschema {r['jsonschema_us']:.0f} µs (x{r['speedup']:.0f})"
            + (f", fastjsonschema {fast:.0f} µs" if fast else ""),
            verdict(r["jsonschema_rs_us"] <= 50, "<= 50 µs"),
        ),
        (
            "engines agree on shipped examples",
            f"{agreement.get('cases', 0)} cases",
            f"{len(agreement.get('disagreements', []))} disagreements",
            "",
        ),
    ]


# the aitp server of each SQLite synchronous mode in bench/ingest.py's results, and its row label
INGEST_MODES = {"full": ("aitp", "FULL, default"), "normal": ("aitp_normal", "NORMAL")}


def ingest_rows(r: dict[str, Any]) -> list[Row]:
    rows = []
    w = r["workloads"]
    by_mode = r.get("ratios_by_synchronous") or {"full": r["ratios"]}  # results from before the modes
    for workload in r["ratios"] or next(iter(by_mode.values()), {}):
        echo = w[f"echo_{workload}"]
        for mode, (name, label) in INGEST_MODES.items():
            ratio = by_mode.get(mode, {}).get(workload)
            if ratio is None:
                continue
            aitp = w[f"{name}_{workload}"]
            rows.append(
                (
                    f"ingest POST {workload} (wrk), SQLite {label}",
                    f"{aitp['rps']:.0f} req/s",
                    f"{ratio['ratio']:.2f} of echo {echo['rps']:.0f} req/s",
                    verdict(ratio["met"], f">= {ratio['target']:.2f}"),
                )
            )
            rows.append(
                (
                    f"  server CPU per {workload} POST",
                    f"{aitp['server_cpu_us_per_request']:.0f} µs",
                    f"echo {echo['server_cpu_us_per_request']:.0f} µs",
                    "",
                )
            )
        both = r.get("full_vs_normal", {}).get(workload)
        if both is not None:
            rows.append((f"  {workload}: FULL / NORMAL", f"x{both['ratio']:.2f}", f"rounds {both['per_round']}", ""))
        many = r.get("workers_vs_one", {}).get(workload)
        if many is not None:
            name, cores = f"aitp_workers{many['workers']}_{workload}", r.get("machine", {}).get("cpu_count", "?")
            rows.append(
                (
                    f"  {workload}: --workers {many['workers']} / 1 process (FULL, {cores} cores, wrk on them too)",
                    f"{w[name]['rps']:.0f} req/s",
                    f"x{many['ratio']:.2f} of {w[f'aitp_{workload}']['rps']:.0f} req/s; "
                    f"CPU {w[name]['server_cpu_us_per_request']:.0f} vs "
                    f"{w[f'aitp_{workload}']['server_cpu_us_per_request']:.0f} µs; "
                    f"p99 {w[name]['latency_p99_ms']:.0f} vs {w[f'aitp_{workload}']['latency_p99_ms']:.0f} ms",
                    "",
                )
            )
    return rows


def fanout_rows(r: dict[str, Any]) -> list[Row]:
    n, f, base, mem = r["parameters"]["subscribers"], r["fanout"], r["baseline"], r["memory"]
    return [
        (
            f"fan-out to {n} WebSockets p50 / p99",
            f"{f['p50_ms']:.1f} / {f['p99_ms']:.1f} ms",
            f"1 subscriber {base['p50_ms']:.1f} / {base['p99_ms']:.1f} ms",
            verdict(f["p99_ms"] <= 100, "p99 <= 100 ms"),
        ),
        (
            "  server CPU per delivery",
            f"{f['server_cpu_us_per_delivery']:.0f} µs",
            f"client {f['client_cpu_us_per_delivery']:.0f} µs",
            "",
        ),
        (
            "memory per idle WebSocket",
            f"{mem['server_kib_per_connection']:.1f} KiB",
            f"compression {r['parameters']['compression']} offered by client",
            verdict(mem["server_kib_per_connection"] <= 50, "<= 50 KiB"),
        ),
    ]


def scale_rows(r: dict[str, Any]) -> list[Row]:
    sizes, pages, ratios = r["parameters"]["sizes"], r["pages"], r["ratios"]
    small, large = str(sizes[0]), str(sizes[-1])
    worst_page = max(ratios["pages_vs_smallest"][large], key=ratios["pages_vs_smallest"][large].get)
    many = r["threads"]["many"]
    return [
        (
            f"list messages, {int(large):,}-msg thread",
            f"{pages[large][worst_page]['p50_ms']:.2f} ms ({worst_page} page)",
            f"x{ratios['largest_worst']:.2f} of {int(small):,}-msg thread",
            verdict(ratios["met"], "<= 2x"),
        ),
        (
            f"create thread / join, {r['parameters']['threads']:,} threads",
            f"{many['create_thread']['p50_ms']:.2f} / {many['join_thread']['p50_ms']:.2f} ms",
            f"x{ratios['create_thread_many_vs_few']:.2f} / x{ratios['join_thread_many_vs_few']:.2f} of an empty store",
            "",
        ),
    ]


def load_rows(r: dict[str, Any]) -> list[Row]:
    figures = r.get("figures", r)
    return [
        (
            "load: writers x messages, subscribers",
            f"{figures.get('messages_per_s', 0):.0f} msg/s",
            f"POST p99 {figures.get('post_p99_ms', 0):.0f} ms, lag p99 {figures.get('delivery_lag_p99_ms', 0):.0f} ms",
            "",
        )
    ]


def hostile_schemas_rows(r: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for size, f in sorted(r["registration"].items(), key=lambda item: int(item[0])):
        rows.append(
            (
                f"register a {int(size):,}-property schema ({f['schema_kib']:.0f} KiB)",
                f"{f.get('register', '?')} in {f.get('register_s', 0):.2f} s",
                f"server peak {f.get('peak_before_mib') or 0:.0f} -> {f.get('peak_after_mib') or 0:.0f} MiB; "
                f"restart {f.get('restart', '-')} in {f.get('restart_s', 0):.2f} s",
                "",
            )
        )
    recursion = r["recursion"]
    rows.append(
        (
            "register a oneOf-recursion schema",
            f"{recursion['register']} in {recursion['register_s'] * 1000:.0f} ms",
            "messages: " + ", ".join(f"{d}: {m['refuse_s'] * 1000:.0f} ms" for d, m in recursion["messages"].items()),
            verdict(recursion["register"].endswith("schema_too_complex"), "refused"),
        )
    )
    decisions = r["decisions"]
    valid = decisions["valid"]["p50_ms"]
    worst = max((name for name in decisions if name != "valid"), key=lambda name: decisions[name]["p50_ms"])
    ratio = decisions[worst]["p50_ms"] / valid
    rows.append(
        (
            "refuse an invalid 243 KB request_decision (worst)",
            f"{decisions[worst]['p50_ms']:.1f} ms",
            f"x{ratio:.2f} of accepting a valid one ({valid:.1f} ms)",
            verdict(ratio <= 3, "<= 3x"),
        )
    )
    return rows


def stream_memory_rows(r: dict[str, Any]) -> list[Row]:
    p, rows = r["parameters"], []
    cases = {
        "subscribers": (
            f"RSS kept after {p['rounds']} rounds of {p['subscribers']} SSE subscribers",
            "data_mib_per_round",
            "a round's data",
        ),
        "replays": (f"RSS kept after {p['replays']} replays of a thread", "thread_mib", "the thread"),
    }
    for case, (label, data, of) in cases.items():
        f = r[case]
        kept, bound = f["after_mib"] - f["before_mib"], f[data] / 4
        rows.append(
            (
                f"{label} ({f[data]:.0f} MiB)",
                f"{kept:+.0f} MiB",
                f"before {f['before_mib']:.0f}, peak {f['peak_mib']:.0f}, after {f['after_mib']:.0f} MiB",
                verdict(kept <= bound, f"<= 1/4 of {of}"),
            )
        )
    return rows


# who made bench/webhooks.py's ingest load: wrk's connections, or (results before --load) httpx clients in
# the process that also received and timed the deliveries
LOADERS = {"wrk": "wrk connections", "python": "writers in the receiver's process"}


def webhooks_rows(r: dict[str, Any]) -> list[Row]:
    idle, loaded, wide = r["idle"], r["under_load"], r["throughput"]
    return [
        (
            "webhook latency, post to receiver p50 / p99",
            f"{idle['p50_ms']:.1f} / {idle['p99_ms']:.1f} ms",
            f"under {loaded['load_messages_per_s']:.0f} msg/s of ingest"
            f" ({loaded['writers']} {LOADERS[loaded.get('load', 'python')]}):"
            f" {loaded['p50_ms']:.1f} / {loaded['p99_ms']:.1f} ms",
            verdict(idle["p99_ms"] <= 100 and loaded["p99_ms"] <= 100, "p99 <= 100 ms (idle, loaded)"),
        ),
        (
            f"webhook deliveries to {wide['endpoints']} endpoints",
            f"{wide['deliveries_per_s']:.0f}/s",
            f"{wide['deliveries']} deliveries, p99 {wide['latency']['p99_ms']:.0f} ms",
            "",
        ),
    ]


def membership_rows(r: dict[str, Any]) -> list[Row]:
    small, large = r["sizes"]["2"], r["sizes"]["64"]
    return [
        (
            "POST a message in a 64-actor thread (vs a 2-actor one)",
            f"{large['rps']:.0f} req/s",
            f"2 actors {small['rps']:.0f} req/s: x{r['rps_ratio_2_over_64']:.2f}; CPU {large['cpu_us']:.0f}"
            f" vs {small['cpu_us']:.0f} µs",
            verdict(r["rps_ratio_2_over_64"] <= 1.2, "<= 1.2x"),
        )
    ]


def idle_inboxes_rows(r: dict[str, Any]) -> list[Row]:
    without, with_idle = r["without"], r["with"]
    return [
        (
            f"POST a message with {r['idle']} idle inbox WebSockets of other actors open",
            f"{with_idle['rps']:.0f} req/s",
            f"none open {without['rps']:.0f} req/s: x{r['ratio']:.2f}; CPU {with_idle['cpu_us']:.0f}"
            f" vs {without['cpu_us']:.0f} µs",
            verdict(r["met"], ">= 0.75"),
        )
    ]


def a2a_rows(r: dict[str, Any]) -> list[Row]:
    aitp, reference, ratio = r["servers"]["aitp"], r["servers"]["reference"], r["ratio"]
    return [
        (
            "A2A SendMessage through the binding (agent process answers at once on its inbox WebSocket)",
            f"{aitp['rps']:.0f} req/s",
            f"a2a-sdk reference server {reference['rps']:.0f} req/s: x{ratio['value']:.2f}; server CPU"
            f" {aitp['server_cpu_us_per_request']:.0f} µs/request (+ agent {aitp['agent_cpu_us_per_request']:.0f})"
            f" vs {reference['server_cpu_us_per_request']:.0f} (x{r['cpu_ratio']['value']:.2f},"
            f" aim <= {r['cpu_ratio']['aim']:g})",
            verdict(ratio["met"], f">= {ratio['target']:g}x"),
        )
    ]


def a2a_hostile_rows(r: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for case, faces in r["cases"].items():
        a2a, threads = faces["a2a"], faces["threads"]
        rows.append(
            (
                f"A2A refuses {case}: event loop stall",
                f"{a2a['stall_ms_max']:.0f} ms ({','.join(a2a['answers'])})",
                f"Threads face {threads['stall_ms_max']:.0f} ms; idle {r['idle']['stall_ms_max']:.0f} ms",
                verdict(a2a["stall_ms_max"] < r["target_ms"], f"< {r['target_ms']:g} ms"),
            )
        )
    return rows


ROWS = {
    "validation": validation_rows,
    "ingest": ingest_rows,
    "fanout": fanout_rows,
    "scale": scale_rows,
    "load": load_rows,
    "hostile_schemas": hostile_schemas_rows,
    "stream_memory": stream_memory_rows,
    "webhooks": webhooks_rows,
    "membership": membership_rows,
    "idle_inboxes": idle_inboxes_rows,
    "a2a_send": a2a_rows,
    "a2a_hostile": a2a_hostile_rows,
}


def print_table(results: dict[str, dict[str, Any]]) -> None:
    rows: list[Row] = [("measure", "value", "baseline / ratio (same run)", "target")]
    for name, result in results.items():
        if "error" in result:
            first = result["error"].splitlines()[0] if result["error"] else "failed"
            rows.append((name, "FAILED", first[:60], ""))
            continue
        try:
            rows.extend(ROWS[name](result))
        except (KeyError, TypeError, ValueError) as error:
            rows.append((name, "?", f"unexpected result shape: {error}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short runs (noisier figures)")
    parser.add_argument("--only", type=lambda v: v.split(","), help="comma-separated: " + ",".join(BENCHMARKS))
    parser.add_argument("--with-load", action="store_true", help="also bench/load.py, if present")
    parser.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    args = parser.parse_args()
    names = args.only or [n for n in BENCHMARKS if n != "load" or (args.with_load and (BENCH / "load.py").exists())]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    RESULTS.mkdir(exist_ok=True)
    started = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    results = {name: run_one(name, args.quick) for name in names}
    summary = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "cpu_count": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "total_s": time.perf_counter() - started,
        "results": results,
    }
    print()
    print(
        f"aitp benchmarks ({'quick' if args.quick else 'full'} run, {os.cpu_count()} cpus, "
        f"load {load_before} -> {summary['loadavg_after']}, {summary['total_s']:.0f} s)"
    )
    print_table(results)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written {args.out.relative_to(BENCH.parent) if args.out.is_relative_to(BENCH.parent) else args.out}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
