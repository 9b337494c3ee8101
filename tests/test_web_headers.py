"""Who may frame the chat UI's pages (src/aitp/bindings/openai_threads/web.py).

The main UI holds a key, so no other site may frame it (clickjacking): its HTML, and every other file it serves,
say `Content-Security-Policy: frame-ancestors 'none'` and `X-Frame-Options: DENY`. The chat a shop embeds in its
own website (embed.html, framed by embed.js) is the one page other sites may frame. The API's own answers are not
the UI's and are left as they are. (tests/web/test_embed.py frames both in Chromium.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from aitp.app import create_app
from aitp.config import Settings
from aitp.store import open_store
from tests.conftest import ADMIN_KEY

DENY = {"content-security-policy": "frame-ancestors 'none'", "x-frame-options": "DENY"}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    store = open_store(f"sqlite:///{tmp_path / 'aitp.db'}")
    await store.open()
    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://aitp.test") as client:
            yield client
    finally:
        await store.close()


def framing(response: httpx.Response) -> dict[str, str]:
    return {name: response.headers[name] for name in DENY if name in response.headers}


@pytest.mark.parametrize("path", ["/", "/index.html", "/app.js", "/styles.css", "/embed.js"])
async def test_the_main_ui_may_not_be_framed_by_any_site(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 200
    assert framing(response) == DENY
    assert framing(await client.head(path)) == DENY


async def test_the_embeddable_chat_may_be_framed_by_the_sites_its_shop_lists(client: httpx.AsyncClient) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = await client.post("/v1/keys", json={"actor": "shop-1.near"}, headers=admin)
    shop = {"Authorization": f"Bearer {made.json()['key']}"}
    nobody = {"content-security-policy": "frame-ancestors 'none'"}

    # no shop, an unknown shop, a shop that listed no site: framed by no one
    response = await client.get("/embed.html")
    assert response.status_code == 200
    assert 'src="embed-app.js"' in response.text
    assert framing(response) == nobody
    assert framing(await client.get("/embed.html?shop=nobody.near")) == nobody
    assert framing(await client.get("/embed.html?shop=shop-1.near")) == nobody

    listed = await client.put(
        "/v1/customer_sessions/settings",
        json={"embed_origins": ["https://Shop.example/", "http://localhost:8080", "https://shop.example"]},
        headers=shop,
    )
    assert listed.status_code == 200, listed.text
    assert listed.json()["embed_origins"] == ["https://shop.example", "http://localhost:8080"]
    assert framing(await client.get("/embed.html?shop=shop-1.near")) == {
        "content-security-policy": "frame-ancestors https://shop.example http://localhost:8080"
    }
    # another shop's chat is framed as that shop says, whatever page asks
    assert framing(await client.get("/embed.html?shop=nobody.near")) == nobody
    # that page alone: the same file under another path is denied like the rest
    assert framing(await client.get("/embed.html/?shop=shop-1.near")) == DENY


async def test_a_domain_shop_is_framed_by_its_own_host_until_it_lists_sites(client: httpx.AsyncClient) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    named = await client.post("/v1/threads", json={"actors": [{"id": "sunnysocks.example"}]}, headers=admin)
    assert named.status_code == 200, named.text  # an admin naming it makes it known

    assert framing(await client.get("/embed.html?shop=sunnysocks.example")) == {
        "content-security-policy": "frame-ancestors https://sunnysocks.example"
    }


@pytest.mark.parametrize(
    "origin",
    [
        "shop.example",
        "ftp://shop.example",
        "https://shop.example/chat",
        "https://shop.example?x=1",
        "https://*.example",
        "https://user@shop.example",
        "https://shop.example:99999",
        "https:// shop.example",
    ],
)
async def test_an_embed_origin_is_a_scheme_a_host_and_a_port(client: httpx.AsyncClient, origin: str) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = await client.post("/v1/keys", json={"actor": "shop-2.near"}, headers=admin)
    shop = {"Authorization": f"Bearer {made.json()['key']}"}

    refused = await client.put(
        "/v1/customer_sessions/settings", json={"embed_origins": ["https://ok.example", origin]}, headers=shop
    )

    assert refused.status_code == 400, refused.text
    assert (refused.json()["error"]["code"], refused.json()["error"]["param"]) == ("invalid_origin", "embed_origins[1]")


async def test_the_api_answers_are_not_the_uis(client: httpx.AsyncClient) -> None:
    health = await client.get("/health")
    assert health.status_code == 200 and framing(health) == {}
    refused = await client.get("/v1/threads")
    assert refused.status_code == 401 and framing(refused) == {}
