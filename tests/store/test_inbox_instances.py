"""An actor's inbox read by cursor while two instances of the service write to one store: every event once,
none skipped, whichever instance wrote it and however the reads and writes interleave."""

from __future__ import annotations

import asyncio

from aitp.store import Store, open_store
from tests.conftest import Backend
from tests.store.test_contract import make_thread, post


async def test_an_inbox_read_by_cursor_gets_both_instances_events_once(backend: Backend) -> None:
    one, two = open_store(backend.url), open_store(backend.url)
    await one.open()
    await two.open()
    try:
        threads = [await make_thread(store, ("alice",)) for store in (one, two)]
        written: list[tuple[str, int]] = [(t.id, 1) for t, _, _ in threads]
        cursor, seen = 0, []
        for i in range(30):
            store: Store = (one, two)[i % 2]
            thread = threads[i % 2][0]
            message = await post(store, thread.id, f"m{i}")
            written.append((thread.id, message.seq))
            if i % 7 == 0:  # read part-way, resuming from the cursor
                page = await one.list_inbox_events("alice", cursor, 4)
                seen += [(e.thread_id, e.seq) for e in page]
                cursor = page[-1].gid if page else cursor
        async with asyncio.timeout(15):  # the other instance's last events: once the safe point passes them
            while len(seen) < len(written):
                page = await one.list_inbox_events("alice", cursor, 4)
                seen += [(e.thread_id, e.seq) for e in page]
                cursor = page[-1].gid if page else cursor
                if not page:
                    await asyncio.sleep(0.02)
        assert sorted(seen) == sorted(written) and len(seen) == len(set(seen))
        for thread, _, _ in threads:  # each thread's events in its own order
            assert [s for t, s in seen if t == thread.id] == sorted(s for t, s in seen if t == thread.id)
    finally:
        await one.close()
        await two.close()
