"""No API key in a URL: a WebSocket authenticates with a one-time ticket, and the web UI's sign-in link carries
a one-time code that is exchanged for a new key. Each code works once, for its purpose, and only while the key
that made it is valid."""

from __future__ import annotations

import json

import httpx
import pytest
import websockets

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API
from tests.test_wire_schemas import assert_valid


async def test_a_sign_in_code_is_exchanged_once_for_a_new_key_of_its_actor(api: API) -> None:
    ada = await api.actor("ada.near")
    issued = await ada.post("/sign-in-codes", json={})
    assert issued.status_code == 200, issued.text
    assert_valid("sign-in-code", issued.json())
    code = issued.json()["code"]

    anonymous = api.client(None)
    signed_in = await anonymous.post("/sign-in", json={"code": code})
    again = await anonymous.post("/sign-in", json={"code": code})

    assert signed_in.status_code == 200, signed_in.text
    assert_valid("signed-in", signed_in.json())
    new_key = signed_in.json()["key"]
    me = (await api.client(new_key).get("/actors/me")).json()
    assert (me["id"], me["admin"]) == ("ada.near", False)
    assert again.status_code == 401 and again.json()["error"]["code"] == "invalid_sign_in_code"


async def test_an_admin_makes_a_sign_in_link_for_a_customer_and_an_actor_only_for_itself(api: API) -> None:
    issued = await api.admin.post("/sign-in-codes", json={"actor": "ada.near", "expires_in": 3600})
    eve = await api.actor("eve.near")
    refused = await eve.post("/sign-in-codes", json={"actor": "ada.near"})
    too_long = await api.admin.post("/sign-in-codes", json={"expires_in": 30 * 24 * 3600})

    assert issued.json()["actor"] == "ada.near"
    key = (await api.client(None).post("/sign-in", json={"code": issued.json()["code"]})).json()["key"]
    me = (await api.client(key).get("/actors/me")).json()
    assert (me["id"], me["admin"]) == ("ada.near", False)
    assert refused.status_code == 403
    assert too_long.status_code == 400 and too_long.json()["error"]["param"] == "expires_in"


async def test_a_code_of_a_revoked_key_signs_nobody_in(api: API) -> None:
    created = (await api.admin.post("/keys", json={"actor": "ada.near"})).json()
    code = (await api.client(created["key"]).post("/sign-in-codes", json={})).json()["code"]
    await api.admin.delete(f"/keys/{created['id']}")

    refused = await api.client(None).post("/sign-in", json={"code": code})

    assert refused.status_code == 401


async def test_a_ticket_is_not_a_sign_in_code(api: API) -> None:
    ada = await api.actor("ada.near")
    ticket = (await ada.post("/tickets")).json()
    assert_valid("websocket-ticket", ticket)

    refused = await api.client(None).post("/sign-in", json={"code": ticket["ticket"]})

    assert refused.status_code == 401


# ------------------------------------------------------------------------------- over a real socket


def _ws(server: ServerProcess, query: str) -> str:
    return server.base_url.replace("http://", "ws://") + "/v1/actors/me/events/ws?" + query


async def test_a_websocket_opens_with_a_ticket_once_and_posts_over_it(live_server: ServerProcess) -> None:
    async with httpx.AsyncClient(base_url=live_server.base_url + "/v1") as http:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        key = (await http.post("/keys", json={"actor": "ada.near"}, headers=admin)).json()["key"]
        ada = {"Authorization": f"Bearer {key}"}
        thread = (await http.post("/threads", json={}, headers=ada)).json()
        ticket = (await http.post("/tickets", headers=ada)).json()["ticket"]

        async with websockets.connect(_ws(live_server, f"after=0&ticket={ticket}")) as socket:
            post = {"op": "post", "ref": 1, "thread_id": thread["id"], "message": {"content": "over a ticket"}}
            await socket.send(json.dumps(post))
            frames = [json.loads(await socket.recv()) for _ in range(2)]  # the reply and the event, in any order
            assert [f["op"] for f in frames if "op" in f] == ["posted"]
        stored = (await http.get(f"/threads/{thread['id']}/messages", headers=ada)).json()["data"]
        assert [m["content"][0]["text"]["value"] for m in stored] == ["over a ticket"]

        # used: the same ticket opens nothing again
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with websockets.connect(_ws(live_server, f"after=0&ticket={ticket}")) as socket:
                await socket.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
