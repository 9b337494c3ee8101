"""When pytest-timeout stops a hung test, also print the stack of every asyncio task of the running loop.

The thread stacks that pytest-timeout prints show an async test's main thread waiting in the event loop's
`select`, which says nothing about which `await` never returned. The task stacks do.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest_timeout


def install() -> None:
    """Wrap pytest-timeout's stack dump (called in the main thread, from its SIGALRM handler)."""
    dump_threads = pytest_timeout.dump_stacks
    if getattr(dump_threads, "_with_tasks", False):
        return

    def dump_stacks(terminal: Any) -> None:
        dump_threads(terminal)
        loop = asyncio._get_running_loop()  # the signal interrupted the loop's own thread, if any runs
        if loop is None:
            return
        terminal.sep("~", title="asyncio tasks")
        for task in asyncio.all_tasks(loop):
            out = io.StringIO()
            task.print_stack(file=out)
            terminal.write(out.getvalue() + "\n")

    dump_stacks._with_tasks = True  # type: ignore[attr-defined]
    pytest_timeout.dump_stacks = dump_stacks
