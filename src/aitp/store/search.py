"""Full-text search of messages: what a message gives the index, how words are compared, the hit a search
returns, and the small store that answers it (one implementation per backend: SQLite FTS5, a MongoDB text index).

Each backend keeps its index in step with the messages in the transaction that writes them (an appended
message is searchable once its append commits; a deleted one, or a deleted thread's, is gone with it), and
indexes the messages of a store written before search existed once, when it opens.
"""

from __future__ import annotations

import abc
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

# Words: runs of letters and digits (underscores and punctuation separate them), as SQLite FTS5's unicode61
# tokenizer and MongoDB's text index split text; compared case- and accent-insensitively (`fold`).
WORD = re.compile(r"[^\W_]+")
# The fields of a capability message a person reads (a quote's description, a choice's options, a form's
# labels): a search finds the quote of "red socks" too. Its ids, URLs and amounts are not words to search.
READABLE_FIELDS = frozenset({"title", "description", "name", "message", "label"})
MAX_CAPABILITY_TEXT = 4_000  # characters of a capability message's readable fields that are indexed
MAX_WALK_DEPTH = 8  # how deep the walk looks for them (a message nests no deeper than the server allows anyway)
# A search reads at most this many of the caller's matching messages, newest first, before it groups them by
# thread: its cost does not grow with a thread that mentions a word ten thousand times.
MAX_HITS_READ = 2_000
# ...and at most this many matching messages of the whole store, whoever's: a word common in other people's
# threads costs a bounded read (a match older than that, in the caller's threads, is not found: the newest are).
MAX_INDEX_READ = 50_000


def fold(word: str) -> str:
    """A word as the index compares it: accents dropped (NFKD, combining marks removed), then case-folded."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def search_terms(text: str) -> list[str]:
    """The folded words of `text`, each once, in order: what a search asks the index for. (Folded first, then
    split: a letter whose decomposition holds a space or punctuation gives words of its own, so every term is
    one token to both indexes.)"""
    return list(dict.fromkeys(WORD.findall(fold(text))))


def words(text: str) -> Iterator[re.Match[str]]:
    """The words of `text`, as matches (their place in it and what they say)."""
    return WORD.finditer(text)


def searchable_text(content: Sequence[dict[str, Any]], aitp: Sequence[dict[str, Any] | None] | None) -> str:
    """What a message gives the index: its plain text parts as written, and the readable fields of its
    capability parts (`READABLE_FIELDS`), parts on lines of their own; "" when it has none (an image)."""
    texts: list[str] = []
    for index, part in enumerate(content):
        text = part.get("text") if part.get("type") == "text" else None
        value = text.get("value") if isinstance(text, dict) else None
        if not isinstance(value, str) or not value.strip():
            continue
        if aitp is not None and index < len(aitp) and aitp[index] is not None:
            value = _readable_fields(value)
        if value:
            texts.append(value)
    return "\n".join(texts)


def _readable_fields(document: str) -> str:
    """The readable fields of a capability message (its JSON text), joined with " · "."""
    try:
        parsed = orjson.loads(document)
    except orjson.JSONDecodeError:
        return ""
    found: list[str] = []
    budget = MAX_CAPABILITY_TEXT

    def walk(node: Any, depth: int) -> None:
        nonlocal budget
        if depth > MAX_WALK_DEPTH or budget <= 0:
            return
        if isinstance(node, dict):
            for key, value in node.items():
                if key in READABLE_FIELDS and isinstance(value, str) and value.strip():
                    found.append(value.strip()[:budget])
                    budget -= len(found[-1])
                else:
                    walk(value, depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, depth + 1)

    walk(parsed, 0)
    return " · ".join(found)


@dataclass(frozen=True)
class SearchHit:
    """The newest message of a thread whose text has every word searched for: the thread and the message, with
    its searchable text (the service cuts the excerpt around the words)."""

    thread_id: str
    message_id: str
    created_at: int
    actor: str
    text: str


class MessageSearch(abc.ABC):
    """The search of messages (its index is written with them, in the thread store's transactions)."""

    @abc.abstractmethod
    async def threads(self, actor_id: str | None, terms: Sequence[str], limit: int) -> list[SearchHit]:
        """Up to `limit` threads of which `actor_id` is a member (every live thread for None) with a message
        whose searchable text has every one of `terms` (folded words) as a word: the newest such message of
        each, newest first (message ids sort by creation). Membership is part of the query. Reads at most
        `MAX_HITS_READ` matching messages."""
