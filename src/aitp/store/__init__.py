"""Storage: one interface (`Store`), two backends chosen by URL.

A URL that names no store, and a store that cannot be reached or opened, raise a `StoreError` whose message
is one line saying what is wrong and what to write instead: the command line prints it as it is.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import sqlite3

from aitp.redaction import redact
from aitp.store.base import Store

SCHEMES = ("sqlite", "mongodb", "mongodb+srv")
# what every refusal of a URL ends with: the valid shapes, the slashes spelt out (the usual SQLite mistake)
VALID = (
    "write sqlite:///aitp-data/aitp.db (three slashes before a relative path, four before an absolute one: "
    "sqlite:////var/lib/aitp/aitp.db) or mongodb://host:27017/aitp"
)


class StoreError(Exception):
    """The store a URL names cannot be used; the message says why, in one line, for the user to read."""


class StoreURLError(StoreError, ValueError):
    """A store URL aitp cannot read (a typo in the scheme, a bare path, `sqlite://x.db`)."""


class StoreUnavailable(StoreError):
    """A store named by a readable URL that cannot be reached or opened (MongoDB not answering, a SQLite
    path where no database file can be)."""


def open_store(url: str) -> Store:
    """Build (not yet open) the store for `sqlite:///path` or `mongodb://...` URLs; any other URL raises
    `StoreURLError` saying what is wrong with it."""
    scheme, slashes, _ = url.partition("://")
    try:
        if slashes and scheme == "sqlite":
            from aitp.store.sqlite import SQLiteStore

            return SQLiteStore.from_url(url)
        if slashes and scheme in ("mongodb", "mongodb+srv"):
            from aitp.store.mongo import MongoStore

            return MongoStore.from_url(url)
    except ValueError as error:  # from_url parses only: its ValueError is about the URL, and says what
        raise StoreURLError(str(error)) from error
    raise StoreURLError(_unreadable(url))


def _unreadable(url: str) -> str:
    """Why `url`, whose scheme is none of ours, names no store; with the URL probably meant when it can tell."""
    shown = redact(url)  # a mistyped mongodb:// URL may carry a password
    scheme, slashes, _ = url.partition("://")
    if slashes:
        guess = difflib.get_close_matches(scheme.lower(), SCHEMES, n=1)
        meant = f" (did you mean {guess[0]}?)" if guess else ""
        return f"store URL {shown!r} has an unknown scheme {scheme!r}{meant}: {VALID}"
    if url.partition(":")[0] in SCHEMES:  # sqlite:/x.db, mongodb:host
        return f"store URL {shown!r} lacks the '//' after its scheme: {VALID}"
    return (
        f"store URL {shown!r} is a path, not a URL: for that SQLite file write sqlite:///{url} (three slashes "
        "before a relative path, four before an absolute one), for MongoDB mongodb://host:27017/aitp"
    )


def in_memory(url: str) -> bool:
    """Whether the store at `url` lives inside the process that opens it and ends with it."""
    if not url.startswith("sqlite://"):
        return False
    from aitp.store.sqlite import SQLiteStore

    store = open_store(url)
    return isinstance(store, SQLiteStore) and store.path == ":memory:"


async def store_exists(url: str) -> bool:
    """Whether a store was created at `url` (`Store.exists`), asked without opening it. Raises `StoreURLError`
    for a URL that names no store, `StoreUnavailable` when the store cannot be reached (a MongoDB server that
    does not answer: after the 5 s server-selection timeout of `exists`)."""
    store = open_store(url)
    try:
        return await store.exists()
    except Exception as error:
        unavailable = _unavailable(url, error)
        if unavailable is None:
            raise
        raise unavailable from error


async def opened(url: str) -> Store:
    """The store at `url`, built and opened (the caller closes it); raises as `store_exists` does."""
    store = open_store(url)
    try:
        await store.open()
    except Exception as error:
        with contextlib.suppress(Exception):  # what failed is the open: releasing its half must not hide that
            await store.close()
        unavailable = _unavailable(url, error)
        if unavailable is None:
            raise
        raise unavailable from error
    return store


def _unavailable(url: str, error: Exception) -> StoreUnavailable | None:
    """`error`, met reaching or opening the store at `url`, told in one line; None for an error that is not
    about reaching it (a bug, which keeps its traceback)."""
    shown = redact(url)
    if url.startswith("sqlite://"):
        if isinstance(error, OSError | sqlite3.Error):  # a directory that cannot be made, a file that is no database
            return StoreUnavailable(f"cannot open the SQLite store {shown}: {error}")
        return None
    from pymongo.errors import ConfigurationError, ConnectionFailure, OperationFailure

    if isinstance(error, ConnectionFailure):  # ServerSelectionTimeoutError among them
        return StoreUnavailable(
            f"no MongoDB server answered at {shown} ({_first_cause(error)}): is it running, and are the URL's "
            "hosts, port and replicaSet right?"
        )
    if isinstance(error, ConfigurationError):  # a mongodb+srv:// name without its DNS records, say
        return StoreUnavailable(f"MongoDB URL {shown!r}: {_one_line(str(error))}")
    if isinstance(error, OperationFailure) and error.code in (13, 18):  # Unauthorized, AuthenticationFailed
        return StoreUnavailable(f"MongoDB at {shown} refused the URL's credentials: {_one_line(str(error))}")
    return None


def _first_cause(error: Exception) -> str:
    """What pymongo's server-selection error says went wrong, without its timeouts and topology dump."""
    text = str(error).split(", Timeout:")[0]
    return _one_line(re.sub(r" \(configured timeouts:[^)]*\)", "", text))


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "Store",
    "StoreError",
    "StoreURLError",
    "StoreUnavailable",
    "in_memory",
    "open_store",
    "opened",
    "store_exists",
]
