"""Who is who: actors exist or are refused, names of verified actors cannot be borrowed, and each actor says
who may contact it. The customer-impersonation story of issue 26, replayed through HTTP, stops at its first step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aitp.identity import generate_keypair, implicit_account_of, near_keypair
from tests.conftest import API
from tests.support.identities import KeySite, key_site, sign_in_domain, sign_in_near


@pytest.fixture
def site(api: API) -> Iterator[KeySite]:
    with key_site() as served:
        served.keys = [generate_keypair(kid="k1")]
        api.settings_override(identity_allow=(served.allow,))
        yield served


def error(response: httpx.Response) -> tuple[int, str, str | None]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["param"]


async def verified_shop(api: API, site: KeySite, name: str = "Sunny Socks") -> httpx.AsyncClient:
    shop = api.client(await sign_in_domain(api.client(None), site.host, site.keys[0]))
    assert (await shop.put("/actors/me/profile", json={"display_name": name})).status_code == 200
    assert (await shop.put("/actors/me/contact_policy", json={"policy": "anyone"})).status_code == 200
    return shop


# actors exist or are refused


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"actors": [{"id": "carol"}, {"id": "nobody-here"}]}, "actors[1].id"),
        ({"metadata": {"actors": '[{"id": "carol"}, {"id": "nobody-here"}]'}}, "metadata.actors[1].id"),
    ],
)
async def test_a_thread_naming_an_unknown_actor_is_refused_naming_the_field(
    api: API, body: dict[str, Any], param: str
) -> None:
    alice = await api.actor("alice")
    await api.known("carol")
    refused = await alice.post("/threads", json=body)
    assert error(refused) == (400, "unknown_actor", param)
    assert (await alice.get("/threads")).json()["data"] == []  # nothing was created


async def test_typing_a_name_into_new_conversation_creates_no_actors(api: API) -> None:
    alice = await api.actor("alice")
    refused = await alice.post("/thread", json={"actors": [{"id": "Sunny"}, {"id": "Socks"}]})
    assert error(refused) == (400, "unknown_actor", "actors[0].id")
    assert (await alice.get("/actors/Sunny")).status_code == 404


async def test_adding_an_unknown_actor_is_refused(api: API) -> None:
    alice = await api.actor("alice")
    thread = (await alice.post("/threads", json={})).json()
    assert error(await alice.post(f"/threads/{thread['id']}/actors", json={"id": "ghost"})) == (
        400,
        "unknown_actor",
        "id",
    )


async def test_an_admin_may_name_a_new_actor_which_becomes_local(api: API) -> None:
    created = await api.admin.post("/threads", json={"actors": [{"id": "walk-in"}]})
    assert created.status_code == 200, created.text
    identity = (await api.admin.get("/actors/walk-in")).json()
    assert identity["kind"] == "local" and identity["verified"] is False
    assert identity["verification"] == {"kind": "local", "identifier": "walk-in", "verified_at": None, "key_id": None}


async def test_an_unknown_actor_is_not_found(api: API) -> None:
    alice = await api.actor("alice")
    assert error(await alice.get("/actors/ghost")) == (404, "actor_not_found", "actor_id")


# names of verified actors cannot be borrowed


@pytest.mark.parametrize("borrowed", ["Sunny Socks", "sunny  socks", "SUNNY-SOCKS", "Sunny S\u043ecks", "Ｓunny Socks"])
async def test_a_verified_actors_name_is_refused_to_anyone_else(api: API, site: KeySite, borrowed: str) -> None:
    await verified_shop(api, site)
    customer = await api.actor("cust-4821")
    refused = await customer.put("/actors/me/profile", json={"display_name": borrowed})
    assert error(refused) == (409, "display_name_taken", "display_name")
    assert site.host in refused.json()["error"]["message"]
    assert (await customer.put("/actors/me/profile", json={"display_name": "Sunny Shoes"})).status_code == 200


async def test_a_name_taken_by_a_local_actor_only_is_not_protected(api: API, site: KeySite) -> None:
    first = await api.actor("cust-1")
    assert (await first.put("/actors/me/profile", json={"display_name": "Ada"})).status_code == 200
    second = await api.actor("cust-2")
    assert (await second.put("/actors/me/profile", json={"display_name": "ada"})).status_code == 200


async def test_a_verified_actor_keeps_its_own_name_and_an_admin_cannot_give_it_away(api: API, site: KeySite) -> None:
    shop = await verified_shop(api, site)
    assert (await shop.put("/actors/me/profile", json={"display_name": "Sunny  Socks"})).status_code == 200
    await api.known("cust-9")
    refused = await api.admin.put("/actors/cust-9/profile", json={"display_name": "sunny socks"})
    assert error(refused)[:2] == (409, "display_name_taken")


async def test_profiles_say_who_is_verified(api: API, site: KeySite) -> None:
    shop = await verified_shop(api, site)
    customer = await api.actor("cust-1")
    thread = (await customer.post("/threads", json={"actors": [{"id": site.host}]})).json()
    profiles = (await shop.get(f"/threads/{thread['id']}/profiles")).json()["data"]
    by_actor = {p["actor"]: p for p in profiles}
    assert by_actor[site.host]["verified"] is True
    assert by_actor[site.host]["verification"]["kind"] == "domain"
    assert by_actor[site.host]["verification"]["identifier"] == site.host
    assert by_actor["cust-1"]["verified"] is False and by_actor["cust-1"]["verification"]["kind"] == "local"
    # a verified actor's identity and profile are public; a local actor's profile is not
    assert (await customer.get(f"/actors/{site.host}")).json()["profile"]["display_name"] == "Sunny Socks"
    assert (await shop.get("/actors/cust-1")).json()["profile"] is None
    assert (await shop.get("/actors/cust-1")).json()["contact_policy"] is None


# who may contact whom


async def test_verified_only_the_default_refuses_local_actors_and_admits_verified_ones(api: API, site: KeySite) -> None:
    api.settings_override(contact_policy="verified")
    customer = await api.actor("cust-1")
    other = await api.actor("cust-2")
    refused = await other.post("/threads", json={"actors": [{"id": "cust-1"}]})
    assert error(refused) == (403, "contact_refused", "actors[0].id")
    assert "verified" in refused.json()["error"]["message"]
    shop = api.client(await sign_in_domain(api.client(None), site.host, site.keys[0]))
    created = await shop.post("/threads", json={"actors": [{"id": "cust-1"}]})
    assert created.status_code == 200, created.text
    assert (await customer.get("/actors/me/contact_policy")).json()["policy"] == "verified"


async def test_anyone_lets_every_known_actor_in(api: API) -> None:
    api.settings_override(contact_policy="nobody")
    shop = await api.actor("shop")
    customer = await api.actor("cust-1")
    assert error(await customer.post("/threads", json={"actors": [{"id": "shop"}]}))[:2] == (403, "contact_refused")
    assert (await shop.put("/actors/me/contact_policy", json={"policy": "anyone"})).status_code == 200
    assert (await customer.post("/threads", json={"actors": [{"id": "shop"}]})).status_code == 200


async def test_an_allow_list_admits_only_those_it_lists(api: API) -> None:
    api.settings_override(contact_policy="nobody")
    shop = await api.actor("shop")
    friend = await api.actor("friend")
    stranger = await api.actor("stranger")
    policy = {"policy": "allow_list", "allow": ["friend"]}
    answer = (await shop.put("/actors/me/contact_policy", json=policy)).json()
    assert answer == {"object": "actor.contact_policy", "actor": "shop", "policy": "allow_list", "allow": ["friend"]}
    assert (await friend.post("/threads", json={"actors": [{"id": "shop"}]})).status_code == 200
    assert error(await stranger.post("/threads", json={"actors": [{"id": "shop"}]})) == (
        403,
        "contact_refused",
        "actors[0].id",
    )


async def test_nobody_refuses_even_verified_actors_but_not_admins(api: API, site: KeySite) -> None:
    recluse = await api.actor("recluse")
    assert (await recluse.put("/actors/me/contact_policy", json={"policy": "nobody"})).status_code == 200
    shop = api.client(await sign_in_domain(api.client(None), site.host, site.keys[0]))
    assert error(await shop.post("/threads", json={"actors": [{"id": "recluse"}]}))[:2] == (403, "contact_refused")
    assert (await api.admin.post("/threads", json={"actors": [{"id": "recluse"}]})).status_code == 200


async def test_adding_an_actor_meets_its_policy_too(api: API) -> None:
    api.settings_override(contact_policy="nobody")
    await api.actor("recluse")
    alice = await api.actor("alice")
    thread = (await alice.post("/threads", json={})).json()
    assert error(await alice.post(f"/threads/{thread['id']}/actors", json={"id": "recluse"})) == (
        403,
        "contact_refused",
        "id",
    )


async def test_only_the_actor_or_an_admin_sets_its_policy_and_bad_policies_name_their_field(api: API) -> None:
    await api.actor("shop")
    alice = await api.actor("alice")
    assert error(await alice.put("/actors/shop/contact_policy", json={"policy": "anyone"}))[:2] == (
        403,
        "permission_denied",
    )
    assert (await api.admin.put("/actors/shop/contact_policy", json={"policy": "nobody"})).status_code == 200
    bad = await alice.put("/actors/me/contact_policy", json={"policy": "friends"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "policy"
    listed = await alice.put("/actors/me/contact_policy", json={"policy": "anyone", "allow": ["x"]})
    assert (listed.status_code, listed.json()["error"]["param"]) == (400, "allow")


async def test_the_openai_sdks_metadata_actors_meet_the_same_rule(api: API) -> None:
    api.settings_override(contact_policy="verified")
    await api.actor("cust-1")
    other = await api.actor("cust-2")
    refused = await other.post("/threads", json={"metadata": {"actors": '[{"id": "cust-1"}]'}})
    assert error(refused) == (403, "contact_refused", "metadata.actors[0].id")


async def test_new_threads_per_creator_are_limited(api: API) -> None:
    api.settings_override(new_threads_per_hour=2)
    alice = await api.actor("alice")
    for _ in range(2):
        assert (await alice.post("/threads", json={})).status_code == 200
    refused = await alice.post("/threads", json={})
    assert error(refused)[:2] == (429, "too_many_threads") and "retry-after" in refused.headers
    bob = await api.actor("bob")
    assert (await bob.post("/threads", json={})).status_code == 200  # counted per creator
    for _ in range(3):
        assert (await api.admin.post("/threads", json={})).status_code == 200  # admins: no limit


# the story of issue 26


async def test_a_customer_cannot_pass_for_the_shop(api: API, site: KeySite) -> None:
    """A customer's key set its profile to the shop's name and logo, opened a thread naming another customer and
    sent a $49 "customs fee" quote. With identity, the first step is refused, the thread too, and a thread an
    admin lets happen still shows who is verified."""
    api.settings_override(contact_policy="verified")
    shop = await verified_shop(api, site)
    logo = "https://sunnysocks.example/logo.png"
    assert (await shop.put("/actors/me/profile", json={"display_name": "Sunny Socks", "avatar_url": logo})).is_success
    victim = await api.actor("cust-1001")
    impostor = await api.actor("cust-4821")

    # step 1: the shop's name and logo
    taken = await impostor.put("/actors/me/profile", json={"display_name": "Sunny Socks", "avatar_url": logo})
    assert error(taken) == (409, "display_name_taken", "display_name")
    assert (await impostor.get("/actors/me/profile")).json()["display_name"] is None
    # step 2: a thread naming another customer
    opened = await impostor.post("/threads", json={"actors": [{"id": "cust-1001"}]})
    assert error(opened) == (403, "contact_refused", "actors[0].id")
    assert (await victim.get("/threads")).json()["data"] == []
    # the shop may open one, and the customer sees whom she talks to
    thread = (await shop.post("/threads", json={"actors": [{"id": "cust-1001"}]})).json()
    seen = {p["actor"]: p for p in (await victim.get(f"/threads/{thread['id']}/profiles")).json()["data"]}
    assert seen[site.host]["display_name"] == "Sunny Socks" and seen[site.host]["verified"] is True


async def test_an_implicit_near_account_is_verified_and_contactable_as_it_says(api: API) -> None:
    private, public = near_keypair()
    account = implicit_account_of(public)
    wallet = api.client(await sign_in_near(api.client(None), account, private))
    assert (await wallet.get("/actors/me/contact_policy")).json()["policy"] == "anyone"  # the api fixture's default
    assert (await wallet.get(f"/actors/{account}")).json()["verification"]["kind"] == "near"


# every face shows it


async def test_the_a2a_agent_card_carries_the_verification(api: API, site: KeySite) -> None:
    shop = await verified_shop(api, site)
    assert (await shop.put(f"/../a2a/{site.host}/settings", json={"serve": True})).status_code == 200
    local = await api.actor("corner-shop")
    assert (await local.put("/../a2a/corner-shop/settings", json={"serve": True})).status_code == 200

    def identity(card: dict[str, Any]) -> dict[str, Any]:
        (extension,) = [e for e in card["capabilities"]["extensions"] if e["uri"].endswith("/extensions/identity/v1")]
        return extension["params"]

    card = (await shop.get(f"/../a2a/{site.host}/.well-known/agent-card.json")).json()
    assert card["name"] == "Sunny Socks"
    assert identity(card)["kind"] == "domain" and identity(card)["identifier"] == site.host
    assert identity(card)["key_id"] == "k1"
    local_card = (await local.get("/../a2a/corner-shop/.well-known/agent-card.json")).json()
    assert identity(local_card) == {"kind": "local", "identifier": "corner-shop", "verified_at": None, "key_id": None}


async def test_generic_openai_sdk_code_meets_the_contact_rule_with_a_clear_error(api: API) -> None:
    import openai

    api.settings_override(contact_policy="verified")
    await api.actor("cust-1")
    key = await api.key_for("cust-2")
    client = openai.AsyncOpenAI(
        api_key=key,
        base_url="http://aitp.test/v1",
        http_client=httpx.AsyncClient(transport=api._transport),  # noqa: SLF001 (the in-process app)
    )
    with pytest.raises(openai.PermissionDeniedError) as refused:
        await client.beta.threads.create(metadata={"actors": '[{"id": "cust-1"}]'})
    assert refused.value.code == "contact_refused" and refused.value.param == "metadata.actors[0].id"
    with pytest.raises(openai.BadRequestError) as unknown:
        await client.beta.threads.create(metadata={"actors": '[{"id": "nobody-here"}]'})
    assert unknown.value.code == "unknown_actor"


async def test_a_verified_actors_profile_is_public_a_local_ones_is_not(api: API, site: KeySite) -> None:
    await verified_shop(api, site)
    customer = await api.actor("cust-1")
    await customer.put("/actors/me/profile", json={"display_name": "Ada"})
    shown = (await customer.get(f"/actors/{site.host}/profile")).json()
    assert (shown["display_name"], shown["verified"]) == ("Sunny Socks", True)
    assert (await customer.get("/actors/cust-1/profile")).json()["display_name"] == "Ada"
    other = await api.actor("cust-2")
    assert error(await other.get("/actors/cust-1/profile")) == (404, "actor_not_found", "actor_id")
    assert error(await other.get("/actors/cust-1/contact_policy"))[:2] == (403, "permission_denied")
    assert (await api.admin.get("/actors/cust-1/contact_policy")).json()["policy"] == "anyone"


async def test_a_remote_a2a_agent_the_admin_sets_up_is_known_without_a_key(api: API) -> None:
    admin_root = httpx.AsyncClient(
        transport=api._transport,  # noqa: SLF001 (the in-process app)
        base_url="http://aitp.test",
        headers=api.admin.headers,
    )
    assert (await admin_root.put("/a2a/parrot/settings", json={"serve": True})).status_code == 200
    alice = await api.actor("alice")
    assert (await alice.post("/threads", json={"actors": [{"id": "parrot"}]})).status_code == 200
    assert (await alice.get("/actors/parrot")).json()["kind"] == "local"
