"""docs/agents.md runs as written: each `<!-- run: NAME -->` block against a real `aitp serve` (Python blocks
with this interpreter, shell blocks with bash), with the environment the guide asks for (`AITP_URL`,
`AITP_KEY`, and `USER_KEY`, `SHOP_KEY` for the blocks that play both actors), and prints what the guide says
it prints. The docs, the README and the examples name the server and a key alike."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY
from tests.support.docs import ROOT, actor_keys, command, marked_blocks

GUIDE = ROOT / "docs" / "agents.md"
BLOCKS = marked_blocks(GUIDE, "run")
WAIT = 60  # seconds a block may take


@pytest.fixture
def live_server(default_live_server: ServerProcess) -> ServerProcess:
    """The docs run against `aitp serve` as their readers start it: its default contact policy."""
    return default_live_server


# what each block must print: each in a line of its own, in this order
PRINTS = {
    "inbox": ["user.near 0", "text: Which colour?", "aitp-02-decisions 1.0.0 request_decision ['red', 'blue']"],
    "handlers": ["confirmed: success q-msg_"],
    "examples": ["payment ['payer_id',", "payment_confirmation [", "quote ["],
    "resume": ["Anyone there?", "Hello?"],
    "idempotency": ["True 1", "idempotency_key_reused"],
    "lifecycle": [
        "error: no answer for 'Wool socks?' yet",
        "error: no answer for 'Wool socks?' yet",
        "user.near Wool socks?",
        "user.near bye",
        "shop.near Welcome to the sock shop, user.near!",
    ],
    "identity": ["verified", "near True True"],
    "refusal": [
        "capability_not_supported ['user.near']",
        "shop.near request_decision ['user.near']",
        "request_decision",
    ],
}


def test_the_guide_is_linked_from_the_readme_and_every_block_is_checked() -> None:
    assert "(docs/agents.md)" in (ROOT / "README.md").read_text()
    assert sorted(BLOCKS) == sorted(PRINTS)


@pytest.mark.parametrize("name", sorted(PRINTS))
def test_guide_block(name: str, live_server: ServerProcess, tmp_path: Path) -> None:
    keys = actor_keys(live_server.base_url, ADMIN_KEY)
    env = {**os.environ, "AITP_URL": live_server.base_url, **keys, "AITP_KEY": keys["USER_KEY"]}  # as the set-up
    result = subprocess.run(
        command(BLOCKS[name]),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    lines = iter(result.stdout.splitlines())
    for expected in PRINTS[name]:  # each in order: consumes the output up to it
        assert any(expected in line for line in lines), f"{expected!r} not printed in order:\n{result.stdout}"


# the server's address read as `AITP` ($AITP, ${AITP:-...}, environ["AITP"]) instead of `AITP_URL`
OLD_SERVER_NAME = re.compile(r"""\$\{?AITP(?![A-Za-z0-9_])|["']AITP["']|^AITP=""", re.M)


def test_the_docs_and_examples_name_the_server_aitp_url() -> None:
    """One set of names for a reader to export: `AITP_URL` for the server (and `AITP_KEY` for a key)."""
    docs = sorted((ROOT / "docs").rglob("*.md"))
    paths = [ROOT / "README.md", *docs, ROOT / "examples" / "README.md", *sorted((ROOT / "examples").glob("*.py"))]
    for path in paths:
        found = OLD_SERVER_NAME.search(path.read_text())
        assert found is None, f"{path.relative_to(ROOT)} reads the server from {found[0]!r}: use AITP_URL"
