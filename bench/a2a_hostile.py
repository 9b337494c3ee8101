"""Hostile A2A JSON-RPC bodies: how long each holds the server's event loop before it is refused, against the
same input sent to the Threads face (issue 28, items 2 and 4).

A real `aitp serve` (fresh SQLite file in a temp dir) with `shop` served over A2A; no agent runs (every body
here is refused). For each case and face, `--rounds` times: a probe client asks `GET /health` back to back
on its own connection while another client sends the body (encoded beforehand); the loop stall is the
longest gap between two probe answers while the request was in flight (idle, a gap is the probe's round
trip: the "idle" row). Printed: the answer, the request's wall time and the stall (median and worst over
the rounds), A2A beside the Threads face. Target: every A2A stall under 100 ms.

Cases (each under the 1 MiB body limit): 40,000 data parts; 60,000 text parts; one 781 KiB data part; a
message whose (ignored) metadata has 60,000 keys; a 20-byte body of invalid UTF-8; JSON nested 10,000 deep.
The Threads face gets the same content as message parts (data parts as their JSON text) and metadata.

"before" figures come from another checkout: `git archive <rev> src | tar -x -C /tmp/before`, link its
`capabilities` folder, then `PYTHONPATH=/tmp/before/src python bench/a2a_hostile.py --label before`.

Run: python bench/a2a_hostile.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from harness import (
    RESULTS,
    BenchError,
    admin_client,
    create_key,
    machine_info,
    run_main,
    running,
    start_aitp,
    write_result,
)

import aitp

TARGET_MS = 100.0  # the longest stall an A2A refusal may cause
SCHEMA = "https://aitp.dev/v1/decisions/schema.json"
JSON = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def a2a_send(parts: list[Any], **message: Any) -> bytes:
    params = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": parts, **message}}
    return dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params})


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def cases() -> dict[str, tuple[bytes, bytes]]:
    """name -> (the A2A body, the Threads face's body for a message with the same content)."""
    data = [{"n": i} for i in range(40_000)]
    big = {"$schema": SCHEMA, "values": list(range(130_100))}  # many small values, as protobuf's Struct reads
    metadata = {f"k{i}": str(i) for i in range(60_000)}
    return {
        "40,000 data parts": (
            a2a_send([{"data": d} for d in data]),
            dumps({"content": [dumps(d).decode() for d in data]}),
        ),
        "60,000 text parts": (a2a_send([{"text": ""}] * 60_000), dumps({"content": [""] * 60_000})),
        "one 781 KiB data part": (a2a_send([{"data": big}]), dumps({"content": [dumps(big).decode()]})),
        "ignored metadata, 60,000 keys": (
            a2a_send([{"text": "hi"}], metadata=metadata),
            dumps({"content": "hi", "metadata": metadata}),
        ),
        "invalid UTF-8 (20 bytes)": (b'{"id":1,"x":"\xff\xfe"}', b'{"content":"\xff\xfe"}'),
        "nested 10,000 deep": (nested(10_000), nested(10_000)),
    }


async def probe(client: httpx.AsyncClient, stop: asyncio.Event, gaps: list[float]) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        (await client.get("/health")).raise_for_status()
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


def answer_of(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return str(response.status_code)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return f"{response.status_code} {error.get('code')}"
    return f"{response.status_code} ok"


async def measure(base: str, path: str, key: str, body: bytes | None) -> dict[str, Any]:
    """One request (None: none, the idle figure) under the probe: its answer, wall time and the stall."""
    headers = {"Authorization": f"Bearer {key}", **JSON}
    async with httpx.AsyncClient(base_url=base, timeout=60) as health, httpx.AsyncClient(base_url=base) as sender:
        await health.get("/health")  # its connection open
        stop, gaps = asyncio.Event(), []
        task = asyncio.create_task(probe(health, stop, gaps))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        if body is None:
            await asyncio.sleep(0.2)
            answer = "-"
        else:
            answer = answer_of(await sender.post(path, content=body, headers=headers, timeout=60))
        wall = time.perf_counter() - started
        await asyncio.sleep(0.05)
        stop.set()
        await task
    return {"answer": answer, "wall_ms": wall * 1000, "stall_ms": max(gaps) * 1000}


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    stalls = [s["stall_ms"] for s in samples]
    return {
        "answers": sorted({s["answer"] for s in samples}),
        "wall_ms_p50": statistics.median(s["wall_ms"] for s in samples),
        "stall_ms_p50": statistics.median(stalls),
        "stall_ms_max": max(stalls),
    }


async def run(args: argparse.Namespace, base: str, key: str, thread: str) -> dict[str, Any]:
    faces = {"a2a": "/a2a/shop", "threads": f"/v1/threads/{thread}/messages"}
    figures: dict[str, Any] = {"idle": summary([await measure(base, "/health", key, None) for _ in range(args.rounds)])}
    for name, bodies in cases().items():
        figures[name] = {}
        for (face, path), body in zip(faces.items(), bodies, strict=True):
            samples = [await measure(base, path, key, body) for _ in range(args.rounds)]
            figures[name][face] = {"body_kib": len(body) / 1024, **summary(samples)}
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--label", default="current", help="what code this is (before / after / ...)")
    parser.add_argument("--out", type=Path, default=RESULTS / "a2a_hostile.json")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"label": args.label, "machine": machine_info(), "target_ms": TARGET_MS}
    print(f"aitp from {Path(aitp.__file__).parent} ({args.label}); load {result['machine']['loadavg']}")
    with (
        tempfile.TemporaryDirectory() as name,
        running(start_aitp(f"sqlite:///{name}/a2a.db", Path(name) / "log")) as s,
    ):
        with admin_client(s) as admin:
            key = create_key(admin, "alice")
            settings = admin.put(f"{s.base_url}/a2a/shop/settings", json={"serve": True})
            if settings.status_code != 200:
                raise BenchError(f"PUT /a2a/shop/settings answered {settings.status_code}: {settings.text[:300]}")
            thread = admin.post("/threads", json={}, headers={"Authorization": f"Bearer {key}"}).json()["id"]
        figures = asyncio.run(run(args, s.base_url, key, thread))
    idle = figures.pop("idle")
    print(f"idle: longest gap between /health answers {idle['stall_ms_p50']:.1f} ms (max {idle['stall_ms_max']:.1f})")
    print(f"{'case':32} {'face':8} {'KiB':>6} {'answer':>12} {'wall p50':>9} {'stall p50':>10} {'stall max':>10}")
    worst = 0.0
    for case, faces in figures.items():
        for face, f in faces.items():
            answers = ",".join(f["answers"])
            print(
                f"{case:32} {face:8} {f['body_kib']:6.0f} {answers:>12} {f['wall_ms_p50']:7.1f} ms "
                f"{f['stall_ms_p50']:7.1f} ms {f['stall_ms_max']:7.1f} ms"
            )
            if face == "a2a":
                worst = max(worst, f["stall_ms_max"])
    met = worst < TARGET_MS
    print(f"worst A2A stall {worst:.1f} ms (target < {TARGET_MS:g} ms: {'met' if met else 'MISSED'})")
    result.update(idle=idle, cases=figures, worst_a2a_stall_ms=worst, met=met)
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "a2a_hostile")
