"""Code blocks marked in the project's Markdown (`<!-- tour: NAME -->` before a fenced block), for tests to run."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple

import httpx

ROOT = Path(__file__).resolve().parents[2]

_BLOCK = re.compile(r"<!-- (?P<kind>[a-z]+): (?P<name>[\w.-]+) -->\s*```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.S)


class Block(NamedTuple):
    language: str  # as the fence says: sh, python, ...
    code: str


def marked_blocks(path: Path, kind: str) -> dict[str, Block]:
    """name → block marked `<!-- KIND: NAME -->` in `path`, in document order; names are unique."""
    blocks: dict[str, Block] = {}
    for match in _BLOCK.finditer(path.read_text()):
        if match["kind"] == kind:
            assert match["name"] not in blocks, f"{path.name}: two blocks named {kind}: {match['name']}"
            blocks[match["name"]] = Block(match["lang"], match["code"])
    return blocks


def command(block: Block) -> list[str]:
    """How a test runs the block: Python with this interpreter, shell with `bash -e` (a failing step fails)."""
    if block.language == "python":
        return [sys.executable, "-c", block.code]
    assert block.language == "sh", f"no way to run a {block.language!r} block"
    return ["bash", "-e", "-o", "pipefail", "-c", block.code]


def actor_keys(base_url: str, admin_key: str) -> dict[str, str]:
    """`USER_KEY` and `SHOP_KEY`, as the docs' blocks read them: new keys of user.near and shop.near, and the
    shop lets anyone bring it into a thread, as the docs' setup (README's curl tour, docs/agents.md) does."""
    keys = {}
    for variable, actor in (("USER_KEY", "user.near"), ("SHOP_KEY", "shop.near")):
        created = httpx.post(
            f"{base_url}/v1/keys", json={"actor": actor}, headers={"Authorization": f"Bearer {admin_key}"}
        )
        assert created.status_code == 200, created.text
        keys[variable] = created.json()["key"]
    opened = httpx.put(
        f"{base_url}/v1/actors/me/contact_policy",
        json={"policy": "anyone"},
        headers={"Authorization": f"Bearer {keys['SHOP_KEY']}"},
    )
    assert opened.status_code == 200, opened.text
    return keys
