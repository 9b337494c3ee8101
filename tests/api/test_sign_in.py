"""Sign-in without an admin: a domain agent or a NEAR account signs a single-use challenge and gets a key.

Each step that can fail says so with its own code: the nonce (unknown, used, expired), the key (not published,
not a full-access key), the signature, the key document (unreachable, too large).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from aitp.identity import generate_keypair, implicit_account_of, near_keypair
from tests.conftest import API
from tests.support.identities import (
    KeySite,
    NearRpc,
    challenge,
    domain_proof,
    key_site,
    near_proof,
    near_rpc,
    sign_in_domain,
    sign_in_near,
    token,
)


@pytest.fixture
def site(api: API) -> Iterator[KeySite]:
    with key_site() as served:
        served.keys = [generate_keypair(kid="k1")]
        api.settings_override(identity_allow=(served.allow,))
        yield served


@pytest.fixture
def rpc(api: API) -> Iterator[NearRpc]:
    with near_rpc() as served:
        api.settings_override(near_rpc_url=served.url)
        yield served


def code_of(response: object) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]  # type: ignore[attr-defined]


async def test_a_domain_agent_signs_in_with_a_published_key_and_posts(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    issued = await challenge(anonymous, site.host)
    assert issued["kind"] == "domain" and issued["audience"] == "http://aitp.test"
    response = await token(anonymous, issued, domain_proof(issued, site.keys[0]))
    assert response.status_code == 200, response.text
    signed = response.json()
    assert signed["actor"] == site.host and signed["key"].startswith("aitp_") and signed["expires_at"]
    assert signed["verification"]["kind"] == "domain" and signed["verification"]["key_id"] == "k1"

    shop = api.client(signed["key"])
    me = (await shop.get(f"/actors/{site.host}")).json()
    assert me["verified"] is True and me["verification"]["identifier"] == site.host
    await api.known("alice")
    thread = (await shop.post("/threads", json={"actors": [{"id": "alice"}]})).json()
    posted = await shop.post(f"/threads/{thread['id']}/messages", json={"role": "assistant", "content": "hello"})
    assert posted.status_code == 200, posted.text
    assert posted.json()["metadata"].get("actor", site.host) == site.host


async def test_a_wrong_key_and_a_wrong_signature_are_refused_each_with_its_code(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    issued = await challenge(anonymous, site.host)
    stranger = generate_keypair(kid="not-published")
    assert code_of(await token(anonymous, issued, domain_proof(issued, stranger))) == (401, "key_not_published")

    issued = await challenge(anonymous, site.host)
    forged = generate_keypair(kid="k1")  # the published kid, another key
    assert code_of(await token(anonymous, issued, domain_proof(issued, forged))) == (401, "bad_signature")

    issued = await challenge(anonymous, site.host)
    other = await challenge(anonymous, site.host)  # a proof made for another nonce
    assert code_of(await token(anonymous, issued, domain_proof(other, site.keys[0]))) == (401, "claims_mismatch")


async def test_a_nonce_works_once_and_not_after_it_expires(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    issued = await challenge(anonymous, site.host)
    proof = domain_proof(issued, site.keys[0])
    assert (await token(anonymous, issued, proof)).status_code == 200
    replayed = await token(anonymous, issued, proof)
    assert code_of(replayed) == (401, "nonce_used")
    assert replayed.json()["error"]["param"] == "nonce"

    api.settings_override(sign_in_challenge_seconds=1.0)
    late = await challenge(anonymous, site.host)
    await asyncio.sleep(late["expires_at"] - time.time() + 0.1)
    assert code_of(await token(anonymous, late, domain_proof(late, site.keys[0]))) == (401, "nonce_expired")

    made_up = dict(issued, nonce="_" * 43)  # 32 bytes of 0xff: an expiry far ahead, no such nonce
    assert code_of(await token(anonymous, made_up, proof)) == (401, "invalid_nonce")


async def test_a_failed_proof_spends_its_nonce(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    issued = await challenge(anonymous, site.host)
    bad = await token(anonymous, issued, domain_proof(issued, generate_keypair(kid="k1")))
    assert code_of(bad) == (401, "bad_signature")
    assert code_of(await token(anonymous, issued, domain_proof(issued, site.keys[0]))) == (401, "nonce_used")


async def test_a_key_document_too_large_or_unreachable_is_refused(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    site.body = b'{"keys": [' + b" " * (70 << 10) + b"]}"
    issued = await challenge(anonymous, site.host)
    assert code_of(await token(anonymous, issued, domain_proof(issued, site.keys[0]))) == (401, "well_known_too_large")

    api.settings_override(identity_allow=())  # loopback no longer admitted
    refused = await anonymous.post("/auth/challenge", json={"actor": "localhost:1"})
    issued = refused.json()
    response = await token(anonymous, issued, domain_proof(issued, site.keys[0]))
    assert code_of(response) == (401, "well_known_unreachable")
    assert "loopback" in response.json()["error"]["message"]


async def test_a_key_removed_from_the_document_stops_working_when_its_cache_time_ends(api: API, site: KeySite) -> None:
    anonymous = api.client(None)
    site.headers = {"cache-control": "max-age=1"}
    await sign_in_domain(anonymous, site.host, site.keys[0])
    removed, site.keys = site.keys[0], [generate_keypair(kid="k2")]
    await sign_in_domain(anonymous, site.host, removed)  # still cached
    await asyncio.sleep(1.1)
    issued = await challenge(anonymous, site.host)
    assert code_of(await token(anonymous, issued, domain_proof(issued, removed))) == (401, "key_not_published")
    await sign_in_domain(anonymous, site.host, site.keys[0])


async def test_an_implicit_near_account_signs_in_offline(api: API) -> None:
    private, public = near_keypair()
    account = implicit_account_of(public)
    anonymous = api.client(None)
    key = await sign_in_near(anonymous, account, private)
    me = (await api.client(key).get("/actors/me")).json()
    assert me["id"] == account
    identity = (await api.client(key).get(f"/actors/{account}")).json()
    assert identity["verification"] == {
        "kind": "near",
        "identifier": account,
        "verified_at": identity["verification"]["verified_at"],
        "key_id": public,
    }
    other_private, _ = near_keypair()
    issued = await challenge(anonymous, account)
    assert code_of(await token(anonymous, issued, near_proof(issued, other_private))) == (401, "key_not_published")


async def test_a_named_near_account_signs_in_with_a_full_access_key_only(api: API, rpc: NearRpc) -> None:
    private, public = near_keypair()
    limited_private, limited_public = near_keypair()
    rpc.keys[("sunnysocks.near", public)] = "FullAccess"
    rpc.keys[("sunnysocks.near", limited_public)] = {"FunctionCall": {"allowance": None, "receiver_id": "x"}}
    anonymous = api.client(None)
    await sign_in_near(anonymous, "sunnysocks.near", private)
    issued = await challenge(anonymous, "sunnysocks.near")
    assert code_of(await token(anonymous, issued, near_proof(issued, limited_private))) == (401, "key_not_published")
    stranger, _ = near_keypair()
    issued = await challenge(anonymous, "sunnysocks.near")
    assert code_of(await token(anonymous, issued, near_proof(issued, stranger))) == (401, "key_not_published")


async def test_a_near_rpc_that_is_down_is_said_so(api: API) -> None:
    api.settings_override(near_rpc_url="http://127.0.0.1:9", identity_timeout=1.0)
    private, _ = near_keypair()
    anonymous = api.client(None)
    issued = await challenge(anonymous, "sunnysocks.near")
    assert code_of(await token(anonymous, issued, near_proof(issued, private))) == (401, "near_rpc_unreachable")


async def test_only_domain_and_near_ids_may_sign_in_and_only_the_kinds_allowed(api: API) -> None:
    anonymous = api.client(None)
    for actor in ("alice", "Shop.Example.com", "sunny socks"):
        refused = await anonymous.post("/auth/challenge", json={"actor": actor})
        assert code_of(refused) == (400, "invalid_actor_id") and refused.json()["error"]["param"] == "actor"
    api.settings_override(sign_in_kinds=("near",))
    assert code_of(await anonymous.post("/auth/challenge", json={"actor": "shop.example.com"})) == (
        403,
        "sign_in_not_allowed",
    )


async def test_sign_in_attempts_are_limited_per_actor(api: API) -> None:
    api.settings_override(sign_in_attempts_per_minute=3.0)
    anonymous = api.client(None)
    for _ in range(3):
        await challenge(anonymous, "sunnysocks.near")
    refused = await anonymous.post("/auth/challenge", json={"actor": "sunnysocks.near"})
    assert code_of(refused) == (429, "too_many_sign_in_attempts") and "retry-after" in refused.headers
    await challenge(anonymous, "other.near")  # another actor is not held back


async def test_sign_in_attempts_are_limited_per_client_address(api: API) -> None:
    api.settings_override(sign_in_address_attempts_per_minute=2.0)
    anonymous = api.client(None)
    await challenge(anonymous, "a.near")
    await challenge(anonymous, "b.near")
    assert code_of(await anonymous.post("/auth/challenge", json={"actor": "c.near"})) == (
        429,
        "too_many_sign_in_attempts",
    )


async def test_a_signed_in_key_is_an_actors_key_without_admin_or_scopes(api: API) -> None:
    private, public = near_keypair()
    account = implicit_account_of(public)
    key = await sign_in_near(api.client(None), account, private)
    me = (await api.client(key).get("/actors/me")).json()
    assert me["admin"] is False
    keys = (await api.admin.get("/keys")).json()["data"]
    (record,) = [k for k in keys if k["actor"] == account]
    assert record["scopes"] == [] and record["expires_at"] is not None
    assert json.loads(json.dumps(record))  # listed like any key, revocable by the admin
    assert (await api.admin.delete(f"/keys/{record['id']}")).status_code == 200
    assert (await api.client(key).get("/actors/me")).status_code == 401
