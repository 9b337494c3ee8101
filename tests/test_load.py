"""Load: many concurrent writers on one thread while live subscribers follow it, on a real server.

Specification: under load no POST fails with a 5xx; every acknowledged message is stored exactly once;
every subscriber (WebSocket and SSE alike) receives every message exactly once, in the thread's seq order,
which is also the order of GET messages and of the event log; each writer's messages keep its own order.

CI runs a reduced size (40 writers x 10 messages, 20 subscribers); AITP_LOAD_WRITERS, AITP_LOAD_MESSAGES
and AITP_LOAD_SUBSCRIBERS set any size (`bench/load.py` runs the full 200 x 50 and prints figures).
On SQLite only: the MongoDB stand-in the tests use fails overlapping transactions, so concurrent writers
there measure the stand-in, not the service.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aitp.testing import ServerProcess
from tests.support.load import LoadShape, run_load, start_load_server

SHAPE = LoadShape.from_env(LoadShape(writers=40, messages=10, subscribers=20))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_load_server(f"sqlite:///{tmp_path / 'load.db'}", tmp_path / "serve.log")
    try:
        yield process
    finally:
        process.stop()


async def test_concurrent_writers_and_live_subscribers_lose_nothing(server: ServerProcess) -> None:
    result = await run_load(server.base_url, SHAPE)

    assert [p.error for p in result.server_errors()] == []
    assert [p.error for p in result.posts if not p.acknowledged] == []
    assert len(result.stored) == SHAPE.total
    assert sorted(m.message_id for m in result.stored) == sorted(str(p.message_id) for p in result.acknowledged())
    assert result.duplicated() == 0
    assert result.lost() == 0
    assert result.reordered_subscribers() == []
    assert result.event_order == [m.message_id for m in result.stored]
    assert result.reordered_writers() == []
    author = {p.text: f"writer-{p.writer:03d}.load" for p in result.posts}
    assert all(m.actor == author[m.text] for m in result.stored)
