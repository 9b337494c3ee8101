"""Search of the caller's threads by the words of their messages: the query's words checked and bounded, the
store's full-text search (membership is part of its query), and a plain-text excerpt around each match."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aitp.errors import InvalidRequest
from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.store.base import ActorRecord, ThreadRecord
from aitp.store.search import SearchHit, fold, search_terms, words

MAX_QUERY_CHARS = 200  # characters of `q`
MAX_TERMS = 8  # words of `q`: each one more list the index intersects
MAX_LIMIT = 50  # threads per search
EXCERPT_CHARS = 160  # about this long, cut at spaces, with "…" where it was cut
EXCERPT_LEAD = 50  # characters kept before the first word found
MARKUP_WINDOW = 1_000  # characters either side of the word whose markup is left out (the rest is not read)

# Markdown and HTML a reader does not see as such: what the excerpt leaves out (the text keeps its words).
_MARKUP = (
    (re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)"), r"\1"),  # [label](url), ![alt](url): the label
    (re.compile(r"<[^>\n]*>"), " "),  # tags
    (re.compile(r"(?m)^[ \t]{0,3}(?:#{1,6}|>+|[-*+]|\d{1,9}[.)])[ \t]+"), ""),  # headings, quotes, list items
    (re.compile(r"\*+|`+|~~|(?<!\w)_+|_+(?!\w)|\|"), " "),  # emphasis, code, strike-through, table cells
    (re.compile(r"\s+"), " "),
)


@dataclass(frozen=True)
class ThreadMatch:
    """A thread of the caller with a message that has every word searched for: the newest such message."""

    thread: ThreadRecord
    actors: list[ActorRecord]
    message_id: str
    created_at: int
    author: str
    excerpt: str


def query_terms(q: str) -> list[str]:
    """The words to search for, folded (case and accents do not matter) and each once: 400 naming `q` when it
    is too long, has no word, or too many."""
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidRequest(
            f"The search 'q' is {len(q)} characters long; at most {MAX_QUERY_CHARS} are searched.",
            param="q",
            code="string_too_long",
        )
    terms = search_terms(q)
    if not terms:
        raise InvalidRequest(
            "The search 'q' has no word to look for (letters or digits).", param="q", code="invalid_search_query"
        )
    if len(terms) > MAX_TERMS:
        raise InvalidRequest(
            f"The search 'q' has {len(terms)} different words; at most {MAX_TERMS} are searched at once.",
            param="q",
            code="too_many_terms",
        )
    return terms


async def search_threads(rt: Runtime, principal: Principal, q: str, limit: int) -> tuple[list[ThreadMatch], bool]:
    """The caller's threads (every thread for an admin, as in the list of threads) with a message that has
    every word of `q`, newest match first, each with an excerpt of it; and whether more threads matched."""
    terms = query_terms(q)
    actor = None if principal.admin else principal.actor
    hits = await rt.store.search.threads(actor, terms, limit + 1)
    matches = []
    for hit in hits[:limit]:
        found = await rt.store.get_thread_with_actors(hit.thread_id)
        if found is not None:  # deleted since the search read it
            matches.append(_match(found, hit, terms))
    return matches, len(hits) > limit


def _match(found: tuple[ThreadRecord, list[ActorRecord]], hit: SearchHit, terms: list[str]) -> ThreadMatch:
    thread, actors = found
    return ThreadMatch(thread, actors, hit.message_id, hit.created_at, hit.actor, excerpt(hit.text, terms))


def plain_text(text: str) -> str:
    """`text` as a reader of the rendered message reads it: Markdown marks and tags left out, one line."""
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return text.strip()


def excerpt(text: str, terms: list[str]) -> str:
    """A short plain-text excerpt of `text` around the first of `terms` it has as a word (its start when none,
    e.g. a word only a link's address had): about `EXCERPT_CHARS` long, cut at spaces, "…" where cut."""
    wanted = set(terms)
    # the markup is left out of a stretch around the word, not of the whole text: a message may be long
    at = next((word.start() for word in words(text) if fold(word.group()) in wanted), 0)
    begin, stop = max(0, at - MARKUP_WINDOW), at + MARKUP_WINDOW
    plain = plain_text(text[begin:stop])
    first = next((word.start() for word in words(plain) if fold(word.group()) in wanted), 0)
    start = max(0, first - EXCERPT_LEAD)
    if start > 0:  # from the start of a word
        space = plain.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    end = start + EXCERPT_CHARS
    if end < len(plain):
        space = plain.rfind(" ", max(first, start), end)
        end = space if space > first else end
    cut = plain[start:end].strip()
    before = "…" if start > 0 or begin > 0 else ""
    after = "…" if end < len(plain) or stop < len(text) else ""
    return f"{before}{cut}{after}"
