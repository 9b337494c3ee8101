"""The schema model compared: a `_Part` is one schema object at its place in one document, and a conjunction is
a list of parts flattened through local `$ref`s and `allOf` members (`_flatten`), so keywords are compared
across the whole conjunction. `_Label` names an old anyOf/oneOf branch being compared on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from aitp.capabilities.compat.budget import _spend


@dataclass(frozen=True, eq=False)
class _Part:
    """One schema object taking part in a conjunction, with where it lives."""

    side: str  # "o" / "n": which document; keeps keys of the two documents apart
    doc: Any  # the whole document, for $ref; None for synthetic parts
    pointer: str
    node: Any
    key: str  # identifies the constraint set: side + pointer, plus what was stripped from the node
    full: Any = None  # for a node with keywords stripped, the node as published

    @staticmethod
    def root(side: str, doc: Any) -> _Part:
        return _Part(side, doc, "", doc, f"{side}:")

    @staticmethod
    def synthetic(node: dict[str, Any]) -> _Part:
        return _Part("o", None, "", node, "!" + json.dumps(node, sort_keys=True))

    @property
    def base(self) -> str:
        """The key of the unmodified node at this place."""
        return self.key if self.doc is None else f"{self.side}:{self.pointer}"

    def get(self, keyword: str) -> Any:
        return self.node.get(keyword) if isinstance(self.node, dict) else None

    def has(self, keyword: str) -> bool:
        return isinstance(self.node, dict) and keyword in self.node

    def child(self, *path: str | int) -> _Part:
        _spend()
        node: Any = self.node
        for step in path:
            if isinstance(node, dict) and isinstance(step, str):
                node = node.get(step, True)
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                node = node[step]
            else:
                node = True
        pointer = self.pointer + "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in path)
        if self.doc is None:  # synthetic parents have synthetic children
            return _Part(self.side, None, pointer, node, "!" + json.dumps(node, sort_keys=True, default=str))
        return _Part(self.side, self.doc, pointer, node, f"{self.side}:{pointer}")

    def without(self, keyword: str) -> _Part:
        node = {k: v for k, v in self.node.items() if k != keyword}
        return _Part(self.side, self.doc, self.pointer, node, f"{self.key}|-{keyword}", self.published)

    @property
    def published(self) -> Any:
        return self.node if self.full is None else self.full


@dataclass(frozen=True)
class _Label:
    """An old anyOf/oneOf branch being compared on its own."""

    keyword: str
    pointer: str
    index: int
    summary: str  # what the branch is about, for messages: "'payment'", "title 'Quote'", ...


def _flatten(parts: Iterable[_Part]) -> list[_Part]:
    """The parts plus everything their `$ref`s and `allOf`s add, once each; `true` and non-schemas dropped.

    A node given with a keyword stripped (an old anyOf being split) is not added again in full when a `$ref`
    leads back to it.
    """
    parts = list(parts)
    out: dict[str, _Part] = {}
    stripped = {p.base for p in parts if p.key != p.base}

    def add(part: _Part) -> None:
        _spend()
        if part.key in out or not (isinstance(part.node, dict) or part.node is False):
            return
        if part.key == part.base and part.base in stripped:
            return
        out[part.key] = part
        if part.node is False:
            return
        ref = part.get("$ref")
        if isinstance(ref, str) and (target := _resolve(part, ref)) is not None:
            add(target)
        members = part.get("allOf")
        if isinstance(members, list):
            for number in range(len(members)):
                add(part.child("allOf", number))

    for part in parts:
        add(part)
    return list(out.values())


def _resolve(part: _Part, ref: str) -> _Part | None:
    """The part a local `$ref` ("#", "#/...") points at in the part's own document; None for anything else."""
    if part.doc is None or not (ref == "#" or ref.startswith("#/")):
        return None
    pointer = unquote(ref[1:])
    node = part.doc
    for raw in pointer.split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    return _Part(part.side, part.doc, pointer, node, f"{part.side}:{pointer}")
