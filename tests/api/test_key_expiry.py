"""Keys that expire: the key a browser gets by redeeming a sign-in link ends after AITP_SIGN_IN_KEY_DAYS.

Specification: a key past its `expires_at` is refused with 401 `expired_api_key` and a sentence saying to sign
in again; keys list their `expires_at` (null: never); a sign-in link's key expires the configured number of days
after it was made, whoever made the link (an admin's included); a stream held by a key that expires ends as a
revoked key's does, naming the reason; a store written before keys could expire opens, and its keys never do.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx

from aitp.services.keys import EXPIRED_KEYS_KEPT, create_key
from aitp.store import Store, open_store
from aitp.testing import ServerProcess
from tests.api.test_revocation import admin_client, close_of, sse_until_end
from tests.conftest import API
from tests.support.live import ws_connect

EXPIRED = "the API key has expired"
DAY = 86_400


async def test_a_key_past_its_expiry_is_refused_with_its_own_code(api: API, store: Store) -> None:
    lapsed = await create_key(store, "alice", lifetime=-1)
    current = await create_key(store, "alice", lifetime=3600)
    lasting = await create_key(store, "alice")

    refused = await api.client(lapsed.secret).get("/threads")
    assert refused.status_code == 401
    error = refused.json()["error"]
    assert error["code"] == "expired_api_key" and "sign in again" in error["message"]
    for created in (current, lasting):
        assert (await api.client(created.secret).get("/threads")).status_code == 200

    listed = {key["id"]: key["expires_at"] for key in (await api.admin.get("/keys")).json()["data"]}
    assert listed[lapsed.record.id] == lapsed.record.created_at - 1
    assert listed[current.record.id] == current.record.created_at + 3600
    assert listed[lasting.record.id] is None


async def test_a_sign_in_deletes_the_keys_that_expired_over_a_week_ago(api: API, store: Store) -> None:
    """Sign-in links make a key each time: the expired ones go, a week after they expired (until then their
    holder is told to sign in again, not that the key is unknown)."""
    old = await create_key(store, "alice", lifetime=-(EXPIRED_KEYS_KEPT + 60))
    recent = await create_key(store, "alice", lifetime=-60)
    lasting = await create_key(store, "alice")
    code = (await api.admin.post("/sign-in-codes", json={"actor": "alice"})).json()["code"]
    signed_in = await api.client(None).post("/sign-in", json={"code": code})
    assert signed_in.status_code == 200, signed_in.text

    listed = {key["id"] for key in (await api.admin.get("/keys")).json()["data"]}
    assert old.record.id not in listed
    assert {recent.record.id, lasting.record.id, signed_in.json()["id"]} <= listed
    assert (await api.client(old.secret).get("/threads")).json()["error"]["code"] == "invalid_api_key"
    assert (await api.client(recent.secret).get("/threads")).json()["error"]["code"] == "expired_api_key"


async def test_a_sign_in_links_key_expires_after_the_configured_days(api: API) -> None:
    api.settings_override(sign_in_key_days=2)
    alice = await api.actor("alice")
    for maker, body in ((alice, None), (api.admin, {"actor": "bob"}), (api.admin, None)):
        code = (await maker.post("/sign-in-codes", json=body)).json()["code"]
        signed_in = await api.client(None).post("/sign-in", json={"code": code})
        assert signed_in.status_code == 200, signed_in.text
        key = signed_in.json()
        assert key["expires_at"] == key["created_at"] + 2 * DAY
        assert (await api.client(key["key"]).get("/actors/me")).status_code == 200


async def test_a_stream_held_by_a_key_that_expires_ends_naming_the_reason(
    serve_backend: Callable[..., ServerProcess], store: Store
) -> None:
    server = serve_backend(AITP_RATE_LIMIT="0")
    async with admin_client(server) as admin:
        tid = (await admin.post("/threads", json={"actors": [{"id": "alice"}]})).json()["id"]
    alice = await create_key(store, "alice", lifetime=3)  # made in the store, as `aitp keys create` does
    async with contextlib.AsyncExitStack() as stack:
        ws = await stack.enter_async_context(ws_connect(server.base_url, f"/threads/{tid}/events/ws", alice.secret))
        opened = asyncio.Event()
        sse = asyncio.create_task(sse_until_end(server, alice.secret, f"/threads/{tid}/events", opened))
        await asyncio.wait_for(opened.wait(), 10)

        assert await asyncio.wait_for(close_of(ws), 15) == (4401, EXPIRED)
        frames = await asyncio.wait_for(sse, 15)
        assert frames[-1] == {"event": "end", "data": {"reason": EXPIRED}}
    async with httpx.AsyncClient(base_url=server.base_url + "/v1") as client:
        refused = await client.get("/threads", headers={"Authorization": f"Bearer {alice.secret}"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "expired_api_key")


async def test_a_store_written_before_keys_could_expire_opens_and_its_keys_never_expire(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "store_v1" / "store.sqlite3", path)
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        old = await store.keys.all()
        assert old and all(key.expires_at is None for key in old)
        created = await create_key(store, "alice", lifetime=60)
        assert (await store.keys.find(created.record.hash)) == created.record
    finally:
        await store.close()
