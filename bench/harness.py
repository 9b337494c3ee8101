"""What the benchmarks share: machine facts, servers started and always stopped, stage timeouts.

Every figure a benchmark prints comes with the machine's load average at the time, because the
machines these run on are small (2 cores) and shared: a ratio measured in one run is comparable
across machines, an absolute number much less so.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from aitp import testing
from aitp.testing import ServerProcess

ADMIN = "bench-admin-key"
BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
T = TypeVar("T")


class BenchError(RuntimeError):
    """A stage failed or timed out; the message says which."""


async def stage(name: str, work: Awaitable[T], timeout: float) -> T:
    """`work`, or a BenchError naming the stage if it takes longer than `timeout` seconds."""
    try:
        return await asyncio.wait_for(work, timeout)
    except TimeoutError:
        raise BenchError(f"stage '{name}' did not finish within {timeout:g}s") from None


# ------------------------------------------------------------------------------ the machine


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages (what else was running shows here)."""
    return [round(x, 2) for x in os.getloadavg()]


def machine_info() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": load_average(),
    }


def raise_fd_limit(needed: int) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to at least `needed` (children inherit it); (old soft, new soft)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise BenchError(f"need {needed} file descriptors but the hard RLIMIT_NOFILE is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_kib(pid: int | str) -> int:
    """VmRSS of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------ servers


# One key drives each benchmark's load (and holds a thousand sockets in fanout.py): per-key limits off, new
# threads and agents' turns uncounted, and the bench's actors (made by the admin: local) open threads with each
# other as a business serving the public lets anyone (`AITP_CONTACT_POLICY`'s default refuses local callers)
UNLIMITED = {
    "AITP_RATE_LIMIT": "0",
    "AITP_MAX_STREAMS_PER_KEY": "0",
    "AITP_NEW_THREADS_PER_HOUR": "0",
    "AITP_TURN_BUDGET": "0",
    "AITP_AGENT_MESSAGES_PER_MINUTE": "0",
    "AITP_CONTACT_POLICY": "anyone",
}


def start_aitp(
    store_url: str,
    log: Path,
    timeout: float = 30,
    env: dict[str, str] | None = None,
    workers: int = 1,
    port: int | None = None,
) -> ServerProcess:
    """`aitp serve` (admin key `ADMIN`, per-key limits off, `--workers`) on `port` (else a free one), every
    worker answering /health within `timeout` s."""
    try:
        env = {"AITP_ADMIN_KEY": ADMIN, **UNLIMITED, **(env or {})}
        return testing.start_server(store_url, log, env, timeout=timeout, workers=workers, port=port)
    except RuntimeError as exc:
        raise BenchError(f"stage 'start aitp serve': {exc}") from None


def start_echo(log: Path, timeout: float = 30) -> ServerProcess:
    """The bare FastAPI echo (bench/echo_app.py) under `aitp serve`'s uvicorn options, on a free port."""
    port = testing.free_port()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, str(BENCH / "echo_app.py"), "--port", str(port)],
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    server = ServerProcess(process, port, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"echo server exited with {process.returncode}:\n{server.output()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.base_url}/health", timeout=1).status_code == 200:
                return server
        time.sleep(0.1)
    server.stop()
    raise BenchError(f"echo server did not answer /health within {timeout}s:\n{server.output()}")


@contextlib.contextmanager
def running(server: ServerProcess) -> Iterator[ServerProcess]:
    """Stop the server however the block ends; on a BenchError, append the tail of its log."""
    try:
        yield server
    except BenchError as error:
        tail = [line for line in server.output().splitlines() if '" 200 OK' not in line][-15:]
        raise BenchError(f"{error}\n--- {server.log.name} (tail, without 200 lines) ---\n" + "\n".join(tail)) from None
    finally:
        server.stop()


@contextlib.contextmanager
def store_for(spec: str, tmp: Path, name: str) -> Iterator[str]:
    """A fresh store URL: a SQLite file in `tmp`, or a new database on the MongoDB server (dropped after)."""
    if spec == "sqlite":
        yield f"sqlite:///{tmp / (name + '.db')}"
        return
    if not spec.startswith(("mongodb://", "mongodb+srv://")):
        raise BenchError(f"--store must be 'sqlite' or a mongodb:// URL, not {spec!r}")
    database = f"aitp_bench_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(spec)
    yield urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))
    from pymongo import MongoClient

    with contextlib.suppress(Exception), MongoClient(spec, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(database)


def admin_client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)


def create_key(admin: httpx.Client, actor: str) -> str:
    response = admin.post("/keys", json={"actor": actor})
    if response.status_code != 201 and response.status_code != 200:
        raise BenchError(f"POST /keys answered {response.status_code}: {response.text[:300]}")
    return str(response.json()["key"])


# ------------------------------------------------------------------------------ profiles


class Sampler:
    """py-spy sampling a process for `seconds` (only threads holding the GIL: where Python spends CPU).

    On leaving the block, `summary` holds the share of samples per function (see `summarise_stacks`);
    the collapsed stacks stay in `out` (flamegraph.pl or speedscope read them). Without `seconds`, it
    samples until the block ends."""

    def __init__(self, pid: int, out: Path, seconds: float | None = None, rate: int = 250) -> None:
        self.command = [
            str(Path(sys.executable).parent / "py-spy"),  # the bench extra's, beside this interpreter
            "record", "-p", str(pid), "-r", str(rate), "-f", "raw", "-o", str(out), "--gil", "--threads",
        ]  # fmt: skip
        if seconds is not None:  # else it samples until the block ends
            self.command += ["-d", str(max(1, round(seconds)))]
        self.timed = seconds is not None
        self.out = out
        self.summary: dict[str, Any] = {}

    def __enter__(self) -> Sampler:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.unlink(missing_ok=True)
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.timed:
            self.process.send_signal(signal.SIGINT)  # py-spy writes what it has, then exits
        try:
            _, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        if self.out.exists():
            self.summary = summarise_stacks(self.out)
        else:
            self.summary = {"error": f"py-spy wrote nothing: {err.decode(errors='replace')[-300:]}"}


GENERIC = (
    "runpy",
    "aitp/cli.py",
    "uvicorn/main.py",
    "uvicorn/server.py",
    "uvicorn/_compat.py",
    "asyncio/runners.py",
    "threading.py",
    "concurrent/futures/thread.py",
    "base_events.py",
    "events.py",
)


def summarise_stacks(path: Path, top: int = 25) -> dict[str, Any]:
    """py-spy's collapsed stacks (sampled only while a thread holds the GIL, i.e. runs Python): the share
    of samples each function is in (inclusive, start-up frames left out) and on top of (self)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        if frames and frames[0].startswith(("thread ", "process ")):
            threads[frames[0]] += count
            frames = [f for f in frames if not f.startswith(("thread ", "process "))]
        total += count
        for frame in set(frames):
            if not any(g in frame for g in GENERIC):
                inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
    if not total:
        return {"samples": 0, "threads": {}, "inclusive": [], "self": []}
    return {
        "samples": total,
        "threads": {t: round(n / total, 3) for t, n in threads.most_common()},
        "inclusive": [(f, round(n / total, 3)) for f, n in inclusive.most_common(top)],
        "self": [(f, round(n / total, 3)) for f, n in own.most_common(top)],
    }


def print_profile(title: str, profile: dict[str, Any], top: int = 18) -> None:
    if "error" in profile:
        print(f"  {title}: {profile['error']}")
        return
    print(f"  {title}: {profile['samples']} samples holding the GIL; by thread {profile['threads']}")
    print("    inclusive share (a function and what it calls):")
    for frame, share in profile["inclusive"][:top]:
        print(f"    {share:6.1%}  {frame}")
    print("    self share (on top of the stack):")
    for frame, share in profile["self"][:12]:
        print(f"    {share:6.1%}  {frame}")


def write_result(result: dict[str, Any], out: Path) -> None:
    """Save one benchmark's figures as JSON (under bench/results/)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


def run_main(main: Callable[[], object], name: str) -> None:
    """Run a benchmark's `main`; a BenchError ends it with one line instead of a traceback."""
    try:
        main()
    except BenchError as error:
        sys.exit(f"{name}: {error}")
