"""Running `aitp serve` as a real process: for end-to-end tests of agents, and for the benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    """`aitp serve` running as a real process on a local port."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(
    store_url: str,
    log: Path,
    env: dict[str, str] | None = None,
    timeout: float = 20,
    port: int | None = None,
    command: list[str] | None = None,
    cwd: Path | None = None,
    workers: int = 1,
    inherit_aitp_env: bool = True,
) -> ServerProcess:
    """Start `aitp serve` (on `port`, else a free one) and wait until /health answers (from every worker);
    RuntimeError if it won't.

    `command` is how `aitp` is invoked (default: `python -m aitp` from this interpreter); `workers`, how many
    processes serve the port (`--workers`; the ServerProcess is their parent, which stops them all).
    The server's environment is this process's with `env` over it; `inherit_aitp_env=False` leaves this
    process's own `AITP_*` variables out, so that a shell's settings (`AITP_HOST`, `AITP_STRICT_ROLES`, ...)
    never reach a test server: only `env` sets it up."""
    port = port or free_port()
    inherited = os.environ if inherit_aitp_env else {k: v for k, v in os.environ.items() if not k.startswith("AITP_")}
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [
                *(command or [sys.executable, "-m", "aitp"]),
                *("serve", "--port", str(port)),
                *(("--workers", str(workers)) if workers != 1 else ()),
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**inherited, "AITP_STORE": store_url, **(env or {})},
            cwd=cwd,
        )
    server = ServerProcess(process, port, log)
    # every worker started: each new connection goes to one of those accepting, so ask until all have answered
    answered: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"aitp serve exited with {process.returncode}:\n{server.output()}")
        try:
            health = httpx.get(f"{server.base_url}/health", headers={"Connection": "close"}, timeout=1)
            if health.status_code == 200:
                answered.add(health.json().get("pid", 0))
                if len(answered) >= workers:
                    return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(
        f"aitp serve did not answer /health on port {port} within {timeout}s "
        f"({len(answered)} of {workers} workers did):\n{server.output()}"
    )
