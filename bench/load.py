"""Load on one thread: W concurrent writers x M messages while S live subscribers follow it.

The scenario is `tests/support/load.py`, the same code `tests/test_load.py` runs at a reduced size: a real
`aitp serve` process on a fresh SQLite file in a temp dir, one key per writer (rate limit off), writers
posting their messages one after another and all writers at once, subscribers alternating WebSocket and
SSE from `after=0`. Printed: total time (first POST to the last subscriber caught up), messages/s over the
POST phase, POST latency p50/p99, delivery lag p50/p99 (a delivery's receive time minus its POST's start;
the same process posts and receives), 5xx count, lost and duplicated messages. Written to
`bench/results/load.json` with the parameters and the machine.

Run: python bench/load.py [--writers 200] [--messages 50] [--subscribers 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.support.load

from tests.support.load import LoadShape, run_load, start_load_server  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "load.json"

ROWS = [
    ("total time", "total_s", "s"),
    ("POST phase", "post_phase_s", "s"),
    ("messages/s", "messages_per_s", ""),
    ("POST latency p50", "post_p50_ms", "ms"),
    ("POST latency p99", "post_p99_ms", "ms"),
    ("delivery lag p50", "delivery_lag_p50_ms", "ms"),
    ("delivery lag p99", "delivery_lag_p99_ms", "ms"),
    ("deliveries", "deliveries", ""),
    ("5xx", "status_5xx", ""),
    ("unanswered POSTs", "unanswered", ""),
    ("retried POSTs", "retried", ""),
    ("lost", "lost", ""),
    ("duplicated", "duplicated", ""),
    ("reordered subscribers", "reordered_subscribers", ""),
    ("reordered writers", "reordered_writers", ""),
    ("SSE resumes", "sse_resumes", ""),
]


def table(figures: dict[str, object]) -> str:
    lines = [f"{label:<24}{figures[key]!s:>12} {unit}".rstrip() for label, key, unit in ROWS]
    return "\n".join(lines)


async def measure(shape: LoadShape, drain_timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="aitp-load-") as tmp:
        server = start_load_server(f"sqlite:///{Path(tmp) / 'load.db'}", Path(tmp) / "serve.log")
        try:
            result = await run_load(server.base_url, shape, drain_timeout=drain_timeout)
        finally:
            server.stop()
    return result.figures()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=200)
    parser.add_argument("--messages", type=int, default=50, help="per writer")
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--drain-timeout", type=float, default=300, help="seconds for subscribers to catch up")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    shape = LoadShape(args.writers, args.messages, args.subscribers)
    print(f"{shape.writers} writers x {shape.messages} messages, {shape.subscribers} subscribers (SQLite)")
    figures = asyncio.run(measure(shape, args.drain_timeout))
    print(table(figures))
    report = {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "parameters": {"writers": shape.writers, "messages": shape.messages, "subscribers": shape.subscribers},
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "figures": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.out}")
    failed = figures["status_5xx"] or figures["lost"] or figures["duplicated"] or figures["reordered_subscribers"]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
