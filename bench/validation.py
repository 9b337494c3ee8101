"""Validation cost: median µs to validate a products `request_decision` (cached jsonschema-rs
validator vs the `jsonschema` reference engine, measured in the same run), and the whole
POST-message path in-process (routing, auth, validation, SQLite write) for text vs that message.

Run: python bench/validation.py [--rounds N]
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
import jsonschema

from aitp.app import create_app
from aitp.capabilities.registry import Registry, default_directory
from aitp.config import Settings
from aitp.store import open_store

EXAMPLE = default_directory() / "aitp-02-decisions" / "1.0.0" / "examples" / "request_decision_products.json"
ADMIN = "bench-admin-key"


def median_us(fn: Any, rounds: int, inner: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


def validator_figures(rounds: int) -> dict[str, float]:
    registry = Registry.from_directory(default_directory())
    message = json.loads(EXAMPLE.read_text())
    ref = registry.resolve(message["$schema"])
    assert ref is not None
    version = registry.get(ref)
    assert version is not None and registry.validate(ref, message) == []
    reference = jsonschema.Draft202012Validator(version.schema)
    rs = median_us(lambda: registry.validate(ref, message), rounds, 2000)
    py = median_us(lambda: reference.is_valid(message), rounds, 20)
    return {"jsonschema_rs_us": rs, "jsonschema_us": py, "speedup": py / rs}


async def post_path_figures(rounds: int) -> dict[str, float]:
    message = json.loads(EXAMPLE.read_text())
    decisions = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        await store.open()
        app = create_app(Settings(store_url="unused://", admin_key=ADMIN), store=store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://b/v1", headers={"Authorization": f"Bearer {ADMIN}"}
        ) as client:
            body = {"actors": [{"id": "admin", "capabilities": [decisions]}, {"id": "u", "capabilities": [decisions]}]}
            thread_id = (await client.post("/threads", json=body)).json()["id"]
            url = f"/threads/{thread_id}/messages"
            payloads = {
                "text": {"content": "I would like some socks"},
                "request_decision": {"content": json.dumps(message)},
            }
            figures = {}
            for name, payload in payloads.items():
                assert (await client.post(url, json=payload)).status_code == 200
                samples = []
                for _ in range(rounds):
                    start = time.perf_counter()
                    for _ in range(50):
                        await client.post(url, json=payload)
                    samples.append((time.perf_counter() - start) / 50 * 1e6)
                figures[f"post_{name}_us"] = statistics.median(samples)
        await store.close()
    figures["validation_share_of_post"] = (figures["post_request_decision_us"] - figures["post_text_us"]) / figures[
        "post_request_decision_us"
    ]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    figures = {**validator_figures(args.rounds), **asyncio.run(post_path_figures(args.rounds))}
    print(f"{'measure':38} value")
    for key, value in figures.items():
        print(f"{key:38} {value:10.2f}")
    out = Path(__file__).parent / "results" / "validation.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
