"""Presence in the conversation, as a shop's customer sees it at desktop (1280x800) and phone (390x844) sizes:
whether the shop's agent can be reached now ("Online · usually replies in …" while its inbox is followed live,
"Away: replies may take a while" when nothing of it is connected) and "<shop> is typing…" while it works on an
answer, in a polite live region that moves nothing on the page, gone when its answer comes or when it expires.

The shop agent talks over HTTP and follows its inbox over a WebSocket of its own (a one-time ticket, as any
client that keeps its key out of URLs); the customer uses the browser.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect
from websockets.sync.client import connect

from tests.web.conftest import SIZES, WebServer
from tests.web.test_customer import Shop


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server, name="Sunny Socks")


@contextmanager
def inbox_followed(shop: Shop) -> Iterator[None]:
    """The shop's agent connected: its inbox followed over a WebSocket while the block runs."""
    ticket = shop.api.post("/tickets").json()["ticket"]
    url = shop.server.base_url.replace("http://", "ws://") + f"/v1/actors/me/events/ws?ticket={ticket}"
    with connect(url):
        yield


def working(shop: Shop, thread: str, **fields: object) -> None:
    response = shop.api.post(f"/threads/{thread}/activity", json={"state": "working", **fields})
    assert response.status_code == 200, response.text


@SIZES
def test_the_shops_agent_shows_away_then_online_with_its_reply_time(
    page: Page, shop: Shop, size: dict[str, int]
) -> None:
    thread = shop.thread(messages=["Welcome to Sunny Socks!"])
    assert shop.customer_api.post(f"/threads/{thread}/messages", json={"content": "Hello"}).is_success
    shop.says(thread, "Hi! How can I help?")  # a reply within the second: "under a minute"
    page.set_viewport_size(size)

    shop.open(page, thread)
    line = page.locator(".conversation-head .presence-line")
    expect(line).to_have_text("Away: replies may take a while")  # nothing of the shop is connected
    expect(line).to_have_attribute("data-state", "away")
    expect(line).to_be_visible()

    with inbox_followed(shop):
        page.reload()
        expect(page.locator("#conversation")).to_have_attribute("data-state", "open")
        expect(line).to_have_text("Online · usually replies in under a minute")
        expect(line).to_have_attribute("data-state", "online")
        expect(line).to_be_in_viewport()


@SIZES
def test_the_typing_line_comes_while_the_agent_works_and_goes_with_its_answer(
    page: Page, shop: Shop, size: dict[str, int]
) -> None:
    thread = shop.thread(messages=["Welcome to Sunny Socks!"])
    page.set_viewport_size(size)
    shop.open(page, thread)
    typing = page.locator(".typing-line")
    expect(typing).to_have_attribute("role", "status")  # polite: read out when the reader is idle
    expect(typing).to_have_text("")
    composer = page.locator("#composer").bounding_box()
    log = page.locator("#scroller").bounding_box()

    with inbox_followed(shop):
        working(shop, thread)
        expect(typing).to_have_text("Sunny Socks is typing…")
        expect(typing).to_be_in_viewport()
        # the agent working says it is reachable: the line that said "Away" before it connected is read again
        expect(page.locator(".presence-line")).to_have_attribute("data-state", "online")
        assert page.locator("#composer").bounding_box() == composer  # nothing moved
        assert page.locator("#scroller").bounding_box() == log

        shop.says(thread, "Here are our red socks.")
        expect(page.locator("article.message", has_text="Here are our red socks.")).to_be_visible()
        expect(typing).to_have_text("")  # the answer came

    working(shop, thread, expires_in=1)  # and then nothing more: it ends by itself
    expect(typing).to_have_text("Sunny Socks is typing…")
    expect(typing).to_have_text("", timeout=5000)
    assert page.locator("#composer").bounding_box() == composer
