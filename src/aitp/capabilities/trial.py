"""Trial compiles: a schema is compiled first in a separate process, under hard time and memory limits.

Compiling is the one step of registering a capability whose cost the service cannot bound by looking at the
document alone: the engine's own costs (regex programs, for one: twenty patterns `(\\w{100}){600}`, 1.3 KB of
schema, take 190 MB) decide it. So before a schema is compiled in the server, `run` compiles it exactly as the
server would (`registry.compile_version`, with the same limits) in a child process
(`python -m aitp.capabilities.trial`), which forks once per schema and gives each fork:

- RLIMIT_CPU and a wall-clock deadline (the fork is killed past them): over `Budget.seconds` of CPU time is
  `time`;
- RLIMIT_AS, its address space at the start plus `Budget.bytes` (and some slack): an allocation past it
  fails, and a peak resident size growing by more than `Budget.bytes` is `memory` too.

The server itself never spends more than the budget on a schema (it waits for the child asynchronously, the
event loop keeps serving), and no stored schema can take the server down at start-up: the registrations
found in the store are tried in one child the same way, and those over budget are set aside.

A schema the child finds invalid or too complex (`compile_version` raised) comes back with the reason
(`Verdict.rejected`, `detail`, `pointer`): the server reports it without compiling anything itself. Where no
child can be started (no `fork`, a frozen interpreter), `run` says so (`Verdict.checked` False) and the
caller measures the in-process compile's CPU time instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

try:
    import resource
except ImportError:  # not a POSIX system: no trial compiles (see `run`)
    resource = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

SLACK_BYTES = 64 << 20  # address space a fork may use beyond the budget (stacks, allocator arenas)
START_SECONDS = 10.0  # for the child to start (import the registry) before the first schema's deadline
WALL_FACTOR = 3.0  # a fork gets this many times its CPU budget in wall-clock time (shared, busy machines)
MAX_DETAIL = 2000  # characters of a rejection's message passed back


@dataclass(frozen=True)
class Budget:
    seconds: float  # CPU seconds one schema's compile may take
    bytes: int  # how much its compile may grow the process's peak resident memory
    max_expansion: int  # passed to compile_version, as the server uses it
    max_depth: int


@dataclass(frozen=True)
class Verdict:
    within: bool  # within budget
    reason: str = ""  # "time" or "memory" when over; otherwise ""
    seconds: float = 0.0  # CPU time the compile took (as far as it got)
    bytes: int = 0  # growth of the peak resident memory
    checked: bool = True  # False: no trial could be made (the caller falls back to measuring in-process)
    rejected: str = ""  # compile_version refused it: "invalid" (SchemaRejected) or "too_complex"
    detail: str = ""  # why (the exception's message, or how the fork ended)
    pointer: str = ""  # where in the schema, for a rejection


UNCHECKED = Verdict(True, checked=False)


async def run(items: list[dict[str, Any]], budget: Budget) -> list[Verdict]:
    """A verdict per item ({"id", "version", "schema", "openapi_root"}), in order; compiled in a child."""
    if not items:
        return []
    if not hasattr(os, "fork") or resource is None:
        return [UNCHECKED] * len(items)
    encoded: list[str] = []
    unreadable: dict[int, Verdict] = {}
    for index, entry in enumerate(items):
        try:
            encoded.append(json.dumps(entry))
        except (TypeError, ValueError, RecursionError) as exc:  # not JSON any more: nothing to compile
            unreadable[index] = Verdict(True, rejected="invalid", detail=f"the schema is not JSON: {exc}"[:MAX_DETAIL])
            encoded.append(json.dumps({"id": "-", "version": "0.0.0", "schema": {}, "openapi_root": None}))
    budget_json = json.dumps(budget.__dict__)
    payload = f'{{"budget": {budget_json}, "items": [{", ".join(encoded)}]}}'.encode()
    deadline = START_SECONDS + len(items) * (budget.seconds * WALL_FACTOR + 2.0)
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "aitp.capabilities.trial",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, NotImplementedError, RuntimeError) as exc:  # no usable interpreter or child watcher
        log.warning("cannot start a trial compile (%s); compiling without a memory limit", exc)
        return [UNCHECKED] * len(items)
    overran = False
    try:
        async with asyncio.timeout(deadline):  # not wait_for: on Python 3.11 it can lose a cancellation
            out, err = await child.communicate(payload)
    except TimeoutError:
        overran = True
        child.kill()
        await child.wait()
        out, err = b"", b"the trial child overran its deadline"
    except BaseException:  # cancelled (the client went away): the child is not left running
        if child.returncode is None:
            child.kill()
        raise
    verdicts: dict[int, Verdict] = {}
    for line in out.decode(errors="replace").splitlines():
        try:
            answer = json.loads(line)
            index = int(answer.pop("index"))
            verdicts[index] = Verdict(**answer)
        except (ValueError, TypeError, KeyError):
            continue
    if len(verdicts) < len(items):
        log.warning("trial compile incomplete (exit %s): %s", child.returncode, err.decode(errors="replace")[-500:])
    missing = Verdict(False, "time", detail="no answer before the deadline") if overran else UNCHECKED
    return [unreadable.get(i) or verdicts.get(i, missing) for i in range(len(items))]


# ------------------------------------------------------------------------------------------ the child


def _vm_size() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _compile(item: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """In the fork: compile as the server would, and measure."""
    from packaging.version import Version

    from aitp.capabilities.registry import CapabilityRef, SchemaRejected, SchemaTooComplex, compile_version

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    rejected: dict[str, str] = {}
    try:
        compile_version(
            CapabilityRef(str(item["id"]), Version(str(item["version"]))),
            item["schema"],
            item.get("openapi_root"),
            max_expansion=budget.max_expansion,
            max_depth=budget.max_depth,
        )
    except MemoryError:
        return {"within": False, "reason": "memory", "detail": "an allocation past the limit failed"}
    except SchemaRejected as exc:  # reported by the server as is, without compiling it again
        kind = "too_complex" if isinstance(exc, SchemaTooComplex) else "invalid"
        rejected = {"rejected": kind, "detail": str(exc)[:MAX_DETAIL], "pointer": exc.pointer}
    seconds = time.process_time() - started
    grown = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) * 1024  # KiB on Linux
    reason = "time" if seconds > budget.seconds else "memory" if grown > budget.bytes else ""
    return {"within": not reason, "reason": reason, "seconds": seconds, "bytes": grown, **rejected}


def _limit_fork(budget: Budget) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    cpu = int(math.ceil(used + budget.seconds)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    size = _vm_size()
    if size:
        limit = size + budget.bytes + SLACK_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _try(index: int, item: dict[str, Any], budget: Budget) -> dict[str, Any]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork: limits, compile, report, exit without running any cleanup of the parent's
        os.close(read)
        try:
            _limit_fork(budget)
            answer = _compile(item, budget)
        except BaseException as exc:  # noqa: BLE001 - anything else: reported, not raised
            answer = {"within": True, "detail": f"{type(exc).__name__}: {exc}"[:200]}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + budget.seconds * WALL_FACTOR + 2.0
    status = None
    while status is None:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return {"index": index, "within": False, "reason": "time", "detail": "killed at the wall-clock deadline"}
        else:
            time.sleep(0.005)
    with os.fdopen(read, "rb") as pipe:
        raw = pipe.read()
    if os.WIFSIGNALED(status) or not raw:
        number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        reason = "time" if number in (signal.SIGXCPU, signal.SIGKILL) else "memory"
        return {"index": index, "within": False, "reason": reason, "detail": f"stopped by signal {number}"}
    return {"index": index, **json.loads(raw)}


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    budget = Budget(**request["budget"])
    from aitp.capabilities import registry  # noqa: F401 - imported once, before forking

    for index, item in enumerate(request["items"]):
        print(json.dumps(_try(index, item, budget)), flush=True)


if __name__ == "__main__":
    main()
