"""Customer sessions through the API: a shop asks for a short-lived key for a customer it signed in on its own
website (`POST /v1/customer_sessions`); that customer talks with the shop only, on every face, and has no
settings of its own. And the shop's brand colour (`accent_color`), which its customers' chat shows."""

from __future__ import annotations

import ast
import os
import subprocess
import time

import httpx
import pytest

from aitp.identity import implicit_account_of, near_keypair
from aitp.pytest_plugin import AitpServer
from aitp.services.customer_sessions import ANONYMOUS_BURST
from tests.conftest import API
from tests.support.docs import ROOT, command, marked_blocks
from tests.support.identities import sign_in_near
from tests.test_wire_schemas import assert_valid

SHOP = "shop-3.near"


def error(response: httpx.Response, status: int) -> tuple[str, str | None]:
    """The refusal's code and param, once its status is checked."""
    assert response.status_code == status, response.text
    body = response.json()["error"]
    return body["code"], body["param"]


# --------------------------------------------------------------------------- the shop's brand colour


async def test_a_shop_sets_its_accent_color_and_its_customers_see_it(api: API) -> None:
    shop = await api.actor(SHOP)
    put = await shop.put("/actors/me/profile", json={"display_name": "Sunny Socks", "accent_color": " #1A7f5a "})
    assert put.status_code == 200, put.text
    assert put.json()["accent_color"] == "#1A7f5a"  # trimmed, kept as written
    assert_valid("profile", put.json())
    assert (await shop.get("/actors/me/profile")).json()["accent_color"] == "#1A7f5a"
    assert (await api.admin.get(f"/actors/{SHOP}")).json()["profile"]["accent_color"] == "#1A7f5a"

    customer = api.client((await shop.post("/customer_sessions", json={"customer": "4821"})).json()["key"])
    thread = (await customer.post("/threads", json={"actors": [{"id": SHOP}]})).json()
    listed = (await customer.get(f"/threads/{thread['id']}/profiles")).json()
    assert_valid("profile-list", listed)
    colors = {p["actor"]: p["accent_color"] for p in listed["data"]}
    assert colors == {"4821@shop-3.near": None, SHOP: "#1A7f5a"}

    # a PUT is the whole record: left out, the colour is cleared
    assert (await shop.put("/actors/me/profile", json={"display_name": "Sunny Socks"})).json()["accent_color"] is None


@pytest.mark.parametrize("color", ["1a7f5a", "#1a7f5", "#1a7f5a0", "#gggggg", "red", "#1a7f5a;x", 7])
async def test_an_accent_color_is_hash_and_six_hex_digits(api: API, color: object) -> None:
    shop = await api.actor(SHOP)
    refused = await shop.put("/actors/me/profile", json={"accent_color": color})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "accent_color"


# --------------------------------------------------------------------------- minting


async def mint(api: API, shop: httpx.AsyncClient, customer: str = "4821", **fields: object) -> httpx.AsyncClient:
    """A client of the customer's session, minted by `shop`."""
    minted = await shop.post("/customer_sessions", json={"customer": customer, **fields})
    assert minted.status_code == 200, minted.text
    return api.client(minted.json()["key"])


async def test_a_shop_mints_a_short_lived_key_for_its_customer(api: API) -> None:
    shop = await api.actor(SHOP)
    before = int(time.time())
    minted = await shop.post("/customer_sessions", json={"customer": "4821", "display_name": "Ada Lovelace"})

    assert minted.status_code == 200, minted.text
    session = minted.json()
    assert set(session) == {"object", "actor", "shop", "key", "expires_at"}
    assert (session["object"], session["actor"], session["shop"]) == ("customer_session", "4821@shop-3.near", SHOP)
    assert session["key"].startswith("aitp_")
    assert before + 3600 <= session["expires_at"] <= int(time.time()) + 3600
    customer = api.client(session["key"])
    me = (await customer.get("/actors/me")).json()
    # what holds the key to its shop is its scope, not the shape of its id
    assert (me["id"], me["admin"], me["scopes"]) == ("4821@shop-3.near", False, ["customer_session"])
    assert (await customer.get("/threads")).status_code == 200
    assert (await customer.post("/tickets")).status_code == 200  # the live stream's WebSocket ticket
    # the shop named its customer; the server knows it as a customer the shop vouches for
    profile = (await customer.get("/actors/me/profile")).json()
    assert profile["display_name"] == "Ada Lovelace" and profile["verified"] is False
    verification = profile["verification"]
    assert verification["kind"] == "customer" and verification["vouched_by"] == SHOP
    assert verification["identifier"] == "4821@shop-3.near" and verification["key_id"] is None
    assert before <= verification["verified_at"] <= int(time.time())
    seen = (await api.admin.get("/actors/4821@shop-3.near")).json()
    assert (seen["kind"], seen["verified"], seen["verification"]) == ("customer", False, verification)
    assert_valid("actor-identity", seen)
    listed = {key["id"]: key for key in (await api.admin.get("/keys")).json()["data"]}
    assert [k["expires_at"] for k in listed.values() if k["actor"] == "4821@shop-3.near"] == [session["expires_at"]]


async def test_a_session_lasts_expires_in_seconds_from_a_minute_to_a_day(api: API) -> None:
    shop = await api.actor(SHOP)
    for seconds in (60, 86_400):
        session = (await shop.post("/customer_sessions", json={"customer": "c1", "expires_in": seconds})).json()
        assert int(time.time()) + seconds - 2 <= session["expires_at"] <= int(time.time()) + seconds
    for bad in (59, 86_401, 0, -5, "3600", 3600.5):
        refused = await shop.post("/customer_sessions", json={"customer": "c1", "expires_in": bad})
        assert error(refused, 400)[1] == "expires_in", bad


async def test_a_second_session_keeps_the_name_unless_the_shop_gives_another(api: API) -> None:
    shop = await api.actor(SHOP)
    await mint(api, shop, display_name="Ada Lovelace")
    again = await mint(api, shop)
    assert (await again.get("/actors/me/profile")).json()["display_name"] == "Ada Lovelace"
    renamed = await mint(api, shop, display_name="Ada King")
    assert (await renamed.get("/actors/me/profile")).json()["display_name"] == "Ada King"


async def test_a_shop_cannot_name_its_customer_as_a_verified_actor(api: API) -> None:
    private, public = near_keypair()
    account = implicit_account_of(public)
    wallet = api.client(await sign_in_near(api.client(None), account, private))
    assert (await wallet.put("/actors/me/profile", json={"display_name": "Sunny Socks"})).status_code == 200
    shop = await api.actor(SHOP)

    taken = await shop.post("/customer_sessions", json={"customer": "4821", "display_name": "SUNNY  socks"})

    assert error(taken, 409) == ("display_name_taken", "display_name")
    assert (await api.admin.get("/actors/4821@shop-3.near")).status_code == 404  # nothing was written
    # two customers may share a name: a customer's name proves nothing, so it is not kept from others
    await mint(api, shop, "1", display_name="Ada Lovelace")
    await mint(api, shop, "2", display_name="Ada Lovelace")


@pytest.mark.parametrize(
    "customer", ["", "-4821", ".x", "a b", "ada@example.com", "x" * 65, "caf\u00e9", "4821/../admin", "a\n"]
)
async def test_a_customer_id_of_bad_shape_is_refused_naming_customer(api: API, customer: str) -> None:
    shop = await api.actor(SHOP)
    assert error(await shop.post("/customer_sessions", json={"customer": customer}), 400)[1] == "customer"
    by_admin = await api.admin.post("/customer_sessions", json={"customer": customer, "shop": SHOP})
    assert error(by_admin, 400)[1] == "customer"


async def test_an_admin_names_the_shop_and_a_shop_only_its_own(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("other-shop")

    by_admin = await api.admin.post("/customer_sessions", json={"customer": "7", "shop": SHOP})
    assert by_admin.status_code == 200, by_admin.text
    assert by_admin.json()["actor"] == "7@shop-3.near"
    assert error(await api.admin.post("/customer_sessions", json={"customer": "7"}), 400)[1] == "shop"
    unknown = await api.admin.post("/customer_sessions", json={"customer": "7", "shop": "nobody-here"})
    assert error(unknown, 404) == ("actor_not_found", "shop")
    assert error(await api.admin.post("/customer_sessions", json={"customer": "7", "shop": "a@b"}), 400)[1] == "shop"
    assert error(await shop.post("/customer_sessions", json={"customer": "7", "shop": "other-shop"}), 403)[1] == "shop"
    assert (await shop.post("/customer_sessions", json={"customer": "7", "shop": SHOP})).status_code == 200
    assert (await api.client(None).post("/customer_sessions", json={"customer": "7"})).status_code == 401


async def test_a_customer_key_cannot_mint_sessions(api: API) -> None:
    customer = await mint(api, await api.actor(SHOP))
    for body in ({"customer": "4822"}, {"customer": "4821"}, {"customer": "x", "shop": SHOP}):
        assert error(await customer.post("/customer_sessions", json=body), 403)[0] == "customer_session_not_allowed"


async def test_a_retried_mint_with_an_idempotency_key_does_not_show_the_key_twice(api: API) -> None:
    shop = await api.actor(SHOP)
    headers = {"Idempotency-Key": "mint-1"}
    first = await shop.post("/customer_sessions", json={"customer": "4821"}, headers=headers)
    again = await shop.post("/customer_sessions", json={"customer": "4821"}, headers=headers)
    assert first.status_code == 200 and first.json()["key"].startswith("aitp_")
    assert again.headers.get("idempotent-replayed") == "true"
    assert first.json()["key"] not in again.text


async def test_a_session_key_past_its_expiry_is_refused(api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    import aitp.auth

    customer = await mint(api, await api.actor(SHOP), expires_in=60)

    class Later:
        @staticmethod
        def time() -> float:
            return time.time() + 61

    monkeypatch.setattr(aitp.auth, "time", Later)
    refused = await customer.get("/threads")
    assert error(refused, 401)[0] == "expired_api_key"


# --------------------------------------------------------------------------- with its shop only, on every face


async def test_a_customer_talks_with_its_shop_and_nobody_else_on_the_threads_face(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("eve.near")
    customer = await mint(api, shop)

    created = await customer.post("/threads", json={"actors": [{"id": SHOP}]})
    assert created.status_code == 200, created.text
    thread = created.json()["id"]
    assert (await customer.post(f"/threads/{thread}/messages", json={"content": "Hello"})).status_code == 200
    texts = [m["content"][0]["text"]["value"] for m in (await shop.get(f"/threads/{thread}/messages")).json()["data"]]
    assert texts == ["Hello"]

    refused = await customer.post("/threads", json={"actors": [{"id": SHOP}, {"id": "eve.near"}]})
    assert error(refused, 403) == ("outside_customer_session", "actors[1].id")
    # an actor nobody knows is refused the same way: a customer learns nothing of who exists
    refused = await customer.post("/threads", json={"actors": [{"id": "nobody-here"}]})
    assert error(refused, 403) == ("outside_customer_session", "actors[0].id")
    in_metadata = await customer.post("/threads", json={"metadata": {"actors": '[{"id": "eve.near"}]'}})
    assert error(in_metadata, 403) == ("outside_customer_session", "metadata.actors[0].id")
    added = await customer.post(f"/threads/{thread}/actors", json={"id": "eve.near"})
    assert error(added, 403) == ("outside_customer_session", "id")
    another = await customer.post("/threads", json={"actors": [{"id": "9@shop-3.near"}]})  # a fellow customer
    assert error(another, 403) == ("outside_customer_session", "actors[0].id")
    assert [t["id"] for t in (await customer.get("/threads")).json()["data"]] == [thread]


async def test_a_customer_opens_no_thread_outside_its_shop_on_the_aitp_t01_face(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("eve.near")
    customer = await mint(api, shop)

    ok = await customer.post("/thread", json={"metadata": {"actors": '[{"id": "shop-3.near"}]'}})
    assert ok.status_code == 200, ok.text
    refused = await customer.post("/thread", json={"metadata": {"actors": '[{"id": "eve.near"}]'}})
    assert error(refused, 403) == ("outside_customer_session", "metadata.actors[0].id")


async def test_a_customer_opens_no_conversation_outside_its_shop(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("eve.near")
    customer = await mint(api, shop)

    ok = await customer.post("/conversations", json={"metadata": {"actors": '[{"id": "shop-3.near"}]'}})
    assert ok.status_code == 200, ok.text
    refused = await customer.post("/conversations", json={"metadata": {"actors": '[{"id": "eve.near"}]'}})
    assert error(refused, 403) == ("outside_customer_session", "metadata.actors[0].id")


def a2a_send(text: str) -> dict[str, object]:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}


async def test_a_customer_reaches_no_a2a_agent_but_its_shop(api: API) -> None:
    shop = await api.actor(SHOP)
    eve = await api.actor("eve.near")
    assert (await shop.put(f"/../a2a/{SHOP}/settings", json={"serve": True})).status_code == 200
    assert (await eve.put("/../a2a/eve.near/settings", json={"serve": True})).status_code == 200
    customer = await mint(api, shop)
    headers = {"A2A-Version": "1.0"}

    sent = (await customer.post(f"/../a2a/{SHOP}", json=a2a_send("Hi"), headers=headers)).json()
    assert "result" in sent, sent
    refused = (await customer.post("/../a2a/eve.near", json=a2a_send("Hi"), headers=headers)).json()
    assert "error" in refused, refused
    (info,) = [d for d in refused["error"].get("data", []) if d["@type"].endswith("google.rpc.ErrorInfo")]
    assert info["metadata"]["aitp_code"] == "outside_customer_session"
    assert (await eve.get("/threads")).json()["data"] == []


async def test_a_domain_shops_customer_reaches_its_agents_under_it_whatever_their_policy(api: API) -> None:
    api.settings_override(contact_policy="nobody")
    shop_id = "sunnysocks.example"
    shop = await api.actor(shop_id)
    await api.actor("sunnysocks.example/sales")
    for lookalike in ("sunnysocks.example.evil.com", "sunnysocks.examplex/sales", "evil.com/sunnysocks.example"):
        await api.actor(lookalike)
    customer = await mint(api, shop)
    stranger = await api.actor("walk-in")

    both = await customer.post("/threads", json={"actors": [{"id": shop_id}, {"id": "sunnysocks.example/sales"}]})
    assert both.status_code == 200, both.text  # the shop vouched for it: its "nobody" policy lets it in
    assert error(await stranger.post("/threads", json={"actors": [{"id": shop_id}]}), 403)[0] == "contact_refused"
    for lookalike in ("sunnysocks.example.evil.com", "sunnysocks.examplex/sales", "evil.com/sunnysocks.example"):
        refused = await customer.post("/threads", json={"actors": [{"id": lookalike}]})
        assert error(refused, 403) == ("outside_customer_session", "actors[0].id"), lookalike


async def test_a_local_shops_customer_reaches_the_shop_only_not_ids_under_it(api: API) -> None:
    shop = await api.actor("corner-shop")
    await api.actor("corner-shop/till")
    customer = await mint(api, shop)
    refused = await customer.post("/threads", json={"actors": [{"id": "corner-shop/till"}]})
    assert error(refused, 403) == ("outside_customer_session", "actors[0].id")


# --------------------------------------------------------------------------- only its shop brings it in


async def test_nobody_but_its_shop_brings_a_customer_into_a_thread(api: API) -> None:
    shop = await api.actor(SHOP)
    eve = await api.actor("eve.near")
    await mint(api, shop)
    customer_id = "4821@shop-3.near"

    refused = await eve.post("/threads", json={"actors": [{"id": customer_id}]})
    assert error(refused, 403) == ("contact_refused", "actors[0].id")
    own = (await eve.post("/threads", json={})).json()
    assert error(await eve.post(f"/threads/{own['id']}/actors", json={"id": customer_id}), 403)[0] == (
        "contact_refused"
    )
    other_customer = await mint(api, shop, "9")
    assert error(await other_customer.post(f"/threads/{own['id']}/actors", json={"id": customer_id}), 404)
    by_shop = await shop.post("/threads", json={"actors": [{"id": customer_id}]})
    assert by_shop.status_code == 200, by_shop.text
    assert (await api.admin.post("/threads", json={"actors": [{"id": customer_id}]})).status_code == 200


async def test_an_actor_an_admin_named_with_an_at_stays_local_and_no_shop_can_take_it(api: API) -> None:
    """A local actor whose id reads as `<customer>@<shop>` (an admin named `bob@shop-3.near` before customers
    existed, or an e-mail-like id) is not the shop's: the shop cannot mint a session of it (it would read the
    actor's threads), and the actor's own key keeps every right a local actor has."""
    shop = await api.actor(SHOP)
    await api.actor("eve.near")
    bob = api.client(await api.key_for("bob@shop-3.near"))
    secret = (await bob.post("/threads", json={"messages": ["my order #77"]})).json()
    seen = (await api.admin.get("/actors/bob@shop-3.near")).json()
    assert seen["kind"] == "local"

    taken = await shop.post("/customer_sessions", json={"customer": "bob"})

    assert error(taken, 409) == ("actor_exists", "customer")
    assert (await api.admin.get("/actors/bob@shop-3.near")).json()["kind"] == "local"
    # bob is held to no shop: it opens threads with anyone, sets its profile
    assert (await bob.post("/threads", json={"actors": [{"id": "eve.near"}]})).status_code == 200
    assert (await bob.put("/actors/me/profile", json={"display_name": "Bob"})).status_code == 200
    assert (await bob.get(f"/threads/{secret['id']}/messages")).status_code == 200


async def test_an_admins_key_of_a_customer_is_held_to_its_shop(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("eve.near")
    await mint(api, shop, "55")
    made = api.client(await api.key_for("55@shop-3.near"))
    assert error(await made.post("/threads", json={"actors": [{"id": "eve.near"}]}), 403)[0] == (
        "outside_customer_session"
    )
    assert (await made.post("/threads", json={"actors": [{"id": SHOP}]})).status_code == 200


# --------------------------------------------------------------------------- no settings of its own


async def test_a_customer_has_no_profile_policy_links_webhooks_or_a2a_settings_of_its_own(api: API) -> None:
    shop = await api.actor(SHOP)
    customer = await mint(api, shop, display_name="Ada Lovelace")
    me = "4821@shop-3.near"

    profile = await customer.put("/actors/me/profile", json={"display_name": "Sunny Socks"})
    assert error(profile, 403) == ("customer_profile_read_only", None)
    assert "shop sets the customer's name" in profile.json()["error"]["message"]
    assert error(await customer.put(f"/actors/{me}/profile", json={}), 403)[0] == "customer_profile_read_only"
    assert (await customer.get("/actors/me/profile")).json()["display_name"] == "Ada Lovelace"

    policy = (await customer.get("/actors/me/contact_policy")).json()
    assert (policy["policy"], policy["allow"]) == ("allow_list", [SHOP])
    changed = await customer.put("/actors/me/contact_policy", json={"policy": "anyone"})
    assert error(changed, 403) == ("customer_not_allowed", "policy")

    assert error(await customer.post("/sign-in-codes"), 403)[0] == "customer_not_allowed"
    assert error(await customer.post("/sign-in-codes", json={"expires_in": 600}), 403)[0] == "customer_not_allowed"
    hook = {"url": "https://hooks.example.com/aitp", "event_types": ["thread.message.created"]}
    assert error(await customer.post("/webhooks", json=hook), 403)[0] == "customer_not_allowed"
    a2a = await customer.put(f"/../a2a/{me}/settings", json={"serve": True})
    assert a2a.status_code == 403, a2a.text
    assert (await customer.get("/webhooks")).json()["data"] == []

    # an admin keeps full power over a customer, as over anyone
    assert (await api.admin.put(f"/actors/{me}/profile", json={"display_name": "Ada L."})).status_code == 200


async def test_the_shop_itself_keeps_every_right_of_its_own(api: API) -> None:
    """The shop keeps every right of its own: a profile (with its accent colour), its policy, its webhooks."""
    shop = await api.actor(SHOP)
    await mint(api, shop)
    assert (await shop.put("/actors/me/profile", json={"accent_color": "#abcdef"})).status_code == 200
    assert (await shop.put("/actors/me/contact_policy", json={"policy": "verified"})).status_code == 200
    assert (await shop.post("/sign-in-codes")).status_code == 200
    assert (await shop.post("/customer_sessions", json={"customer": "1"})).status_code == 200


# --------------------------------------------------------------------------- anonymous visitors


async def test_a_shop_opts_in_to_anonymous_visitors(api: API) -> None:
    shop = await api.actor(SHOP)
    public = api.client(None)
    refused = await public.post("/customer_sessions/anonymous", json={"shop": SHOP})
    assert error(refused, 403) == ("anonymous_visitors_not_allowed", "shop")
    unknown = await public.post("/customer_sessions/anonymous", json={"shop": "nobody-here"})
    assert error(unknown, 403) == ("anonymous_visitors_not_allowed", "shop")  # the same: no shop list to probe

    assert (await shop.get("/customer_sessions/settings")).json() == {
        "object": "customer_session.settings",
        "shop": SHOP,
        "anonymous": False,
        "embed_origins": [],
        "frame_ancestors": [],
    }
    listed = await shop.put("/customer_sessions/settings", json={"embed_origins": ["https://shop.example"]})
    assert listed.json()["frame_ancestors"] == ["https://shop.example"]
    opted = await shop.put("/customer_sessions/settings", json={"anonymous": True})
    assert opted.status_code == 200, opted.text
    # a setting left out stays as it was
    assert (opted.json()["anonymous"], opted.json()["embed_origins"]) == (True, ["https://shop.example"])

    session = await public.post("/customer_sessions/anonymous", json={"shop": SHOP})
    assert session.status_code == 200, session.text
    visitor = session.json()
    assert visitor["actor"].startswith("anon-") and visitor["actor"].endswith("@shop-3.near")
    assert visitor["shop"] == SHOP and visitor["expires_at"] >= int(time.time()) + 3599
    anonymous = api.client(visitor["key"])
    assert (await anonymous.post("/threads", json={"actors": [{"id": SHOP}]})).status_code == 200
    await api.actor("eve.near")
    outside = await anonymous.post("/threads", json={"actors": [{"id": "eve.near"}]})
    assert error(outside, 403)[0] == "outside_customer_session"
    other = (await public.post("/customer_sessions/anonymous", json={"shop": SHOP})).json()
    assert other["actor"] != visitor["actor"]  # each visitor its own actor

    assert (await shop.put("/customer_sessions/settings", json={"anonymous": False})).json()["anonymous"] is False
    again = await public.post("/customer_sessions/anonymous", json={"shop": SHOP})
    assert error(again, 403)[0] == "anonymous_visitors_not_allowed"


async def test_only_the_shop_or_an_admin_sets_it(api: API) -> None:
    shop = await api.actor(SHOP)
    await api.actor("other-shop")
    customer = await mint(api, shop)
    assert error(await customer.put("/customer_sessions/settings", json={"anonymous": True}), 403)[0] == (
        "customer_not_allowed"
    )
    stranger = await shop.put("/customer_sessions/settings", json={"anonymous": True, "shop": "other-shop"})
    assert error(stranger, 403)[1] == "shop"
    by_admin = await api.admin.put("/customer_sessions/settings", json={"anonymous": True, "shop": "other-shop"})
    assert by_admin.json() == {
        "object": "customer_session.settings",
        "shop": "other-shop",
        "anonymous": True,
        "embed_origins": [],
        "frame_ancestors": [],
    }
    assert (await api.admin.get("/customer_sessions/settings", params={"shop": "other-shop"})).json()["anonymous"]
    assert error(await shop.put("/customer_sessions/settings", json={"anonymous": "yes"}), 400)[1] == "anonymous"


async def test_anonymous_sessions_are_limited_per_client_address(api: API) -> None:
    shop = await api.actor(SHOP)
    assert (await shop.put("/customer_sessions/settings", json={"anonymous": True})).status_code == 200
    public = api.client(None)
    for _ in range(ANONYMOUS_BURST):
        assert (await public.post("/customer_sessions/anonymous", json={"shop": SHOP})).status_code == 200
    refused = await public.post("/customer_sessions/anonymous", json={"shop": SHOP})
    assert error(refused, 429)[0] == "too_many_anonymous_sessions"
    assert int(refused.headers["retry-after"]) > 0
    other = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=api._app, client=("203.0.113.9", 4000)),  # noqa: SLF001 (another address)
        base_url="http://aitp.test/v1",
    )
    assert (await other.post("/customer_sessions/anonymous", json={"shop": SHOP})).status_code == 200


async def test_a_visitor_who_signs_in_brings_its_threads_to_the_customer(api: API) -> None:
    shop = await api.actor(SHOP)
    await shop.put("/customer_sessions/settings", json={"anonymous": True})
    visitor = (await api.client(None).post("/customer_sessions/anonymous", json={"shop": SHOP})).json()
    anonymous = api.client(visitor["key"])
    caps = ["https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"]
    thread = (
        await anonymous.post(
            "/threads", json={"actors": [{"id": visitor["actor"], "capabilities": caps}, {"id": SHOP}]}
        )
    ).json()
    await anonymous.post(f"/threads/{thread['id']}/messages", json={"content": "Blue socks, size 38?"})
    await shop.post(f"/threads/{thread['id']}/messages", json={"content": "We have them."})
    upgraded = await shop.post(
        "/customer_sessions", json={"customer": "4821", "display_name": "Ada", "upgrade_from": visitor["key"]}
    )
    assert upgraded.status_code == 200, upgraded.text
    customer = api.client(upgraded.json()["key"])

    assert [t["id"] for t in (await customer.get("/threads")).json()["data"]] == [thread["id"]]
    members = {a["id"]: a for a in (await customer.get(f"/threads/{thread['id']}/actors")).json()["data"]}
    assert sorted(members) == ["4821@shop-3.near", SHOP]
    assert members["4821@shop-3.near"]["capabilities"] == [{"schema": caps[0]}]
    posted = await customer.post(f"/threads/{thread['id']}/messages", json={"content": "I'll take them."})
    assert posted.status_code == 200, posted.text
    assert posted.json()["role"] == "user"  # the customer speaks as the person the visitor was
    history = [
        m["content"][0]["text"]["value"]
        for m in (await customer.get(f"/threads/{thread['id']}/messages", params={"order": "asc"})).json()["data"]
    ]
    assert history == ["Blue socks, size 38?", "We have them.", "I'll take them."]
    # the visitor's key ends, and cannot be upgraded twice
    assert (await anonymous.get("/threads")).status_code == 401
    twice = await shop.post("/customer_sessions", json={"customer": "4821", "upgrade_from": visitor["key"]})
    assert error(twice, 400) == ("invalid_upgrade_from", "upgrade_from")


async def test_only_the_shops_own_anonymous_visitor_is_upgraded(api: API) -> None:
    shop = await api.actor(SHOP)
    other = await api.actor("other-shop")
    for owner in (shop, other):
        await owner.put("/customer_sessions/settings", json={"anonymous": True})
    elsewhere = (await api.client(None).post("/customer_sessions/anonymous", json={"shop": "other-shop"})).json()
    signed_in = (await shop.post("/customer_sessions", json={"customer": "1"})).json()
    for key in (elsewhere["key"], signed_in["key"], "aitp_not_a_key"):
        refused = await shop.post("/customer_sessions", json={"customer": "4821", "upgrade_from": key})
        assert error(refused, 400) == ("invalid_upgrade_from", "upgrade_from")
    assert (await api.client(elsewhere["key"]).get("/threads")).status_code == 200  # left as it was
    # a shop's own customer ids cannot pass for anonymous visitors
    assert error(await shop.post("/customer_sessions", json={"customer": "anon-1"}), 400)[1] == "customer"


# --------------------------------------------------------------------------- the docs' example


def test_the_identity_pages_customer_session_example_runs_as_written(live_server: AitpServer) -> None:
    """docs/identity.md's shop backend, run as written against a real server with a shop's key: what it prints
    is what the shop's page gets, and the key it holds acts as the customer."""
    (block,) = marked_blocks(ROOT / "docs" / "identity.md", "customers").values()
    env = {**os.environ, "AITP_URL": live_server.base_url, "AITP_KEY": live_server.key(SHOP)}
    ran = subprocess.run(command(block), env=env, capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    answer = ast.literal_eval(ran.stdout.strip())
    assert (answer["actor"], answer["shop"]) == ("4821@shop-3.near", SHOP)
    assert answer["expires_at"] > time.time() + 3500
    me = httpx.get(f"{live_server.base_url}/v1/actors/me/profile", headers={"Authorization": f"Bearer {answer['key']}"})
    assert me.json()["display_name"] == "Ada Lovelace"
