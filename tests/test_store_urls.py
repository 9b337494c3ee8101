"""Store URLs: a mistyped one (a scheme's typo, a bare path, `sqlite://x.db`) and a MongoDB that does not
answer stop every `aitp` command on the store with one line saying what is wrong and what a valid URL looks
like, exit status 1, no traceback; the URLs that were valid keep meaning what they meant."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aitp.store import StoreURLError, in_memory, open_store
from aitp.store.sqlite import SQLiteStore
from aitp.testing import free_port
from tests.conftest import ADMIN_KEY

# each URL, and what its refusal must say beside the valid shape
TYPOS = {
    "sqlit:///x.db": "unknown scheme 'sqlit' (did you mean sqlite?)",
    "x.db": "is a path, not a URL: for that SQLite file write sqlite:///x.db",
    "/var/lib/aitp/x.db": "for that SQLite file write sqlite:////var/lib/aitp/x.db",
    "sqlite://x.db": "has two slashes, so 'x.db' reads as a host name",
    "sqlite:/x.db": "lacks the '//' after its scheme",
    "sqlite:////": "names no file",
    "sqlite:///data/": "names no file",
    "mongdb://app:s3cret@db/aitp": "unknown scheme 'mongdb' (did you mean mongodb?)",
    "mongodb://db:port/aitp": "MongoDB URL 'mongodb://db:port/aitp'",
}
STORE_COMMANDS = {
    "serve": ("serve", "--port", "0"),
    "keys list": ("keys", "list"),
    "keys create": ("keys", "create", "--actor", "a.near", "--create-store"),
    "admin link": ("admin", "link"),
}


def aitp(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m aitp ARGS` from this interpreter (never PATH), with no AITP_* settings but `env`."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("AITP_")}
    command = [sys.executable, "-m", "aitp", *args]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**inherited, **(env or {})},
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def the_one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The refusal a command printed: exit 1, one line on stdout and stderr together, `aitp: ...`, no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    [line] = output.splitlines()
    assert line.startswith("aitp: "), line
    return line


def assert_refused(url: str, command: str, cwd: Path) -> str:
    """`command` on the store at `url` (--store for the key and admin commands, AITP_STORE for serve) is
    refused in one line naming a valid URL's shape, and makes no store on the way."""
    by_option = command != "serve"
    args = (*STORE_COMMANDS[command], "--store", url) if by_option else STORE_COMMANDS[command]
    line = the_one_line(aitp(*args, cwd=cwd, env={} if by_option else {"AITP_STORE": url}))
    assert "sqlite:///" in line or "mongodb://host:27017/aitp" in line, line
    assert list(cwd.iterdir()) == []
    return line


@pytest.mark.parametrize("command", ["serve", "keys list"])
@pytest.mark.parametrize("url", sorted(TYPOS))
def test_a_mistyped_store_url_is_one_line_saying_what_to_write(url: str, command: str, tmp_path: Path) -> None:
    line = assert_refused(url, command, tmp_path)
    assert TYPOS[url] in line
    assert "s3cret" not in line  # a URL is shown with its password redacted


@pytest.mark.parametrize("command", ["keys create", "admin link"])
def test_every_command_on_the_store_refuses_it_alike(command: str, tmp_path: Path) -> None:
    assert TYPOS["sqlite://x.db"] in assert_refused("sqlite://x.db", command, tmp_path)


@pytest.mark.parametrize("command", ["serve", "keys list"])
def test_a_mongodb_that_does_not_answer_is_one_line_after_the_server_selection_timeout(
    command: str, tmp_path: Path
) -> None:
    """`serve` with AITP_ADMIN_KEY set reaches the store nowhere else before its server starts: it is asked
    first too, rather than failing in the server's start-up with a traceback."""
    url = f"mongodb://127.0.0.1:{free_port()}/aitp"
    started = time.monotonic()
    result = aitp(*STORE_COMMANDS[command], cwd=tmp_path, env={"AITP_STORE": url, "AITP_ADMIN_KEY": ADMIN_KEY})
    line = the_one_line(result)
    assert f"no MongoDB server answered at {url}" in line and "is it running" in line
    assert time.monotonic() - started < 20  # exists()'s 5 s, not the client's default 30 s


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///x.db", "x.db"),
        ("sqlite:///aitp-data/aitp.db", "aitp-data/aitp.db"),
        ("sqlite:////var/lib/aitp/aitp.db", "/var/lib/aitp/aitp.db"),
        ("sqlite:///x.db?synchronous=normal", "x.db"),
        ("sqlite:///:memory:", ":memory:"),
    ],
)
def test_three_slashes_name_a_relative_path_and_four_an_absolute_one(url: str, path: str) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore) and store.path == path
    assert in_memory(url) == (path == ":memory:")


def test_the_url_a_refusal_suggests_names_the_file_meant() -> None:
    with pytest.raises(StoreURLError) as refused:
        open_store("sqlite://data/x.db")
    suggested = str(refused.value).split("write ")[1].split()[0]
    assert suggested == "sqlite:///data/x.db"
    store = open_store(suggested)
    assert isinstance(store, SQLiteStore) and store.path == "data/x.db"


def test_a_refused_url_is_a_value_error_too() -> None:
    """Callers that caught ValueError from `open_store` still do."""
    with pytest.raises(ValueError, match="unknown scheme"):
        open_store("postgres://db/aitp")
