"""Full-text search on SQLite: an FTS5 index over the searchable text of messages.

`message_search` holds each message's searchable text (a row only for a message that has some) under a rowid
of its own, an INTEGER PRIMARY KEY that VACUUM keeps; `message_search_fts` is the FTS5 index with that table
as its content, kept in step by triggers written in SQL alone (so any process writing the file, aitp's or the
sqlite3 shell's, keeps it). The thread store writes and deletes the rows in the transactions that write and
delete the messages (`index_message`, `unindex_message`, `unindex_thread`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from aitp.store.records import MessageRecord
from aitp.store.search import MAX_HITS_READ, MAX_INDEX_READ, MessageSearch, SearchHit, searchable_text
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import loads

# one statement each (a trigger's body holds statements of its own)
TABLES = (
    """CREATE TABLE IF NOT EXISTS message_search (
        id INTEGER PRIMARY KEY,
        message_id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        actor TEXT NOT NULL,
        text TEXT NOT NULL
    )""",
    # words compared as the service folds them: case-insensitive, accents dropped (remove_diacritics 2); which
    # rows have a word and nothing more (detail=none, columnsize=0: no positions, no sizes for ranking), so an
    # append writes as few pages as it can
    """CREATE VIRTUAL TABLE IF NOT EXISTS message_search_fts USING fts5(
        text, content='message_search', content_rowid='id', tokenize='unicode61 remove_diacritics 2',
        detail=none, columnsize=0
    )""",
    """CREATE TRIGGER IF NOT EXISTS message_search_indexed AFTER INSERT ON message_search BEGIN
        INSERT INTO message_search_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS message_search_unindexed AFTER DELETE ON message_search BEGIN
        INSERT INTO message_search_fts (message_search_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
)

INSERT = "INSERT INTO message_search (message_id, thread_id, created_at, actor, text) VALUES (?, ?, ?, ?, ?)"

# The caller's newest matching messages (the FTS index read newest row first, at most MAX_INDEX_READ rows of it
# whoever wrote them, each kept if the caller is a member of its thread, at most MAX_HITS_READ of them), then the
# newest of each thread. (SQLite gives the bare columns of a MAX() aggregate from the row that has the maximum.)
SEARCH = """
SELECT thread_id, MAX(message_id) AS message_id, created_at, actor, text FROM (
    SELECT s.thread_id, s.message_id, s.created_at, s.actor, s.text
    FROM (
        SELECT rowid FROM message_search_fts WHERE message_search_fts MATCH ? ORDER BY rowid DESC LIMIT ?
    ) f JOIN message_search s ON s.id = f.rowid {member}
    ORDER BY f.rowid DESC LIMIT ?
) GROUP BY thread_id ORDER BY message_id DESC LIMIT ?
"""
MEMBER = "JOIN thread_actors a ON a.thread_id = s.thread_id AND a.actor_id = ?"


def upgrade(conn: sqlite3.Connection) -> None:
    """Create the index, and once, on a store written before search, index the messages it holds."""
    exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_search'"
    created = conn.execute(exists).fetchone() is None
    for statement in TABLES:
        conn.execute(statement)
    if created:
        rows = conn.execute("SELECT id, thread_id, created_at, actor, content, aitp FROM messages ORDER BY id")
        while batch := rows.fetchmany(1000):
            conn.executemany(
                INSERT,
                [
                    (row["id"], row["thread_id"], row["created_at"], row["actor"], text)
                    for row in batch
                    if (text := searchable_text(loads(row["content"]), loads(row["aitp"])))
                ],
            )


def index_message(conn: sqlite3.Connection, message: MessageRecord) -> None:
    """Index a message in the transaction that inserts it (nothing for one without searchable text)."""
    text = searchable_text(message.content, message.aitp)
    if text:
        conn.execute(INSERT, (message.id, message.thread_id, message.created_at, message.actor, text))


def unindex_message(conn: sqlite3.Connection, message_id: str) -> None:
    conn.execute("DELETE FROM message_search WHERE message_id = ?", (message_id,))


def unindex_thread(conn: sqlite3.Connection, thread_id: str) -> None:
    """Before the thread's messages are deleted: its rows, found through them (no index of its own to write)."""
    conn.execute(
        "DELETE FROM message_search WHERE message_id IN (SELECT id FROM messages WHERE thread_id = ?)", (thread_id,)
    )


def match_expression(terms: Sequence[str]) -> str:
    """Every term as a quoted FTS5 string (a literal, whatever it holds), all of them required."""
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


class SQLiteSearch(MessageSearch):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine

    async def threads(self, actor_id: str | None, terms: Sequence[str], limit: int) -> list[SearchHit]:
        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            member, params = ("", []) if actor_id is None else (MEMBER, [actor_id])
            try:
                rows = conn.execute(
                    SEARCH.format(member=member),
                    [match_expression(terms), MAX_INDEX_READ, *params, MAX_HITS_READ, limit],
                ).fetchall()
            except sqlite3.OperationalError as error:
                # a term FTS5's tokenizer splits in two (a few combining marks the service's word pattern keeps
                # inside a word) is a phrase, which an index without positions cannot match: nothing found
                if "phrase queries are not supported" not in str(error):
                    raise
                return []
            return [SearchHit(*row) for row in rows]

        # on the store thread, not the loop: a search may read up to MAX_INDEX_READ rows of the index
        return await self._engine.run(op, may_wait=True)
