"""The identities store, on every backend: known actors, proofs, contact policies, and names of verified actors."""

from __future__ import annotations

from aitp.store import Store
from aitp.store.identities import ANYONE, DOMAIN, LOCAL, NEAR, IdentityRecord


async def test_an_actor_is_added_once_and_a_second_add_changes_nothing(store: Store) -> None:
    assert await store.identities.add(IdentityRecord("alice", LOCAL, 100, contact_policy=ANYONE))
    assert not await store.identities.add(IdentityRecord("alice", LOCAL, 200, contact_policy="nobody"))
    assert await store.identities.get("alice") == IdentityRecord("alice", LOCAL, 100, contact_policy=ANYONE)
    assert await store.identities.get("bob") is None


async def test_many_reads_the_known_ones(store: Store) -> None:
    for actor in ("a", "b", "c"):
        await store.identities.add(IdentityRecord(actor, LOCAL, 1))
    found = await store.identities.many(["a", "c", "zz"])
    assert sorted(found) == ["a", "c"] and found["a"].actor == "a"


async def test_a_proof_makes_a_new_actor_or_upgrades_a_local_one_keeping_its_policy(store: Store) -> None:
    new = IdentityRecord("shop.example.com", DOMAIN, 10, contact_policy="verified")
    proven = await store.identities.proven("shop.example.com", DOMAIN, 10, "k1", new=new)
    assert (proven.kind, proven.verified_at, proven.key_id, proven.verified) == (DOMAIN, 10, "k1", True)

    await store.identities.add(IdentityRecord("old.near", LOCAL, 1, contact_policy=ANYONE))
    upgraded = await store.identities.proven(
        "old.near", NEAR, 20, "ed25519:x", new=IdentityRecord("old.near", NEAR, 20)
    )
    assert (upgraded.kind, upgraded.created_at, upgraded.contact_policy, upgraded.key_id) == (
        NEAR,
        1,
        ANYONE,
        "ed25519:x",
    )
    again = await store.identities.proven("old.near", NEAR, 30, "ed25519:y", new=IdentityRecord("old.near", NEAR, 30))
    assert (again.verified_at, again.key_id) == (30, "ed25519:y")


async def test_a_contact_policy_is_replaced_whole_and_only_for_known_actors(store: Store) -> None:
    await store.identities.add(IdentityRecord("shop", LOCAL, 1))
    stored = await store.identities.set_contact("shop", "allow_list", ["a", "b"])
    assert stored is not None and (stored.contact_policy, stored.contact_allow) == ("allow_list", ["a", "b"])
    stored = await store.identities.set_contact("shop", ANYONE, [])
    assert stored is not None and (stored.contact_policy, stored.contact_allow) == (ANYONE, [])
    assert await store.identities.set_contact("ghost", ANYONE, []) is None
    assert await store.identities.get("ghost") is None


async def test_a_name_key_is_found_only_for_verified_actors_other_than_the_one_asking(store: Store) -> None:
    await store.identities.add(IdentityRecord("local-1", LOCAL, 1))
    await store.identities.set_name_key("local-1", "sunnysocks")
    assert await store.identities.verified_with_name("sunnysocks", other_than="x") is None
    await store.identities.proven("shop.example", DOMAIN, 2, "k", new=IdentityRecord("shop.example", DOMAIN, 2))
    await store.identities.set_name_key("shop.example", "sunnysocks")
    assert await store.identities.verified_with_name("sunnysocks", other_than="x") == "shop.example"
    assert await store.identities.verified_with_name("sunnysocks", other_than="shop.example") is None
    await store.identities.set_name_key("shop.example", "")
    assert await store.identities.verified_with_name("sunnysocks", other_than="x") is None
