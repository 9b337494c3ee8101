"""Full-text search on SQLite: an FTS5 index over the searchable text of messages.

`message_search` holds each message's searchable text (a row only for a message that has some) under a rowid
of its own, an INTEGER PRIMARY KEY that VACUUM keeps; `message_search_fts` is the FTS5 index with that table
as its content, written beside it: each batch of rows, then the index of those rows in one statement
(`_index_rows`); a row deleted from the index first (`_unindex`).

Messages are indexed behind their appends, not in them: an FTS5 insert in the append's transaction cost half as
much again as the rest of posting a message (server CPU per request, bench/ingest.py: text 211 -> 339 µs,
request_decision 395 -> 598 µs). The indexer reads the event log from where it stopped
(`message_search_position`, an event `gid`: never reused) and indexes the messages created since that still
exist, in one transaction per batch; a search runs it first, so a message is found once its append has
committed, as before. Between searches it runs a moment after this process's commits (`SQLiteSearch.changed`),
so a search rarely has more than a moment's messages to index. Any process sharing the file may run it: the
position is read and moved in the write transaction that indexes. Deletions unindex in their own transaction
(`unindex_message`, `unindex_thread`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence

from aitp.store.records import MessageRecord
from aitp.store.search import MAX_HITS_READ, MAX_INDEX_READ, MessageSearch, SearchHit, searchable_text
from aitp.store.sqlite.engine import SQLiteEngine
from aitp.store.sqlite.schema import loads
from aitp.tasks import cancel

log = logging.getLogger(__name__)

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
    # (no triggers feed the index: an FTS5 insert from a trigger cost ten times one made beside it, ~30 µs a row)
    "DROP TRIGGER IF EXISTS message_search_indexed",
    "DROP TRIGGER IF EXISTS message_search_unindexed",
    # the last event (`events.gid`) the indexer has read: one row
    """CREATE TABLE IF NOT EXISTS message_search_position (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        gid INTEGER NOT NULL
    )""",
)
INDEX_BATCH = 200  # events read per indexing transaction (a few ms of the loop's time)
INDEX_DELAY = 0.5  # seconds after a commit before this process indexes what it wrote (its appends in one go)
CREATED = "thread.message.created"

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
    """Create the index, and once, on a store written before search, index the messages it holds (and start the
    indexer after the events that made them)."""
    exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_search'"
    created = conn.execute(exists).fetchone() is None
    for statement in TABLES:
        conn.execute(statement)
    conn.execute("INSERT OR IGNORE INTO message_search_position (id, gid) SELECT 1, COALESCE(MAX(gid), 0) FROM events")
    if created:
        rows = conn.execute("SELECT id, thread_id, created_at, actor, content, aitp FROM messages ORDER BY id")
        while batch := rows.fetchmany(1000):
            _index_rows(
                conn,
                [
                    (row["id"], row["thread_id"], row["created_at"], row["actor"], text)
                    for row in batch
                    if (text := searchable_text(loads(row["content"]), loads(row["aitp"])))
                ],
            )


def _index_rows(conn: sqlite3.Connection, rows: list[tuple[str, str, int, str, str]]) -> None:
    """Add `rows` (message id, thread id, created_at, actor, text) to the table, then to the index in one go."""
    if not rows:
        return
    before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM message_search").fetchone()[0]
    conn.executemany(INSERT, rows)
    conn.execute(
        "INSERT INTO message_search_fts (rowid, text) SELECT id, text FROM message_search WHERE id > ?", (before,)
    )


def _unindex(conn: sqlite3.Connection, where: str, params: tuple[str, ...]) -> None:
    """Take the rows `where` selects out of the index (an external-content index is told what it held), then
    out of the table."""
    conn.execute(
        "INSERT INTO message_search_fts (message_search_fts, rowid, text)"
        f" SELECT 'delete', id, text FROM message_search WHERE {where}",
        params,
    )
    conn.execute(f"DELETE FROM message_search WHERE {where}", params)


def catch_up(conn: sqlite3.Connection, batches: int | None = None) -> int:
    """Index the messages created since the indexer's position that still exist (in a write transaction; at
    most `batches` batches, None: all); returns how many events it read."""
    read = 0
    while batches is None or batches > 0:
        position = conn.execute("SELECT gid FROM message_search_position WHERE id = 1").fetchone()
        after = 0 if position is None else position[0]
        events = conn.execute(
            "SELECT gid, type, data FROM events WHERE gid > ? ORDER BY gid LIMIT ?", (after, INDEX_BATCH)
        ).fetchall()
        if not events:
            return read
        created = [MessageRecord(**loads(row["data"])) for row in events if row["type"] == CREATED]
        if created:
            ids = [message.id for message in created]
            marks = ",".join("?" * len(ids))
            alive = {row[0] for row in conn.execute(f"SELECT id FROM messages WHERE id IN ({marks})", ids)}
            indexed = {
                row[0]
                for row in conn.execute(f"SELECT message_id FROM message_search WHERE message_id IN ({marks})", ids)
            }
            _index_rows(
                conn,
                [
                    (m.id, m.thread_id, m.created_at, m.actor, text)
                    for m in created
                    if m.id in alive and m.id not in indexed and (text := searchable_text(m.content, m.aitp))
                ],
            )
        conn.execute("INSERT OR REPLACE INTO message_search_position (id, gid) VALUES (1, ?)", (events[-1]["gid"],))
        read += len(events)
        if batches is not None:
            batches -= 1
    return read


def unindex_message(conn: sqlite3.Connection, message_id: str) -> None:
    _unindex(conn, "message_id = ?", (message_id,))


def unindex_thread(conn: sqlite3.Connection, thread_id: str) -> None:
    """Before the thread's messages are deleted: its rows, found through them (no index of its own to write)."""
    _unindex(conn, "message_id IN (SELECT id FROM messages WHERE thread_id = ?)", (thread_id,))


def match_expression(terms: Sequence[str]) -> str:
    """Every term as a quoted FTS5 string (a literal, whatever it holds), all of them required."""
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _one_batch(conn: sqlite3.Connection) -> int:
    return catch_up(conn, 1)


class SQLiteSearch(MessageSearch):
    def __init__(self, engine: SQLiteEngine) -> None:
        self._engine = engine
        self._pending: asyncio.TimerHandle | None = None
        self._indexing: asyncio.Task[None] | None = None

    def changed(self, thread_id: str, thread_changed: bool) -> None:
        """A commit of this process appended events: index them a moment later, with what else commits by then
        (a commit listener of the store)."""
        if self._pending is None and self._engine.is_open:
            self._pending = asyncio.get_running_loop().call_later(INDEX_DELAY, self._index_soon)

    def _index_soon(self) -> None:
        self._pending = None
        if self._indexing is None or self._indexing.done():
            self._indexing = asyncio.get_running_loop().create_task(self._index())

    async def _index(self) -> None:
        try:
            # a batch at a time, each its own transaction: appends wait for none of them for long
            # on the loop's connection, as the appends are: on the store thread it would hold the write lock
            # against them, and each would wait its turn there (measured: slower than the indexing itself)
            while self._engine.is_open and await self._engine.write(_one_batch) > 0:
                await asyncio.sleep(0)  # a batch at a time: requests run between them
        except Exception as error:  # the next commit or search tries again
            log.warning("sqlite search: indexing failed: %s", error)

    async def close(self) -> None:
        """Stop indexing (the store closes): what is left is indexed by the next search or start."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._indexing is not None:
            await cancel([self._indexing])
            self._indexing = None

    async def threads(self, actor_id: str | None, terms: Sequence[str], limit: int) -> list[SearchHit]:
        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            catch_up(conn)  # every message whose append committed is found
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

        # on the store thread, not the loop: a search may index what is pending and read up to MAX_INDEX_READ rows
        return await self._engine.write(op, may_wait=True)
