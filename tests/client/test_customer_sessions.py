"""`AitpClient.create_customer_session`: a shop's backend mints its customer's session with the Python client,
and the customer's client acts as `<customer>@<shop>` with its shop only, on every store backend."""

from __future__ import annotations

import time

import httpx
import pytest

from aitp.app import create_app
from aitp.client import AitpClient, BadRequest, CustomerSession, PermissionDenied
from aitp.config import Settings
from aitp.store import Store
from tests.conftest import ADMIN_KEY

BASE = "http://aitp.test"


@pytest.fixture
def transport(store: Store) -> httpx.ASGITransport:
    """The app in this process on the test's store (SQLite, then MongoDB); anyone may contact its actors."""
    settings = Settings(store_url="unused://", admin_key=ADMIN_KEY, contact_policy="anyone")
    return httpx.ASGITransport(app=create_app(settings, store=store))


async def test_a_shop_mints_a_session_and_its_customer_talks_with_it(transport: httpx.ASGITransport) -> None:
    async with AitpClient(BASE, ADMIN_KEY, transport=transport) as admin:
        shop_key = (await admin.create_key("shop-3.near")).key
        await admin.create_key("eve.near")
        async with AitpClient(BASE, shop_key, transport=transport) as shop:
            await _mint_and_talk(admin, shop, transport)


async def _mint_and_talk(admin: AitpClient, shop: AitpClient, transport: httpx.ASGITransport) -> None:
    session = await shop.create_customer_session("4821", "Ada Lovelace", 600)

    assert isinstance(session, CustomerSession)
    assert (session.actor, session.shop) == ("4821@shop-3.near", "shop-3.near")
    assert int(time.time()) + 598 <= session.expires_at <= int(time.time()) + 600
    async with AitpClient(BASE, session.key, transport=transport) as customer:
        assert (await customer.me()).id == "4821@shop-3.near"
        thread = await customer.create_thread(actors=["shop-3.near"])
        await customer.create_message(thread.id, "Do you have blue socks?")
        assert [m.metadata["actor"] for m in (await shop.list_messages(thread.id)).data] == ["4821@shop-3.near"]
        with pytest.raises(PermissionDenied) as outside:
            await customer.create_thread(actors=["eve.near"])
        assert (outside.value.code, outside.value.param) == ("outside_customer_session", "actors[0].id")
        with pytest.raises(PermissionDenied) as minting:
            await customer.create_customer_session("4822")
        assert minting.value.code == "customer_session_not_allowed"
        identity = await customer.get_actor("4821@shop-3.near")
        assert identity.kind == "customer" and identity.verification.vouched_by == "shop-3.near"
        assert identity.profile is not None and identity.profile.display_name == "Ada Lovelace"

    by_admin = await admin.create_customer_session("7", shop="shop-3.near")
    assert by_admin.actor == "7@shop-3.near" and by_admin.expires_at >= int(time.time()) + 3599
    with pytest.raises(BadRequest) as bad:
        await shop.create_customer_session("not valid")
    assert bad.value.param == "customer"


async def test_a_signed_in_visitors_threads_move_with_upgrade_from(transport: httpx.ASGITransport) -> None:
    async with AitpClient(BASE, ADMIN_KEY, transport=transport) as admin:
        shop_key = (await admin.create_key("shop-3.near")).key
    async with httpx.AsyncClient(transport=transport, base_url=BASE + "/v1") as public:
        settings = {"anonymous": True}
        opted = await public.put(
            "/customer_sessions/settings", json=settings, headers={"Authorization": f"Bearer {shop_key}"}
        )
        assert opted.status_code == 200, opted.text
        visitor = (await public.post("/customer_sessions/anonymous", json={"shop": "shop-3.near"})).json()
    async with AitpClient(BASE, visitor["key"], transport=transport) as anonymous:
        thread = await anonymous.create_thread(actors=["shop-3.near"])
    async with AitpClient(BASE, shop_key, transport=transport) as shop:
        session = await shop.create_customer_session("4821", upgrade_from=visitor["key"])
    async with AitpClient(BASE, session.key, transport=transport) as customer:
        assert [t.id for t in (await customer.list_threads()).data] == [thread.id]


async def test_a_shop_sets_the_brand_its_customers_see(transport: httpx.ASGITransport) -> None:
    async with AitpClient(BASE, ADMIN_KEY, transport=transport) as admin:
        shop_key = (await admin.create_key("shop-5.near")).key
        async with AitpClient(BASE, shop_key, transport=transport) as shop:
            profile = await shop.set_profile(display_name="Sunny Socks", accent_color="#B45309")
            assert (profile.display_name, profile.accent_color, profile.description) == ("Sunny Socks", "#B45309", None)
            assert (await shop.get_profile()).accent_color == "#B45309"
            # the whole profile is replaced: a field left out is cleared
            assert (await shop.set_profile(display_name="Sunny Socks")).accent_color is None
            with pytest.raises(BadRequest) as bad:
                await shop.set_profile(accent_color="orange")
            assert bad.value.param == "accent_color"
            session = await shop.create_customer_session("4821")
            async with AitpClient(BASE, session.key, transport=transport) as customer:
                with pytest.raises(PermissionDenied) as refused:
                    await customer.set_profile(display_name="Sunny Socks")
                assert refused.value.code == "customer_profile_read_only"
