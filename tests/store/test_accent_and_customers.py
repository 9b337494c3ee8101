"""The store's part of customer sessions, on every backend: a profile keeps its accent colour (and a SQLite store
written before accent colours gains the column), and a shop's customer is recorded as the shop vouches for it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from aitp.store import Store, open_store
from aitp.store.identities import ALLOW_LIST, ANYONE, CUSTOMER, DOMAIN, LOCAL, IdentityRecord
from aitp.store.profiles import ProfileRecord


def profile(actor: str, accent: str | None) -> ProfileRecord:
    return ProfileRecord(actor, "Sunny Socks", None, None, updated_at=1, accent_color=accent)


async def test_a_profile_keeps_its_accent_color_and_loses_it_when_replaced(store: Store) -> None:
    await store.profiles.put(profile("shop.near", "#1A7f5a"))
    assert await store.profiles.get("shop.near") == profile("shop.near", "#1A7f5a")
    assert (await store.profiles.many(["shop.near"]))["shop.near"].accent_color == "#1A7f5a"

    await store.profiles.put(profile("shop.near", None))
    stored = await store.profiles.get("shop.near")
    assert stored is not None and stored.accent_color is None


async def test_a_sqlite_store_written_before_accent_colors_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the table as the code before accent colours made it, with a profile
        conn.execute(
            "CREATE TABLE actor_profiles (actor TEXT PRIMARY KEY, display_name TEXT, avatar_url TEXT,"
            " description TEXT, updated_at INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO actor_profiles VALUES ('shop', 'Sunny Socks', NULL, 'Socks', 7)")
    conn.close()
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        old = await store.profiles.get("shop")
        assert old == ProfileRecord("shop", "Sunny Socks", None, "Socks", 7, accent_color=None)
        await store.profiles.put(profile("shop", "#ffcc00"))
        assert (await store.profiles.get("shop")) == profile("shop", "#ffcc00")
        await store.close()
        await store.open()  # the upgrade runs once: a second open keeps what is there
        assert (await store.profiles.get("shop")) == profile("shop", "#ffcc00")
    finally:
        await store.close()


def customer(actor: str, shop: str, at: int) -> IdentityRecord:
    return IdentityRecord(actor, CUSTOMER, at, verified_at=at, contact_policy=ALLOW_LIST, contact_allow=[shop])


async def test_a_vouched_customer_is_inserted_then_its_session_time_moves_on(store: Store) -> None:
    first = await store.identities.vouched(customer("4821@shop.near", "shop.near", 10))
    assert first == customer("4821@shop.near", "shop.near", 10)
    assert await store.identities.get("4821@shop.near") == first

    again = await store.identities.vouched(customer("4821@shop.near", "shop.near", 20))
    assert (again.created_at, again.verified_at, again.kind) == (10, 20, CUSTOMER)


async def test_vouching_for_a_known_local_actor_makes_it_the_shops_customer_keeping_its_name(store: Store) -> None:
    await store.identities.add(IdentityRecord("ada@shop.near", LOCAL, 5, contact_policy=ANYONE))
    await store.identities.set_name_key("ada@shop.near", "ada")

    stored = await store.identities.vouched(customer("ada@shop.near", "shop.near", 30))

    assert (stored.kind, stored.created_at, stored.verified_at, stored.key_id) == (CUSTOMER, 5, 30, None)
    assert (stored.contact_policy, stored.contact_allow, stored.name_key) == (ALLOW_LIST, ["shop.near"], "ada")
    assert stored.verified is False  # the shop vouches for it; nothing proves it


async def test_a_customers_name_is_not_held_against_others_only_verified_names_are(store: Store) -> None:
    await store.identities.vouched(customer("1@shop.near", "shop.near", 1))
    await store.identities.set_name_key("1@shop.near", "adalovelace")
    # two customers of two shops may both be called Ada Lovelace: a customer's name proves nothing
    assert await store.identities.verified_with_name("adalovelace", other_than="2@other.near") is None

    new = IdentityRecord("ada.example", DOMAIN, 2)
    await store.identities.proven("ada.example", DOMAIN, 2, "k", new=new)
    await store.identities.set_name_key("ada.example", "adalovelace")
    assert await store.identities.verified_with_name("adalovelace", other_than="2@other.near") == "ada.example"


async def lets_visitors_in(store: Store, actor: str) -> bool:
    identity = await store.identities.get(actor)
    assert identity is not None
    return identity.anonymous_visitors


async def test_a_shop_sets_its_customer_session_settings(store: Store) -> None:
    await store.identities.add(IdentityRecord("shop.near", LOCAL, 1))
    assert await lets_visitors_in(store, "shop.near") is False

    opted = await store.identities.set_customer_settings("shop.near", True, ["https://shop.example"])

    assert opted is not None and opted.anonymous_visitors is True
    assert opted.embed_origins == ["https://shop.example"]
    many = (await store.identities.many(["shop.near"]))["shop.near"]
    assert (many.anonymous_visitors, many.embed_origins) == (True, ["https://shop.example"])
    await store.identities.set_contact("shop.near", ANYONE, [])  # other writes keep them
    assert await lets_visitors_in(store, "shop.near") is True
    assert (await store.identities.get("shop.near")).embed_origins == ["https://shop.example"]  # type: ignore[union-attr]
    await store.identities.set_customer_settings("shop.near", False, [])
    assert await lets_visitors_in(store, "shop.near") is False
    assert (await store.identities.get("shop.near")).embed_origins == []  # type: ignore[union-attr]
    assert await store.identities.set_customer_settings("ghost", True, []) is None
    assert await store.identities.get("ghost") is None


async def test_a_sqlite_store_written_before_customer_settings_gains_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # actor_identities as the code before this column made it
        conn.execute(
            "CREATE TABLE actor_identities (actor TEXT PRIMARY KEY, kind TEXT NOT NULL, created_at INTEGER NOT NULL,"
            " verified_at INTEGER, key_id TEXT, contact_policy TEXT NOT NULL, contact_allow TEXT NOT NULL,"
            " name_key TEXT NOT NULL DEFAULT '')"
        )
        conn.execute("INSERT INTO actor_identities VALUES ('shop', 'local', 5, NULL, NULL, 'anyone', '[]', '')")
    conn.close()
    store = open_store(f"sqlite:///{path}")
    await store.open()
    try:
        assert await store.identities.get("shop") == IdentityRecord("shop", LOCAL, 5, contact_policy=ANYONE)
        opted = await store.identities.set_customer_settings("shop", True, ["https://shop.example"])
        assert opted is not None and opted.anonymous_visitors and opted.embed_origins == ["https://shop.example"]
    finally:
        await store.close()
