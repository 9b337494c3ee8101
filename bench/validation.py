"""Validation cost: median µs to validate a products `request_decision` with the cached jsonschema-rs
validator the service uses, against `jsonschema` (the reference engine) and `fastjsonschema` (code
generation) measured in the same run; the three engines' verdicts on every shipped example of every
capability version, and on a broken copy of each (its message body replaced by a string), with any
disagreement listed; and the whole POST-message path in-process (routing, auth, validation, SQLite
write) for text vs that message.

fastjsonschema implements drafts 4, 6 and 7, not 2020-12 (the drafts our converted schemas declare):
keywords it does not know are ignored, so its verdicts are checked here rather than assumed.

Run: python bench/validation.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import fastjsonschema
import httpx
import jsonschema
import jsonschema_rs

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


def fast_validator(schema: dict[str, Any]) -> Any:
    """fastjsonschema's compiled validator (a function raising on invalid input), or the compile error."""
    try:
        return fastjsonschema.compile(schema)
    except Exception as error:  # noqa: BLE001 - reported as a finding, not a crash
        return error


def fast_is_valid(validate: Any, message: Any) -> bool:
    try:
        validate(message)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def validator_figures(rounds: int) -> dict[str, Any]:
    registry = Registry.from_directory(default_directory())
    message = json.loads(EXAMPLE.read_text())
    ref = registry.resolve(message["$schema"])
    assert ref is not None
    version = registry.get(ref)
    assert version is not None and registry.validate(ref, message) == []
    reference = jsonschema.Draft202012Validator(version.schema)
    fast = fast_validator(version.schema)
    rs = median_us(lambda: registry.validate(ref, message), rounds, 2000)
    py = median_us(lambda: reference.is_valid(message), rounds, 20)
    figures: dict[str, Any] = {"jsonschema_rs_us": rs, "jsonschema_us": py, "speedup": py / rs, "target_us": 50.0}
    if not isinstance(fast, Exception):
        figures["fastjsonschema_us"] = median_us(lambda: fast_is_valid(fast, message), rounds, 2000)
    figures["met"] = rs <= figures["target_us"]
    return figures


def agreement(rounds: int) -> dict[str, Any]:
    """Each engine's verdict (and mean µs) on every shipped example and a broken copy of each."""
    registry = Registry.from_directory(default_directory())
    verdicts = []
    compile_errors = {}
    spent: dict[str, list[float]] = {"jsonschema_rs": [], "jsonschema": [], "fastjsonschema": []}
    for info in registry.capabilities():
        for v in info.versions:
            ref = registry.resolve(f"https://aitp.dev/capabilities/{info.id}/v{v}/schema.json")
            version = registry.get(ref) if ref else None
            if ref is None or version is None:
                continue
            rs = jsonschema_rs.validator_for(version.schema)
            reference = jsonschema.validators.validator_for(version.schema, default=jsonschema.Draft202012Validator)(
                version.schema
            )
            fast = fast_validator(version.schema)
            if isinstance(fast, Exception):
                compile_errors[str(ref)] = str(fast)[:200]
            for name, example in version.examples.items():
                broken = {k: ("x" if k in version.message_types else v) for k, v in example.items()}
                for label, candidate in ((name, example), (f"{name} (broken)", broken)):
                    verdict = {
                        "capability": str(ref),
                        "example": label,
                        "service": registry.validate(ref, candidate) == [],
                        "jsonschema_rs": rs.is_valid(candidate),
                        "jsonschema": reference.is_valid(candidate),
                        "fastjsonschema": None if isinstance(fast, Exception) else fast_is_valid(fast, candidate),
                    }
                    verdicts.append(verdict)
                    spent["jsonschema_rs"].append(median_us(lambda c=candidate, f=rs: f.is_valid(c), 3, 200))
                    spent["jsonschema"].append(median_us(lambda c=candidate, f=reference: f.is_valid(c), 3, 5))
                    if not isinstance(fast, Exception):
                        spent["fastjsonschema"].append(
                            median_us(lambda c=candidate, f=fast: fast_is_valid(f, c), 3, 200)
                        )
    engines = ("service", "jsonschema_rs", "jsonschema", "fastjsonschema")
    disagreements = [v for v in verdicts if len({v[e] for e in engines if v[e] is not None}) > 1]
    wrong_fast = [v for v in verdicts if v["fastjsonschema"] is not None and v["fastjsonschema"] != v["jsonschema"]]
    return {
        "cases": len(verdicts),
        "disagreements": disagreements,
        "fastjsonschema_wrong_vs_jsonschema": len(wrong_fast),
        "fastjsonschema_compile_errors": compile_errors,
        "mean_us": {k: statistics.mean(v) for k, v in spent.items() if v},
    }


async def post_path_figures(rounds: int) -> dict[str, float]:
    message = json.loads(EXAMPLE.read_text())
    decisions = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        await store.open()
        app = create_app(Settings(store_url="unused://", admin_key=ADMIN, rate_limit=0), store=store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://b/v1", headers={"Authorization": f"Bearer {ADMIN}"}
        ) as client:
            body = {"actors": [{"id": "admin", "capabilities": [decisions]}, {"id": "u", "capabilities": [decisions]}]}
            thread_id = (await client.post("/threads", json=body)).json()["id"]
            url = f"/threads/{thread_id}/messages"

            def request_decision(n: int) -> dict[str, Any]:
                # a fresh request id each time: a repeated one is refused (409) before it is stored
                return {
                    "content": json.dumps(
                        {**message, "request_decision": {**message["request_decision"], "id": f"rd-{n}"}}
                    )
                }

            bodies = {"text": lambda n: {"content": "I would like some socks"}, "request_decision": request_decision}
            figures, sent = {}, 0
            for name, body_of in bodies.items():
                samples = []
                for _ in range(rounds):
                    start = time.perf_counter()
                    for _ in range(50):
                        sent += 1
                        response = await client.post(url, json=body_of(sent))
                        assert response.status_code == 200, response.text
                    samples.append((time.perf_counter() - start) / 50 * 1e6)
                figures[f"post_{name}_us"] = statistics.median(samples)
        await store.close()
    figures["validation_share_of_post"] = (figures["post_request_decision_us"] - figures["post_text_us"]) / figures[
        "post_request_decision_us"
    ]
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "validation.json")
    args = parser.parse_args(argv)
    figures = {**validator_figures(args.rounds), **asyncio.run(post_path_figures(args.rounds))}
    checked = agreement(args.rounds)
    print("validation of a products request_decision (median µs, cached validators; target <= 50 µs):")
    for key, value in figures.items():
        if isinstance(value, float):
            print(f"  {key:38} {value:10.2f}")
    print(
        f"  {checked['cases']} cases (every shipped example and a broken copy of each): "
        f"{len(checked['disagreements'])} disagreement(s) between engines; mean µs "
        + ", ".join(f"{k} {v:.1f}" for k, v in checked["mean_us"].items())
    )
    for case in checked["disagreements"]:
        print(f"    disagree: {case}")
    for ref, error in checked["fastjsonschema_compile_errors"].items():
        print(f"    fastjsonschema cannot compile {ref}: {error}")
    result = {**figures, "agreement": checked, "loadavg": list(os.getloadavg())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
