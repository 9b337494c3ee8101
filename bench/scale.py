"""Scale on the embedded SQLite store, and on MongoDB when a URI is given: list-messages page latency in
threads of 1k, 100k and 1M messages, and thread creation + joins when the store holds 100k threads.

How the data is loaded (printed with the figures): threads are created through the store API
(`SQLiteStore.create_thread`, so their rows, actors and first event are exactly what the service writes);
their messages are then written with direct SQL into the store's own tables, in the shapes the store
writes (`messages` row, `thread.message.created` event carrying the message record, the thread's
`last_seq`), in transactions of 20,000 messages: posting a million messages through HTTP
would take longer than the whole benchmark may. The 100k extra threads (two actors each, the creation
event and their memberships) are written the same way. Nothing is measured in-process: `aitp serve` runs on
the loaded file and a client times one request at a time (p50 and p90 over `--samples` requests).

Pages: the first page (`limit=20`, newest first), a middle page (`after=` the id of the message in the
middle) and the last page (`after=` the 21st oldest, so the 20 oldest come back). Ratios: each thread's
p50 over the 1k thread's, measured in the same run (target: 1M <= 2x 1k).

MongoDB (`--mongodb-uri mongodb://host/?replicaSet=rs0`, or env AITP_BENCH_MONGODB_URI): after the SQLite
figures, the same figures on a fresh database of that server (its name replaces the URI's path; dropped at
the end), with `aitp serve` on that URL. Threads again through the store API (`MongoStore.create_thread`);
messages, their `thread.message.created` events and the extra threads (thread document, two
`thread_actors` and two `memberships` documents, creation event) are inserted with `insert_many` in batches
of 20,000, in MongoStore's document shapes; each batch takes its seqs with one `$inc` of the thread's
`last_seq`, as the store does per event, and its positions from a loader's counter (`counters`; the store
issues its own, above all of these: see aitp.store.mongo.positions). Without
a URI, MongoDB is skipped (one line says so).

Run: python bench/scale.py [--sizes 1000,100000,1000000] [--threads 100000] [--samples 100]
                           [--mongodb-uri mongodb://...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson
from harness import (
    RESULTS,
    BenchError,
    admin_client,
    create_key,
    load_average,
    machine_info,
    run_main,
    running,
    start_aitp,
    write_result,
)

from aitp.events.payloads import message_payload
from aitp.ids import new_id
from aitp.services.access import role_of
from aitp.store.base import ActorRecord, MessageRecord, NewEvent, Store, ThreadRecord
from aitp.store.sqlite import SQLiteStore

BATCH = 20_000
WARM_UP = 10  # requests per figure before timing
TARGET_RATIO = 2.0
MONGODB_ENV = "AITP_BENCH_MONGODB_URI"


# ------------------------------------------------------------------------------ loading


async def create_threads(store: Store, count: int, creator: str, other: str) -> list[str]:
    """`count` threads of `creator` and `other`, created through the store API (`store` not yet open)."""
    await store.open()
    ids = []
    try:
        for _ in range(count):
            thread = ThreadRecord(id=new_id("thread"), created_at=int(time.time()), creator=creator)
            actors = [ActorRecord(thread.id, creator), ActorRecord(thread.id, other)]
            created = NewEvent("thread.created", {"id": thread.id, "object": "thread"}, thread.created_at)
            await store.create_thread(thread, actors, created, [])
            ids.append(thread.id)
    finally:
        await store.close()
    return ids


def text_message(thread_id: str, i: int, seq: int, created_at: int, members: list[str]) -> MessageRecord:
    """The i-th loaded message: a text message by alternating members, as the service stores one."""
    actor = members[i % len(members)]
    return MessageRecord(
        id=new_id("msg"),
        thread_id=thread_id,
        created_at=created_at,
        actor=actor,
        role=role_of(actor, members[0]),
        content=[{"type": "text", "text": {"value": f"message {i}: some words", "annotations": []}}],
        seq=seq,
    )


def load_messages(path: Path, thread_id: str, count: int, members: list[str]) -> float:
    """Append `count` text messages to a thread with direct SQL, in the store's row shapes; seconds taken."""
    started = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")  # loading only: the figures are taken with the store's own settings
    (seq,) = conn.execute("SELECT last_seq FROM threads WHERE id = ?", (thread_id,)).fetchone()
    created_at = int(time.time())
    done = 0
    while done < count:
        n = min(BATCH, count - done)
        messages, events = [], []
        for i in range(done, done + n):
            seq += 1
            record = text_message(thread_id, i, seq, created_at, members)
            messages.append((record.id, thread_id, seq, created_at, record.actor, record.role,
                             orjson.dumps(record.content).decode(), "[]", "{}", None))  # fmt: skip
            events.append((thread_id, seq, "thread.message.created", created_at,
                           orjson.dumps(message_payload(record)).decode()))  # fmt: skip
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO messages (id, thread_id, seq, created_at, actor, role, content, attachments, metadata, aitp)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            messages,
        )
        conn.executemany("INSERT INTO events (thread_id, seq, type, created_at, data) VALUES (?, ?, ?, ?, ?)", events)
        conn.execute("UPDATE threads SET last_seq = ? WHERE id = ?", (seq, thread_id))
        conn.execute("COMMIT")
        done += n
    conn.close()
    return time.perf_counter() - started


def load_threads(path: Path, count: int, actors: tuple[str, str]) -> float:
    """`count` more threads (two actors, the creation event, their memberships) with direct SQL; seconds taken."""
    started = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    created_at = int(time.time())
    done = 0
    while done < count:
        n = min(BATCH, count - done)
        ids = [new_id("thread") for _ in range(n)]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO threads (id, created_at, creator, metadata, parent_id, tool_resources, last_seq)"
            " VALUES (?, ?, ?, '{}', NULL, NULL, 1)",
            [(t, created_at, actors[0]) for t in ids],
        )
        conn.executemany(
            "INSERT INTO thread_actors (thread_id, actor_id, client_id, capabilities, joined_at, position)"
            " VALUES (?, ?, NULL, '[]', ?, ?)",
            [(t, a, created_at, i) for t in ids for i, a in enumerate(actors)],
        )
        conn.executemany(
            "INSERT INTO events (thread_id, seq, type, created_at, data) VALUES (?, 1, 'thread.created', ?, ?)",
            [(t, created_at, json.dumps({"id": t, "object": "thread"})) for t in ids],
        )
        conn.executemany(
            "INSERT INTO memberships (actor_id, thread_id, from_seq, to_seq) VALUES (?, ?, 1, NULL)",
            [(a, t) for t in ids for a in actors],
        )
        conn.execute("COMMIT")
        done += n
    conn.close()
    return time.perf_counter() - started


def mongo_load_messages(db: Any, thread_id: str, count: int, members: list[str]) -> float:
    """Append `count` text messages to a thread with insert_many, in MongoStore's document shapes; seconds.

    Per batch, one `$inc` of the thread's `last_seq` takes the batch's seqs (the store takes one per event),
    one of the loader's `counters` document its positions."""
    from pymongo import ReturnDocument

    from aitp.store.mongo.documents import message_doc

    started = time.perf_counter()
    created_at = int(time.time())
    done = 0
    while done < count:
        n = min(BATCH, count - done)
        last_seq = db.threads.find_one_and_update(
            {"_id": thread_id}, {"$inc": {"last_seq": n}}, projection={"last_seq": 1},
            return_document=ReturnDocument.AFTER,
        )["last_seq"]  # fmt: skip
        last_gid = db.counters.find_one_and_update(
            {"_id": "events"}, {"$inc": {"gid": n}}, upsert=True, return_document=ReturnDocument.AFTER
        )["gid"]
        messages, events = [], []
        for k, i in enumerate(range(done, done + n)):
            seq, gid = last_seq - n + 1 + k, last_gid - n + 1 + k
            record = text_message(thread_id, i, seq, created_at, members)
            events.append({"thread_id": thread_id, "seq": seq, "gid": gid,
                           "type": "thread.message.created", "created_at": created_at,
                           "data": message_payload(record)})  # fmt: skip
            messages.append(message_doc(record))
        db.events.insert_many(events, ordered=False)
        db.messages.insert_many(messages, ordered=False)
        done += n
    return time.perf_counter() - started


def mongo_load_threads(db: Any, count: int, actors: tuple[str, str]) -> float:
    """`count` more threads (two actors, their memberships, the creation event) with insert_many; seconds."""
    from pymongo import ReturnDocument

    from aitp.store.mongo.documents import actor_doc, membership_key

    started = time.perf_counter()
    created_at = int(time.time())
    done = 0
    while done < count:
        n = min(BATCH, count - done)
        ids = [new_id("thread") for _ in range(n)]
        last_gid = db.counters.find_one_and_update(
            {"_id": "events"}, {"$inc": {"gid": n}}, upsert=True, return_document=ReturnDocument.AFTER
        )["gid"]
        db.threads.insert_many(
            [{"_id": t, "created_at": created_at, "creator": actors[0], "metadata": {}, "parent_id": None,
              "tool_resources": None, "last_seq": 1, "deleted": False} for t in ids],
            ordered=False,
        )  # fmt: skip
        db.thread_actors.insert_many(
            [actor_doc(ActorRecord(t, a, joined_at=created_at), i) for t in ids for i, a in enumerate(actors)],
            ordered=False,
        )
        db.memberships.insert_many(
            [{"_id": membership_key(t, a, 1), "thread_id": t, "actor_id": a, "from_seq": 1, "to_seq": None}
             for t in ids for a in actors],
            ordered=False,
        )  # fmt: skip
        db.events.insert_many(
            [{"thread_id": t, "seq": 1, "gid": last_gid - n + 1 + k,
              "type": "thread.created", "created_at": created_at, "data": {"id": t, "object": "thread"}}
             for k, t in enumerate(ids)],
            ordered=False,
        )  # fmt: skip
        done += n
    return time.perf_counter() - started


# ------------------------------------------------------------------------------ measuring


Locate = Callable[[str, int], str]  # (thread id, offset in seq order) -> that message's id


def sqlite_locator(conn: sqlite3.Connection) -> Locate:
    def locate(thread_id: str, offset: int) -> str:
        return str(
            conn.execute(
                "SELECT id FROM messages WHERE thread_id = ? ORDER BY seq LIMIT 1 OFFSET ?", (thread_id, offset)
            ).fetchone()[0]
        )

    return locate


def mongo_locator(db: Any) -> Locate:
    def locate(thread_id: str, offset: int) -> str:
        cursor = db.messages.find({"thread_id": thread_id}, {"_id": 1}).sort("seq", 1).skip(offset).limit(1)
        return str(next(cursor)["_id"])

    return locate


def page_figures(client: httpx.Client, threads: dict[int, str], samples: int, locate: Locate) -> dict[str, Any]:
    """p50/p90 of the first, a middle and the last page of each thread, sampled round-robin across the
    threads (so that warming up and load from elsewhere fall on every size alike)."""
    requests = []
    for size, thread_id in threads.items():
        middle_id = locate(thread_id, size // 2)
        near_oldest = locate(thread_id, 20)
        url = f"/threads/{thread_id}/messages"
        for page, params in (
            ("first", {"limit": 20}),
            ("middle", {"limit": 20, "after": middle_id}),
            ("last", {"limit": 20, "after": near_oldest}),
        ):
            requests.append((size, page, url, params))
        last_page = client.get(url, params={"limit": 20, "after": near_oldest}).json()
        if len(last_page["data"]) != 20 or last_page["has_more"]:
            raise BenchError(f"the last page of the {size}-message thread is not the 20 oldest messages")
    times: dict[tuple[int, str], list[float]] = {(size, page): [] for size, page, _, _ in requests}
    for i in range(samples + WARM_UP):
        for size, page, url, params in requests:
            started = time.perf_counter()
            response = client.get(url, params=params)
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise BenchError(f"GET {url} answered {response.status_code}: {response.text[:300]}")
            if i >= WARM_UP:
                times[(size, page)].append(elapsed)
    figures: dict[str, Any] = {str(size): {} for size in threads}
    for (size, page), samples_ms in times.items():
        figures[str(size)][page] = percentiles(samples_ms)
    return figures


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"p50_ms": statistics.median(ordered), "p90_ms": ordered[int(0.9 * (len(ordered) - 1))]}


def create_and_join(client: httpx.Client, samples: int) -> dict[str, dict[str, float]]:
    """p50/p90 of creating a thread (two actors) and of a third actor joining it."""
    created, joined = [], []
    for i in range(samples + WARM_UP):
        started = time.perf_counter()
        response = client.post("/threads", json={"actors": [{"id": "alice"}, {"id": "bob"}]})
        middle = time.perf_counter()
        if response.status_code != 200:
            raise BenchError(f"POST /threads answered {response.status_code}: {response.text[:300]}")
        joining = client.post(f"/threads/{response.json()['id']}/actors", json={"id": f"carol{i}"})
        ended = time.perf_counter()
        if joining.status_code not in (200, 201):
            raise BenchError(f"POST /threads/{{id}}/actors answered {joining.status_code}: {joining.text[:300]}")
        if i >= WARM_UP:
            created.append((middle - started) * 1000)
            joined.append((ended - middle) * 1000)
    return {"create_thread": percentiles(created), "join_thread": percentiles(joined)}


def serve_and_measure(store_url: str, log: Path, work: Any) -> Any:
    """Start `aitp serve` on the store, run `work(client)` as alice, stop the server."""
    with running(start_aitp(store_url, log, timeout=60)) as server:
        with admin_client(server) as admin:
            key = create_key(admin, "alice")
        with httpx.Client(
            base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            return work(client)


def measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    db = tmp / "scale.db"
    url = f"sqlite:///{db}"
    loading: dict[str, float] = {}
    started = time.perf_counter()
    thread_ids = asyncio.run(create_threads(SQLiteStore(db), len(args.sizes), "alice", "bob"))
    for thread_id, size in zip(thread_ids, args.sizes, strict=True):
        loading[f"messages_{size}_s"] = load_messages(db, thread_id, size, ["alice", "bob"])
    result: dict[str, Any] = {"pages": {}, "threads": {}}

    def pages_and_baseline(client: httpx.Client) -> None:
        threads = dict(zip(args.sizes, thread_ids, strict=True))
        conn = sqlite3.connect(db)
        try:
            result["pages"] = page_figures(client, threads, args.samples, sqlite_locator(conn))
        finally:
            conn.close()
        result["threads"]["few"] = create_and_join(client, args.samples)

    serve_and_measure(url, tmp / "serve.log", pages_and_baseline)
    loading[f"threads_{args.threads}_s"] = load_threads(db, args.threads, ("alice", "bob"))
    result["threads"]["many"] = serve_and_measure(
        url, tmp / "serve.log", lambda client: create_and_join(client, args.samples)
    )
    loading["total_s"] = time.perf_counter() - started
    result["loading"] = loading
    result["db_mib"] = round(sum(p.stat().st_size for p in tmp.glob("scale.db*")) / 2**20, 1)
    return result


def fresh_database(uri: str) -> tuple[str, str]:
    """The URI with a new database name as its path (MongoStore takes the database from the path)."""
    parts = urlsplit(uri)
    database = f"aitp_bench_scale_{uuid.uuid4().hex[:12]}"
    query = parts.query
    if "@" in parts.netloc and "authsource=" not in query.lower():
        # The path's database is also the URI's default authSource: keep authenticating where it said.
        query = "&".join(q for q in (query, f"authSource={parts.path.strip('/') or 'admin'}") if q)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, query, parts.fragment)), database


def measure_mongodb(args: argparse.Namespace, tmp: Path, uri: str) -> dict[str, Any]:
    """The same figures on a fresh database of the MongoDB server at `uri`, dropped at the end."""
    from pymongo import MongoClient
    from pymongo.errors import PyMongoError
    from pymongo.write_concern import WriteConcern

    from aitp.store.mongo import MongoStore

    url, database = fresh_database(uri)
    parts = urlsplit(uri)
    section: dict[str, Any] = {
        "server": {"hosts": parts.netloc.rpartition("@")[2], "database": database},
        "loadavg": load_average(),
    }
    started = time.perf_counter()
    mongo: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=10_000)
    try:
        section["server"]["version"] = mongo.server_info().get("version")
    except PyMongoError as exc:
        mongo.close()
        raise BenchError(f"stage 'connect to MongoDB at {section['server']['hosts']}': {exc}") from None
    try:  # from here on, the database is dropped however the run ends
        # Loading only: the figures are taken by `aitp serve` with the store's own concerns.
        db = mongo.get_database(database, write_concern=WriteConcern("majority"))
        loading: dict[str, float] = {}
        try:
            thread_ids = asyncio.run(create_threads(MongoStore.from_url(url), len(args.sizes), "alice", "bob"))
            for thread_id, size in zip(thread_ids, args.sizes, strict=True):
                loading[f"messages_{size}_s"] = mongo_load_messages(db, thread_id, size, ["alice", "bob"])
        except PyMongoError as exc:
            raise BenchError(f"stage 'load MongoDB': {exc}") from None
        section.update({"pages": {}, "threads": {}})

        def pages_and_baseline(client: httpx.Client) -> None:
            threads = dict(zip(args.sizes, thread_ids, strict=True))
            section["pages"] = page_figures(client, threads, args.samples, mongo_locator(db))
            section["threads"]["few"] = create_and_join(client, args.samples)

        serve_and_measure(url, tmp / "serve-mongodb.log", pages_and_baseline)
        try:
            loading[f"threads_{args.threads}_s"] = mongo_load_threads(db, args.threads, ("alice", "bob"))
        except PyMongoError as exc:
            raise BenchError(f"stage 'load MongoDB threads': {exc}") from None
        section["threads"]["many"] = serve_and_measure(
            url, tmp / "serve-mongodb.log", lambda client: create_and_join(client, args.samples)
        )
        loading["total_s"] = time.perf_counter() - started
        section["loading"] = loading
        try:
            stats = db.command("dbStats")
            section["storage_mib"] = round((stats["dataSize"] + stats["indexSize"]) / 2**20, 1)
        except (PyMongoError, KeyError, TypeError):
            section["storage_mib"] = None
    finally:
        try:
            mongo.drop_database(database)
        except PyMongoError as exc:
            print(f"scale: could not drop MongoDB database {database}: {exc}", file=sys.stderr)
        mongo.close()
    section["ratios"] = ratios(section, args.sizes)
    section["loadavg_end"] = load_average()
    section["total_s"] = time.perf_counter() - started
    return section


def ratios(result: dict[str, Any], sizes: list[int]) -> dict[str, Any]:
    base = result["pages"][str(sizes[0])]
    out: dict[str, Any] = {}
    for size in sizes[1:]:
        figures = result["pages"][str(size)]
        out[str(size)] = {page: figures[page]["p50_ms"] / base[page]["p50_ms"] for page in ("first", "middle", "last")}
    largest = out.get(str(sizes[-1]), {})
    worst = max(largest.values()) if largest else 1.0
    few, many = result["threads"]["few"], result["threads"]["many"]
    return {
        "pages_vs_smallest": out,
        "largest_worst": worst,
        "target": TARGET_RATIO,
        "met": worst <= TARGET_RATIO,
        "create_thread_many_vs_few": many["create_thread"]["p50_ms"] / few["create_thread"]["p50_ms"],
        "join_thread_many_vs_few": many["join_thread"]["p50_ms"] / few["join_thread"]["p50_ms"],
    }


def print_table(result: dict[str, Any]) -> None:
    loaded_with = "direct SQL in the store's row shapes"
    title = f"SQLite, {result['db_mib']} MiB file"
    print_block(title, loaded_with, result, result["parameters"], result["machine"]["loadavg"])


def print_mongodb_table(section: dict[str, Any], p: dict[str, Any]) -> None:
    server = section["server"]
    storage = "" if section["storage_mib"] is None else f", {section['storage_mib']} MiB data+indexes"
    title = f"MongoDB {server['version'] or '?'} at {server['hosts']}, database {server['database']}{storage}"
    print_block(title, "insert_many in MongoStore's document shapes", section, p, section["loadavg"])


def print_block(title: str, loaded_with: str, result: dict[str, Any], p: dict[str, Any], loadavg: Any) -> None:
    print(
        f"scale ({title}): threads of {', '.join(f'{s:,}' for s in p['sizes'])} messages "
        f"and {p['threads']:,} extra threads; load {loadavg}"
    )
    print(
        f"  loaded: threads through the store API, messages and extra threads with {loaded_with} ("
        + ", ".join(f"{k} {v:.1f}" for k, v in result["loading"].items())
        + ")"
    )
    print_figures(result, p)


def print_figures(result: dict[str, Any], p: dict[str, Any]) -> None:
    print(f"  {'list messages p50 (p90) ms':30}{'first page':>16}{'middle page':>16}{'last page':>16}")
    for size, pages in result["pages"].items():
        cells = "".join(f"{pages[k]['p50_ms']:9.2f} ({pages[k]['p90_ms']:5.2f})" for k in ("first", "middle", "last"))
        print(f"  {int(size):>12,} messages          {cells}")
    r = result["ratios"]
    for size, per_page in r["pages_vs_smallest"].items():
        cells = ", ".join(f"{k} {v:.2f}" for k, v in per_page.items())
        print(f"  ratio {int(size):,} / {p['sizes'][0]:,}: {cells}")
    verdict = "met" if r["met"] else "MISSED"
    print(f"  largest thread, worst page: {r['largest_worst']:.2f}x (target <= {r['target']:.0f}x: {verdict})")
    few, many = result["threads"]["few"], result["threads"]["many"]
    print(
        f"  create thread p50: {few['create_thread']['p50_ms']:.2f} ms with {len(p['sizes'])} threads, "
        f"{many['create_thread']['p50_ms']:.2f} ms with {p['threads']:,} more (x{r['create_thread_many_vs_few']:.2f}); "
        f"join p50 {few['join_thread']['p50_ms']:.2f} -> {many['join_thread']['p50_ms']:.2f} ms "
        f"(x{r['join_thread_many_vs_few']:.2f})"
    )


def print_summary(result: dict[str, Any]) -> None:
    """One line per backend: the headline ratios side by side."""
    p = result["parameters"]
    print(
        f"scale, both backends: worst page p50 of the {p['sizes'][-1]:,}-message thread over the "
        f"{p['sizes'][0]:,}-message one; create / join p50 with {p['threads']:,} more threads over without"
    )
    for backend, section in (("SQLite", result), ("MongoDB", result["mongodb"])):
        r = section["ratios"]
        verdict = "met" if r["met"] else "MISSED"
        print(
            f"  {backend:8} pages x{r['largest_worst']:.2f} (target <= {r['target']:.0f}x: {verdict}); "
            f"create x{r['create_thread_many_vs_few']:.2f}, join x{r['join_thread_many_vs_few']:.2f}"
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[1000, 100_000, 1_000_000])
    parser.add_argument("--threads", type=int, default=100_000, help="extra threads for the create/join figures")
    parser.add_argument("--samples", type=int, default=100, help="requests timed per figure")
    parser.add_argument(
        "--mongodb-uri",
        default=os.environ.get(MONGODB_ENV) or None,
        help=f"also measure MongoDB on a fresh database of this server (default: ${MONGODB_ENV})",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    args = parser.parse_args(argv)
    if args.mongodb_uri is not None and not args.mongodb_uri.startswith(("mongodb://", "mongodb+srv://")):
        parser.error(f"--mongodb-uri must be a mongodb:// or mongodb+srv:// URL, not {args.mongodb_uri!r}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aitp-scale-") as tmp:
        measured = measure(args, Path(tmp))
    result = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "parameters": {"sizes": args.sizes, "threads": args.threads, "samples": args.samples, "store": "sqlite"},
        "machine": {**machine_info(), "loadavg_end": load_average()},
        **measured,
        "ratios": ratios(measured, args.sizes),
        "total_s": time.perf_counter() - started,
    }
    print_table(result)
    if args.mongodb_uri is None:
        result["mongodb"] = {"skipped": f"no --mongodb-uri / {MONGODB_ENV}"}
        print(f"MongoDB: skipped (no --mongodb-uri / {MONGODB_ENV})")
    else:
        try:
            with tempfile.TemporaryDirectory(prefix="aitp-scale-mongodb-") as tmp:
                result["mongodb"] = measure_mongodb(args, Path(tmp), args.mongodb_uri)
        except BenchError as error:
            result["mongodb"] = {"error": str(error)}
            write_result(result, args.out)  # the SQLite figures stand
            raise
        print_mongodb_table(result["mongodb"], result["parameters"])
        print_summary(result)
    write_result(result, args.out)
    return result


if __name__ == "__main__":
    run_main(main, "scale")
