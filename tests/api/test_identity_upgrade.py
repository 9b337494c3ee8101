"""A store written before identities (tests/fixtures/store_v2, by the code of e71441a) opens and serves: every
actor it knew (in a thread, named only by one, holding a key, with a profile) becomes a local actor that anyone
may contact, and its read routes answer as they did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx

from aitp.app import create_app
from aitp.config import Settings
from aitp.store import open_store
from aitp.store.identities import ANYONE, LOCAL
from tests.conftest import Backend

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store_v2"
ADMIN_KEY = "aitp_fixture_admin_key"


async def test_a_sqlite_store_written_before_identities_opens_and_serves(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    shutil.copy(FIXTURE / "store.sqlite3", path)
    expected = json.loads((FIXTURE / "expected.json").read_text())
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        known = await store.identities.many(["alice", "shop", "carol", "dave", "never-seen"])
        assert sorted(known) == ["alice", "carol", "dave", "shop"]
        assert {(i.kind, i.contact_policy) for i in known.values()} == {(LOCAL, ANYONE)}
        app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)  # default: verified
        transport = httpx.ASGITransport(app=app)
        alice = httpx.AsyncClient(
            transport=transport,
            base_url="http://aitp.test/v1",
            headers={"Authorization": f"Bearer {expected['keys']['alice']}"},
        )
        thread = expected["thread"]
        listed = (await alice.get("/threads?order=asc")).json()
        # threads written before turn budgets: none used, the server's budget (a field added since)
        for old in listed["data"]:
            assert old.pop("turns") == {"budget": None, "persons": [], "agent_turns": 0, "paused": False}
        assert listed == expected["answers"]["alice GET /threads"]
        assert (await alice.get(f"/threads/{thread}/actors")).json() == expected["answers"]["alice GET actors"]
        messages = (await alice.get(f"/threads/{thread}/messages?order=asc")).json()
        assert messages == expected["answers"]["alice GET messages"]
        shop = httpx.AsyncClient(
            transport=transport,
            base_url="http://aitp.test/v1",
            headers={"Authorization": f"Bearer {expected['keys']['shop']}"},
        )
        answered = await shop.post(f"/threads/{thread}/messages", json={"content": "still here"})
        assert answered.status_code == 200, answered.text
        assert (await alice.get(f"/threads/{thread}")).json()["turns"]["agent_turns"] == 1
        # and it serves on: carol, who never had a key, can still be named; a stranger cannot
        created = await alice.post("/threads", json={"actors": [{"id": "carol"}, {"id": "shop"}]})
        assert created.status_code == 200, created.text
        refused = await alice.post("/threads", json={"actors": [{"id": "never-seen"}]})
        assert refused.json()["error"]["code"] == "unknown_actor"
        profile = (await alice.get(f"/threads/{thread}/profiles")).json()["data"]
        assert {p["actor"]: p["verified"] for p in profile} == {
            "alice": False,
            "shop": False,
            "carol": False,
            "dave": False,
        }
        # a second open changes nothing (the upgrade runs once)
        await store.close()
        await store.open()
        assert (await store.identities.get("carol")) == known["carol"]
    finally:
        await store.close()


async def test_a_mongo_store_written_before_identities_gives_every_known_actor_a_local_identity(
    mongo_backend: Backend,
) -> None:
    store = open_store(mongo_backend.url)
    await store.open()
    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY, contact_policy="anyone"), store=store)
    transport = httpx.ASGITransport(app=app)
    admin = httpx.AsyncClient(
        transport=transport, base_url="http://aitp.test/v1", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    key = (await admin.post("/keys", json={"actor": "alice"})).json()["key"]
    await admin.post("/threads", json={"actors": [{"id": "carol"}, {"id": "alice"}]})
    # as a store written before identities: no identities collection at all
    await store.engine.db.drop_collection("actor_identities")  # type: ignore[attr-defined]
    await store.close()

    reopened = open_store(mongo_backend.url)
    await reopened.open()
    try:
        known = await reopened.identities.many(["alice", "carol", "admin", "bob"])
        assert sorted(known) == ["admin", "alice", "carol"]  # the admin made the thread: it is one of its actors
        assert {(i.kind, i.contact_policy) for i in known.values()} == {(LOCAL, ANYONE)}
        app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=reopened)
        alice = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://aitp.test/v1",
            headers={"Authorization": f"Bearer {key}"},
        )
        assert (await alice.post("/threads", json={"actors": [{"id": "carol"}]})).status_code == 200
    finally:
        await reopened.close()
