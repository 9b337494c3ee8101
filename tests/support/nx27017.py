"""Test-only launcher for the nx-27017 MongoDB stand-in, with its `$push` bug patched.

Run as ``python -m tests.support.nx27017 <nx-27017 args...>`` or
``python tests/support/nx27017.py <nx-27017 args...>``; use :func:`start_nx27017`
from tests to get a running server on a free port.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NxServer", "apply_workaround", "main", "start_nx27017"]

# Update operators that nx-27017's SQL fast path corrupts (see
# /work/shared/reference/mongodb-stand-in.md): they must take neosqlite's Python path.
_PYTHON_PATH_OPERATORS = frozenset({"$push", "$addToSet"})


def apply_workaround() -> None:
    """Route `$push`/`$addToSet` updates away from neosqlite's broken SQL fast path."""
    from neosqlite.collection.query_helper._sql_updates import SqlUpdatesMixin

    original = SqlUpdatesMixin._can_use_sql_updates
    if getattr(original, "_aitp_patched", False):
        return

    @functools.wraps(original)
    def _can_use_sql_updates(self: Any, update_spec: dict[str, Any], *args: Any, **kwargs: Any) -> bool:
        if isinstance(update_spec, dict) and _PYTHON_PATH_OPERATORS.intersection(update_spec):
            return False
        return original(self, update_spec, *args, **kwargs)

    _can_use_sql_updates._aitp_patched = True  # type: ignore[attr-defined]
    SqlUpdatesMixin._can_use_sql_updates = _can_use_sql_updates  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> None:
    """Apply the workaround, then run nx-27017's CLI with ``argv`` (default: ``sys.argv[1:]``)."""
    apply_workaround()
    from nx_27017 import nx_27017

    # nx-27017's main() takes no arguments and parses sys.argv itself.
    sys.argv = ["nx_27017", *(sys.argv[1:] if argv is None else argv)]
    nx_27017.main()


@dataclass
class NxServer:
    """A running nx-27017 subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    log_file: Path
    pid_file: Path
    host: str = "127.0.0.1"
    _stopped: bool = field(default=False, repr=False)

    @property
    def uri(self) -> str:
        """Connection string for this server (no database in the path)."""
        return f"mongodb://{self.host}:{self.port}/?directConnection=true"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the server, wait for it, and kill it if it does not exit in time."""
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)

    def __enter__(self) -> NxServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        return f"<unreadable: {exc}>"


def _ping(uri: str) -> bool:
    from pymongo import MongoClient
    from pymongo.errors import PyMongoError

    client: MongoClient[dict[str, Any]] = MongoClient(uri, serverSelectionTimeoutMS=500, connectTimeoutMS=500)
    try:
        client.admin.command("ping")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


def start_nx27017(tmp_dir: Path, timeout: float = 20.0, attempts: int = 3) -> NxServer:
    """Start the patched nx-27017 (in-memory) on a free 127.0.0.1 port; wait until it answers ping.

    Files go in ``tmp_dir``: ``nx.pid``, ``nx.log`` (server log) and ``nx.out`` (stdout/stderr).
    Raises RuntimeError with the log contents if the server does not come up within ``timeout``.
    """
    tmp_dir = Path(tmp_dir)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    host = "127.0.0.1"
    pid_file, log_file, out_file = tmp_dir / "nx.pid", tmp_dir / "nx.log", tmp_dir / "nx.out"
    failure = ""
    # Retried because another process can take the chosen port before the server binds it.
    for _ in range(attempts):
        port = _free_port(host)
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--db",
            "memory",
            "--host",
            host,
            "-p",
            str(port),
            "--pid-file",
            str(pid_file),
            "--log-file",
            str(log_file),
        ]
        with out_file.open("ab") as out:
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        server = NxServer(process=process, port=port, log_file=log_file, pid_file=pid_file, host=host)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if _ping(server.uri):
                return server
            time.sleep(0.05)
        server.stop()
        failure = (
            f"nx-27017 did not answer ping on port {port} (exit code {process.returncode}).\n"
            f"--- {log_file} ---\n{_read(log_file)}\n--- {out_file} ---\n{_read(out_file)}"
        )
        if process.returncode is None or time.monotonic() >= deadline:
            break
    raise RuntimeError(failure)


if __name__ == "__main__":
    main()
