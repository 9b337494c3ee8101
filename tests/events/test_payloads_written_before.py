"""A store written before the event log held protocol-neutral records (its payloads were OpenAI Threads
objects) opens and answers every read exactly as the version that wrote it did, and takes new writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from aitp.app import create_app
from aitp.config import Settings
from aitp.store import open_store

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store_v1"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text())


@pytest.fixture
async def old_store(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "store.sqlite3"
    shutil.copy(FIXTURE / "store.sqlite3", path)
    store = open_store(f"sqlite:///{path}")
    await store.open()
    app = create_app(Settings(store_url="unused://", admin_key="unused-admin-key"), store=store)
    transport = httpx.ASGITransport(app=app)

    def client(actor: str) -> httpx.AsyncClient:
        key = EXPECTED["keys"][actor]
        return httpx.AsyncClient(
            transport=transport, base_url="http://aitp.test/v1", headers={"Authorization": f"Bearer {key}"}
        )

    try:
        yield client
    finally:
        await store.close()


@pytest.mark.parametrize("request_line", sorted(EXPECTED["answers"]))
async def test_every_read_answers_as_the_version_that_wrote_the_store(old_store, request_line: str) -> None:  # type: ignore[no-untyped-def]
    actor, _, path = request_line.split(" ", 2)
    response = await old_store(actor).get(path)
    assert response.status_code == 200, response.text
    assert _without_turns(response.json()) == EXPECTED["answers"][request_line]


def _without_turns(answer: Any) -> Any:
    """A thread (or a list of them) as the old version answered it: `turns` was added since, and an old
    thread has none used."""
    threads = answer.get("data", [answer]) if isinstance(answer, dict) else []
    for thread in threads:
        if isinstance(thread, dict) and thread.get("object") == "thread":
            assert thread.pop("turns") == {"budget": None, "persons": [], "agent_turns": 0, "paused": False}
    return answer


async def test_new_events_follow_old_ones_in_the_same_shapes(old_store) -> None:  # type: ignore[no-untyped-def]
    thread_id = EXPECTED["threads"][0]
    alice = old_store("alice")
    old_page = EXPECTED["answers"][f"alice GET /threads/{thread_id}/events?limit=1000"]
    posted = await alice.post(f"/threads/{thread_id}/messages", json={"content": "after the upgrade"})
    assert posted.status_code == 200, posted.text
    renamed = await alice.post(f"/threads/{thread_id}", json={"metadata": {"topic": "z"}})
    assert renamed.status_code == 200, renamed.text

    page = (await alice.get(f"/threads/{thread_id}/events", params={"after": old_page["last_seq"]})).json()
    created, updated = page["data"]
    assert created["type"] == "thread.message.created" and created["data"] == posted.json()
    assert updated["type"] == "thread.updated" and updated["data"] == renamed.json()
    old_message = next(e for e in old_page["data"] if e["type"] == "thread.message.created")["data"]
    old_thread = next(e for e in old_page["data"] if e["type"] == "thread.updated")["data"]
    assert set(created["data"]) == set(old_message)
    assert set(updated["data"]) == {*old_thread, "turns"}  # turns: added since
