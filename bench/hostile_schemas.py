"""Hostile capability schemas and messages: what registering a schema, starting with it stored, and refusing
an invalid message cost a real server (issue 14, items 1 and 2).

A real `aitp serve` (fresh SQLite file in a temp dir) per case, under `prlimit --as` (`--server-memory`, so a
runaway compile is stopped there instead of taking the machine), and this client:

- registration: a root object with N optional properties (N message types; 700 and 3,000 by default) is
  registered; the POST's wall time and the server's peak resident memory (VmHWM) before and after, then the
  server is restarted on the same store: time until /health answers (the stored schema is compiled at
  start-up) and its peak memory;
- recursion: a root `oneOf` of two identical branches whose property `a` refers back to the root, and a
  200-byte message nested `--depths` levels (each level doubles the work of reporting its errors): the time
  to register the schema, then to refuse each message (or the registration refusal, when the schema is
  refused up front);
- 243 KB `request_decision` (shipped aitp-02-decisions): accepting a valid one against refusing invalid ones
  (every option without its id: many errors; the last option's id a number: one error), HTTP p50 over
  `--rounds` posts, and the validation alone in this process (`Registry.validate`, µs).

"before" figures come from the same script run against another checkout: `git archive <rev> src | tar -x
-C /tmp/before` then `PYTHONPATH=/tmp/before/src python bench/hostile_schemas.py --label before` (the
servers inherit PYTHONPATH). Cases that would run away on old code are cut short by `--timeout` and
`--server-memory` and reported as such.

Run: python bench/hostile_schemas.py [--sizes 700,3000] [--depths 12,14,16] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from harness import ADMIN, RESULTS, BenchError, create_key, machine_info, running

import aitp
from aitp.capabilities.registry import Registry, default_directory

JSON_SCHEMA = "https://json-schema.org/draft/2020-12/schema"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PRODUCTS = default_directory() / "aitp-02-decisions" / "1.0.0" / "examples" / "request_decision_products.json"


def wide_schema(properties: int) -> dict[str, Any]:
    """A root object with `properties` optional object properties: as many message types."""
    return {
        "$schema": JSON_SCHEMA,
        "type": "object",
        "properties": {f"p{i}": {"type": "object", "properties": {"x": {"type": "string"}}} for i in range(properties)},
    }


RECURSIVE = {
    "$schema": JSON_SCHEMA,
    "oneOf": [
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
    ],
}


def nested(depth: int, url: str) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for _ in range(depth - 1):
        message = {"a": message}
    return {"$schema": url, "a": message}


def vm_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def start(args: argparse.Namespace, store: str, log: Path) -> Any:
    command = ["prlimit", f"--as={args.server_memory << 20}", sys.executable, "-m", "aitp"]
    from aitp import testing

    try:
        return testing.start_server(
            store,
            log,
            {"AITP_ADMIN_KEY": ADMIN, "AITP_RATE_LIMIT": "0"},
            timeout=args.timeout,
            command=command,
        )
    except RuntimeError as exc:
        raise BenchError(str(exc)[:400]) from None


def post(client: httpx.Client, path: str, body: Any, timeout: float) -> tuple[float, httpx.Response | str]:
    started = time.perf_counter()
    try:
        response = client.post(path, json=body, timeout=timeout)
    except httpx.HTTPError as exc:
        return time.perf_counter() - started, f"{type(exc).__name__} after {time.perf_counter() - started:.1f}s"
    return time.perf_counter() - started, response


def outcome(response: httpx.Response | str) -> str:
    if isinstance(response, str):
        return response
    if response.status_code >= 400:
        try:
            return f"{response.status_code} {response.json()['error']['code']}"
        except (ValueError, KeyError, TypeError):
            return str(response.status_code)
    return str(response.status_code)


def registration_case(args: argparse.Namespace, tmp: Path, size: int) -> dict[str, Any]:
    store = f"sqlite:///{tmp / f'wide-{size}.db'}"
    schema = wide_schema(size)
    body = {"id": f"wide-{size}", "version": "1.0.0", "title": "wide", "description": "hostile", "schema": schema}
    figures: dict[str, Any] = {"schema_kib": len(json.dumps(schema, separators=(",", ":"))) / 1024}
    try:
        server = start(args, store, tmp / f"wide-{size}.log")
    except BenchError as exc:
        return {**figures, "error": str(exc)}
    with running(server):
        pid = server.process.pid
        before = vm_kib(pid, "VmHWM")
        with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            seconds, response = post(admin, "/capabilities", body, args.timeout)
        alive = server.process.poll() is None
        figures.update(
            register_s=seconds,
            register=outcome(response) if alive else f"server died ({server.process.returncode})",
            peak_before_mib=before / 1024,
            peak_after_mib=(vm_kib(pid, "VmHWM") / 1024) if alive else None,
        )
    if figures["register"] not in ("200", "201"):
        return figures
    started = time.perf_counter()
    try:
        restarted = start(args, store, tmp / f"wide-{size}-restart.log")
    except BenchError as exc:
        figures.update(restart="failed: " + str(exc).splitlines()[0], restart_s=time.perf_counter() - started)
        return figures
    with running(restarted):
        figures.update(restart="ok", restart_s=time.perf_counter() - started)
        figures["restart_peak_mib"] = vm_kib(restarted.process.pid, "VmHWM") / 1024
    return figures


def recursion_case(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    server = start(args, f"sqlite:///{tmp / 'recursion.db'}", tmp / "recursion.log")
    figures: dict[str, Any] = {"messages": {}}
    url = "https://aitp.dev/capabilities/x-recursive/v1.0.0/schema.json"
    with (
        running(server),
        httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN}"}) as admin,
    ):
        body = {"id": "x-recursive", "version": "1.0.0", "title": "r", "description": "r", "schema": RECURSIVE}
        seconds, response = post(admin, "/capabilities", body, args.timeout)
        figures.update(register_s=seconds, register=outcome(response))
        if figures["register"] not in ("200", "201"):
            return figures
        key = create_key(admin, "sender")
        with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}) as sender:
            actors = [{"id": "sender", "capabilities": [url]}, {"id": "other", "capabilities": [url]}]
            thread = sender.post("/threads", json={"actors": actors}).json()["id"]
            for depth in args.depths:
                message = nested(depth, url)
                seconds, response = post(
                    sender, f"/threads/{thread}/messages", {"content": json.dumps(message)}, args.timeout
                )
                figures["messages"][str(depth)] = {
                    "bytes": len(json.dumps(message)),
                    "refuse_s": seconds,
                    "answer": outcome(response),
                }
                if isinstance(response, str):
                    break  # timed out: deeper ones take longer still
    return figures


def big_decision() -> dict[str, Any]:
    example = json.loads(PRODUCTS.read_text())
    options = example["request_decision"]["options"]
    message = copy.deepcopy(example)
    message["$schema"] = DECISIONS
    count = 0
    while len(json.dumps(message)) < 243_000:
        option = copy.deepcopy(options[count % len(options)])
        option["id"] = f"opt-{count}"
        message["request_decision"]["options"].append(option)
        count += 1
    return message


def decision_variants() -> dict[str, dict[str, Any]]:
    """The valid 243 KB message and invalid ones: many errors, one error deep inside, one error at a node
    holding nearly the whole message (the engine copies that node to build its error: the worst case)."""
    valid = big_decision()
    no_ids = copy.deepcopy(valid)
    for option in no_ids["request_decision"]["options"]:
        del option["id"]
    numbers = copy.deepcopy(valid)
    numbers["request_decision"]["options"] = list(range(30_000))
    last_id = copy.deepcopy(valid)
    last_id["request_decision"]["options"][-1]["id"] = 7
    no_request_id = copy.deepcopy(valid)
    del no_request_id["request_decision"]["id"]
    return {
        "valid": valid,
        "invalid: no option ids (327 errors)": no_ids,
        "invalid: options are 30,000 numbers": numbers,
        "invalid: last option id a number": last_id,
        "invalid: request_decision without id": no_request_id,
    }


def in_process_us(rounds: int) -> dict[str, float]:
    registry = Registry.from_directory(default_directory())
    out = {}
    for name, message in decision_variants().items():
        ref = registry.resolve(message["$schema"])
        assert ref is not None
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(20):
                registry.validate(ref, message)
            samples.append((time.perf_counter() - started) / 20 * 1e6)
        out[name] = statistics.median(samples)
    return out


def decision_case(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    server = start(args, f"sqlite:///{tmp / 'decisions.db'}", tmp / "decisions.log")
    figures: dict[str, Any] = {}
    with (
        running(server),
        httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN}"}) as admin,
    ):
        key = create_key(admin, "shop")
        with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}) as shop:
            actors = [{"id": "shop", "capabilities": [DECISIONS]}, {"id": "user", "capabilities": [DECISIONS]}]
            thread = shop.post("/threads", json={"actors": actors}).json()["id"]
            for name, message in decision_variants().items():
                samples, answers = [], set()
                for i in range(args.rounds + 1):
                    body = copy.deepcopy(message)
                    if "id" in body["request_decision"]:
                        body["request_decision"]["id"] = f"{i}-{name}"  # a fresh request id each time
                    seconds, response = post(
                        shop, f"/threads/{thread}/messages", {"content": json.dumps(body)}, args.timeout
                    )
                    answers.add(outcome(response))
                    if i:  # the first is a warm-up
                        samples.append(seconds)
                figures[name] = {"p50_ms": statistics.median(samples) * 1000, "answers": sorted(answers)}
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[700, 3000])
    parser.add_argument("--depths", type=lambda v: [int(x) for x in v.split(",")], default=[12, 14, 16])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per request or server start")
    parser.add_argument("--server-memory", type=int, default=6144, help="MiB of address space per server")
    parser.add_argument("--label", default="current", help="what code this is (before / after / ...)")
    parser.add_argument("--out", type=Path, default=RESULTS / "hostile_schemas.json")
    args = parser.parse_args(argv)
    print(f"aitp from {Path(aitp.__file__).parent} ({args.label}); load {os.getloadavg()[0]:.2f}")
    result: dict[str, Any] = {"label": args.label, "machine": machine_info(), "registration": {}}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for size in args.sizes:
            figures = result["registration"][str(size)] = registration_case(args, tmp, size)
            print(
                f"register {size} properties ({figures['schema_kib']:.0f} KiB): {figures.get('register')} in "
                f"{figures.get('register_s', 0):.2f} s; server peak {figures.get('peak_before_mib') or 0:.0f} -> "
                f"{figures.get('peak_after_mib') or 0:.0f} MiB; restart {figures.get('restart', '-')} in "
                f"{figures.get('restart_s', 0):.2f} s, peak {figures.get('restart_peak_mib') or 0:.0f} MiB"
                + (f" [{figures['error']}]" if "error" in figures else "")
            )
        recursion = result["recursion"] = recursion_case(args, tmp)
        print(f"register oneOf recursion schema: {recursion['register']} in {recursion['register_s'] * 1000:.0f} ms")
        for depth, figures in recursion["messages"].items():
            print(
                f"  refuse a {figures['bytes']}-byte message nested {depth}: {figures['answer']} in "
                f"{figures['refuse_s'] * 1000:.0f} ms"
            )
        decisions = result["decisions"] = decision_case(args, tmp)
        in_process = result["decisions_in_process_us"] = in_process_us(args.rounds)
        valid_ms, valid_us = decisions["valid"]["p50_ms"], in_process["valid"]
        for name, figures in decisions.items():
            print(
                f"243 KB request_decision, {name}: {figures['answers']} p50 {figures['p50_ms']:.1f} ms "
                f"(x{figures['p50_ms'] / valid_ms:.2f} of valid); validation alone {in_process[name]:.0f} µs "
                f"(x{in_process[name] / valid_us:.2f})"
            )
    result["loadavg_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
