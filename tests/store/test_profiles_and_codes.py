"""The Store contract for actor profiles and one-time codes, on every backend (through the `store` fixture).

A profile is one record per actor, replaced whole. A one-time code is redeemed once, for its purpose,
before it expires; time is passed in, so expiry is tested by redeeming "later", not by waiting.
"""

from __future__ import annotations

import asyncio
import time

from aitp.store import Store
from aitp.store.codes import CodeRecord
from aitp.store.profiles import ProfileRecord
from tests.conftest import Backend

NOW = float(int(time.time()))  # real time, whole seconds: a real MongoDB's TTL monitor must not expire them


def profile(actor: str, name: str | None = "Ada", **fields: object) -> ProfileRecord:
    values: dict = {"display_name": name, "avatar_url": None, "description": None, "updated_at": 1, **fields}
    return ProfileRecord(actor=actor, **values)


def code(hash: str = "h1", purpose: str = "websocket", at: float = NOW) -> CodeRecord:
    return CodeRecord(
        hash=hash,
        purpose=purpose,
        key_hash="key-hash",
        actor="ada.near",
        admin=False,
        scopes=["capabilities:write"],
        created_at=at,
        expires_at=at + 60,
    )


async def test_a_profile_is_read_back_as_written_and_replaced_whole(store: Store) -> None:
    assert await store.profiles.get("ada.near") is None
    first = profile("ada.near", avatar_url="https://example.com/a.png", description="Buys headphones")
    await store.profiles.put(first)
    assert await store.profiles.get("ada.near") == first

    replaced = profile("ada.near", "Ada L.", updated_at=2)
    await store.profiles.put(replaced)
    assert await store.profiles.get("ada.near") == replaced  # avatar and description gone with the old record


async def test_profiles_of_many_actors_are_read_at_once(store: Store) -> None:
    await store.profiles.put(profile("ada.near", "Ada"))
    await store.profiles.put(profile("shop.near", "The Shop"))

    found = await store.profiles.many(["shop.near", "nobody.near", "ada.near"])

    assert {actor: p.display_name for actor, p in found.items()} == {"ada.near": "Ada", "shop.near": "The Shop"}
    assert await store.profiles.many([]) == {}


async def test_a_code_redeems_once_for_its_purpose(store: Store) -> None:
    await store.codes.create(code())

    assert await store.codes.redeem("h1", "sign_in", NOW + 1) is None  # another purpose: not this code
    redeemed = await store.codes.redeem("h1", "websocket", NOW + 1)
    assert redeemed == code()
    assert await store.codes.redeem("h1", "websocket", NOW + 2) is None


async def test_an_expired_code_does_not_redeem_and_is_purged(store: Store) -> None:
    await store.codes.create(code("old"))
    await store.codes.create(code("fresh", at=NOW + 100))

    assert await store.codes.redeem("old", "websocket", NOW + 60) is None
    assert await store.codes.purge(NOW + 61) == 1
    assert await store.codes.redeem("fresh", "websocket", NOW + 101) is not None


async def test_concurrent_redemptions_of_one_code_give_it_to_one(store: Store, backend: Backend) -> None:
    await store.codes.create(code())

    results = await asyncio.gather(*(store.codes.redeem("h1", "websocket", NOW + 1) for _ in range(8)))

    assert sum(result is not None for result in results) == 1
