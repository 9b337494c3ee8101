"""Trial compiles (aitp.capabilities.trial): a schema is compiled first in a child process with hard CPU and
memory limits, so a schema the server cannot afford is refused without the server paying for it (issue 14).

Budgets here are set so that the outcome does not depend on the machine: 1e-9 s is exceeded by any compile
of a 2,000-property schema (tens of ms; the CPU clock may tick by 10 ms), and ten regex programs of ~10 MB
each exceed 32 MiB.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from aitp.capabilities import trial

JSON_SCHEMA = "https://json-schema.org/draft/2020-12/schema"
ROOMY = trial.Budget(seconds=30.0, bytes=512 << 20, max_expansion=1000, max_depth=32)


def item(schema: Any, capability_id: str = "x-trial") -> dict[str, Any]:
    return {"id": capability_id, "version": "1.0.0", "schema": schema, "openapi_root": None}


def wide(properties: int) -> dict[str, Any]:
    return {
        "$schema": JSON_SCHEMA,
        "type": "object",
        "properties": {f"p{i}": {"type": "object", "properties": {"x": {"type": "string"}}} for i in range(properties)},
    }


REGEX_HEAVY = {
    "type": "object",
    "properties": {f"n{i}": {"type": "string", "pattern": f"(\\w{{100}}){{600}}x{i}"} for i in range(10)},
}


async def test_verdicts_come_back_in_order_one_child_for_all() -> None:
    recursive = {"oneOf": [{"type": "object", "properties": {"a": {"$ref": "#"}}}] * 2}
    verdicts = await trial.run([item(wide(10)), item({"type": "objekt"}), item(recursive)], ROOMY)
    assert [(v.within, v.checked, v.rejected) for v in verdicts] == [
        (True, True, ""),
        (True, True, "invalid"),
        (True, True, "too_complex"),
    ]
    assert verdicts[1].pointer == "/type" and "not a valid JSON Schema" in verdicts[1].detail
    assert "subschemas" in verdicts[2].detail


async def test_a_compile_over_the_cpu_budget_is_reported() -> None:
    (verdict,) = await trial.run([item(wide(2000))], trial.Budget(1e-9, 512 << 20, 1000, 32))
    assert (verdict.within, verdict.reason) == (False, "time")


async def test_a_compile_over_the_memory_budget_is_stopped_in_the_child() -> None:
    (verdict,) = await trial.run([item(REGEX_HEAVY)], trial.Budget(30.0, 32 << 20, 1000, 32))
    assert (verdict.within, verdict.reason) == (False, "memory")
    (roomy,) = await trial.run([item(REGEX_HEAVY)], ROOMY)
    assert roomy.within and roomy.bytes > 32 << 20  # what it would have cost the server


async def test_without_fork_there_is_no_trial_and_the_caller_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "fork")
    assert await trial.run([item(wide(10))], ROOMY) == [trial.UNCHECKED]
