"""The `aitp` command's entry point: the server's command line (`aitp.cli`), or, in a client-only install
(without the `server` extra), one line saying what to install instead of an ImportError's traceback."""

from __future__ import annotations

import sys

SERVER_EXTRA = "pip install 'aitp-thread-service[server]'"


def main(argv: list[str] | None = None) -> int:
    """Run `aitp` with `argv` (default: the process's arguments); its exit status."""
    try:
        from aitp.cli import main as run
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] == "aitp":
            raise  # a module of this package missing is a broken install, not a missing extra
        print(f"aitp: the server is not installed here (no module {error.name!r}): {SERVER_EXTRA}", file=sys.stderr)
        return 1
    return run(argv)
