"""Code blocks marked in the project's Markdown (`<!-- tour: NAME -->` before a fenced block), for tests to run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK = re.compile(r"<!-- (?P<kind>[a-z]+): (?P<name>[\w.-]+) -->\s*```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.S)


def marked_blocks(path: Path, kind: str) -> dict[str, str]:
    """name → code of each block marked `<!-- KIND: NAME -->` in `path`, in document order; names are unique."""
    blocks: dict[str, str] = {}
    for match in _BLOCK.finditer(path.read_text()):
        if match["kind"] == kind:
            assert match["name"] not in blocks, f"{path.name}: two blocks named {kind}: {match['name']}"
            blocks[match["name"]] = match["code"]
    return blocks
