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
) -> ServerProcess:
    """Start `aitp serve` (on `port`, else a free one) and wait until /health answers; RuntimeError if it won't.

    `command` is how `aitp` is invoked (default: `python -m aitp` from this interpreter)."""
    port = port or free_port()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [*(command or [sys.executable, "-m", "aitp"]), "serve", "--port", str(port)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "AITP_STORE": store_url, **(env or {})},
            cwd=cwd,
        )
    server = ServerProcess(process, port, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"aitp serve exited with {process.returncode}:\n{server.output()}")
        try:
            if httpx.get(f"{server.base_url}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"aitp serve did not answer /health on port {port} within {timeout}s:\n{server.output()}")
