"""The UI as a shop's customer meets it (issue 20), at desktop (1280x800) and phone (390x844) sizes: people by
name and avatar with the protocol folded away, Markdown, an order summary before buying, scrolling that
shows what arrives, the list of conversations after a reload, state that is not stale, and focus.

A shop agent talks over HTTP; the customer uses the browser. Every answer is checked through the API.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from tests.web.conftest import SIZES, WebServer

CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
EVERY = [DECISIONS, PAYMENTS]
# a 2x2 PNG: the shop's logo
LOGO = (
    "data:image/png;base64,"
    + base64.b64encode(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d494844520000000200000002080600000072b60d24"
            "0000001649444154789c63f8cfc0f09f818181e13f030303c3ff0000e8f70bf5f2c8a7c90000000049454e44ae426082"
        )
    ).decode()
)
_names = itertools.count(1)


def example(capability: str, name: str) -> dict[str, Any]:
    return json.loads((CAPABILITIES / capability / "1.0.0" / "examples" / f"{name}.json").read_text())


class Shop:
    """A shop agent with a profile, and a customer (its key) the browser signs in as."""

    def __init__(self, server: WebServer, name: str = "Headphone Shop", logo: str | None = LOGO) -> None:
        n = next(_names)
        self.server = server
        self.id, self.customer = f"shop-{n}.near", f"ada-{n}.near"
        self.key = server.key_for(self.customer)
        self.api = server.agent(self.id)
        self.customer_api = server.client(self.key)
        assert self.api.put(
            "/actors/me/profile",
            json={"display_name": name, "avatar_url": logo, "description": "Good sound since 1999"},
        ).is_success
        assert self.customer_api.put("/actors/me/profile", json={"display_name": "Ada Lovelace"}).is_success

    def thread(self, title: str | None = None, messages: list[str] | None = None) -> str:
        actors = [{"id": self.id, "capabilities": EVERY}, {"id": self.customer, "capabilities": EVERY}]
        body: dict[str, Any] = {"actors": actors, "messages": messages or []}
        if title:
            body["metadata"] = {"title": title}
        response = self.api.post("/threads", json=body)
        assert response.status_code == 200, response.text
        return response.json()["id"]

    def says(self, thread: str, content: str | dict[str, Any]) -> dict[str, Any]:
        text = content if isinstance(content, str) else json.dumps(content)
        response = self.api.post(f"/threads/{thread}/messages", json={"content": text})
        assert response.status_code == 200, response.text
        return response.json()

    def payloads(self, thread: str, kind: str) -> list[dict[str, Any]]:
        """The `kind` capability payloads posted in `thread` (e.g. "decision", "payment"), read through the API."""
        messages = self.api.get(f"/threads/{thread}/messages", params={"order": "asc", "limit": 100}).json()["data"]
        return [
            json.loads(part["text"]["value"])[kind]
            for message in messages
            for part, aitp in zip(message["content"], message["aitp"] or [], strict=False)
            if aitp and aitp["type"] == kind
        ]

    def decisions(self, thread: str) -> list[dict[str, Any]]:
        return self.payloads(thread, "decision")

    def open(self, page: Page, thread: str | None = None) -> None:
        page.goto(self.server.url(self.key, thread))
        expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        if thread:
            expect(page.locator("#conversation")).to_have_attribute("data-state", "open")


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


def products() -> dict[str, Any]:
    return example("aitp-02-decisions", "request_decision_products")


# ------------------------------------------------------------------------ 1. names, not protocol


def test_people_show_by_name_and_avatar_and_the_protocol_is_folded_for_developers(page: Page, shop: Shop) -> None:
    thread = shop.thread(messages=["Welcome!"])
    shop.says(thread, products())
    quote = example("aitp-01-payments", "quote")
    quote["quote"]["expiration"] = "2099-01-01T00:00:00Z"
    shop.says(thread, quote)

    shop.open(page, thread)

    expect(page.locator("#whoami")).to_have_text("Ada Lovelace")
    item = page.locator(f'#thread-list li[data-thread-id="{thread}"]')
    expect(item.locator(".thread-title")).to_have_text("Headphone Shop")
    expect(item.locator(".thread-preview")).to_have_text(
        "Headphone Shop: Sent a quote: Premium Subscription - Annual Plan"
    )
    expect(page.locator("#thread-title")).to_have_text("Headphone Shop")
    expect(page.locator("#thread-subtitle")).to_have_text("With Headphone Shop")
    expect(page.locator(".conversation-head")).not_to_contain_text(thread)  # no thread id for customers
    welcome = page.locator("article.message", has_text="Welcome!")
    expect(welcome.locator(".message-author")).to_have_text("Headphone Shop")
    expect(welcome.locator("img.avatar")).to_have_attribute("src", LOGO)
    card = page.locator('[data-renderer="quote"]')
    expect(card.get_by_label("$99.99", exact=True)).to_be_checked()  # the amount, in plain words
    for crypto in ("near_payment_channel", "USDC", "NEAR", "wallet"):
        expect(card).not_to_contain_text(crypto)
    person = page.locator(f'#details li.person[data-actor="{shop.id}"]')
    expect(person).to_contain_text("Headphone Shop")
    expect(person).to_contain_text("Good sound since 1999")

    # the developer's view is one click away
    expect(page.locator("#details .negotiated-list")).to_be_hidden()
    page.get_by_text("Developer details").click()
    expect(page.locator("#details .thread-id")).to_have_text(thread)
    expect(page.locator(f'#details li.actor[data-actor="{shop.id}"] .role')).to_have_text("user")
    expect(page.locator('#details li.negotiated[data-capability="aitp-02-decisions"]')).to_be_visible()


# ------------------------------------------------------------------------ 2. an order summary


@SIZES
def test_buy_shows_an_order_summary_and_only_confirm_sends_it(page: Page, shop: Shop, size: dict[str, int]) -> None:
    thread = shop.thread()
    shop.says(thread, products())
    page.set_viewport_size(size)
    shop.open(page, thread)
    card = page.locator('[data-renderer="request_decision"]')
    soundcore = card.locator(".aitp-product").nth(1)
    soundcore.get_by_label("Quantity").fill("2")
    soundcore.get_by_role("button", name=re.compile("^Buy")).click()

    order = card.get_by_role("group", name="Your order")
    expect(order.locator(".aitp-order-quantity dd")).to_have_text("2 × $79.99")
    expect(order.locator(".aitp-order-total dd")).to_have_text("$159.98")
    expect(order).to_be_in_viewport()
    expect(order.get_by_role("button", name="Confirm order")).to_be_focused()
    order.get_by_role("button", name="Change").click()  # back, nothing sent
    expect(order).to_be_hidden()
    expect(soundcore.get_by_role("button", name=re.compile("^Buy"))).to_be_focused()
    assert shop.decisions(thread) == []

    soundcore.get_by_role("button", name=re.compile("^Buy")).click()
    order.get_by_role("button", name="Confirm order").click()

    note = card.locator(".aitp-notes [role=status]")
    expect(note).to_have_text("You chose: Soundcore by Anker, Space One ×2")
    expect(note).to_be_focused()  # not the page body: the button that had focus is disabled now
    assert [d["options"] for d in shop.decisions(thread)] == [
        [{"id": "product_2", "name": "Soundcore by Anker, Space One", "quantity": 2}]
    ]


def test_on_a_slow_network_every_buy_waits_and_a_refusal_reads_as_a_sentence(page: Page, shop: Shop) -> None:
    thread = shop.thread()
    request = products()
    shop.says(thread, request)
    held: list[Route] = []

    def hold(route: Route) -> None:
        if route.request.method == "POST":
            held.append(route)  # the answer is on a slow network: it arrives when the test lets it
        else:
            route.continue_()

    page.route(re.compile(r"/v1/threads/[^/]+/messages$"), hold)
    shop.open(page, thread)
    card = page.locator('[data-renderer="request_decision"]')
    card.locator(".aitp-product").first.get_by_role("button", name=re.compile("^Buy")).click()
    card.get_by_role("button", name="Confirm order").click()

    # while the decision is on its way, no other Buy (nor Confirm again) can send a second one
    for button in card.get_by_role("button", name=re.compile("^Buy")).all():
        expect(button).to_be_disabled()
    expect(card.get_by_role("button", name="Confirm order")).to_be_disabled()

    # meanwhile the customer answered on another device: this one is refused (409), said in words
    other = {"request_decision_id": request["request_decision"]["id"], "options": [{"id": "product_5"}]}
    answered = shop.customer_api.post(
        f"/threads/{thread}/messages", json={"content": json.dumps({"$schema": DECISIONS, "decision": other})}
    )
    assert answered.status_code == 200, answered.text
    held[0].continue_()

    alert = card.get_by_role("alert")
    expect(alert.locator(".sentence")).to_have_text("This was already answered, so nothing more was sent.")
    expect(alert.locator("code")).to_be_hidden()  # the code and the server's words are folded under Details
    alert.get_by_text("Details").click()
    expect(alert.locator("code")).to_contain_text("code already_answered")
    expect(card.locator(".aitp-notes")).to_contain_text("You chose: Sony WH-1000XM5")


# ------------------------------------------------------------------------ 3. Markdown


@SIZES
def test_text_is_safe_markdown_with_clickable_links_and_long_urls_wrap(
    page: Page, shop: Shop, size: dict[str, int]
) -> None:
    long_url = "https://example.com/" + "very-long-path-segment/" * 12
    thread = shop.thread()
    shop.says(
        thread,
        "**Great** choice, _really_.\n\n- one\n- two\n\nSee [the manual](https://example.com/manual), "
        f"{long_url} and <img src=x onerror=alert(1)> or [this](javascript:alert(1)).",
    )
    page.set_viewport_size(size)
    shop.open(page, thread)

    text = page.locator("article.message .markdown")
    expect(text.locator("strong")).to_have_text("Great")
    expect(text.locator("em")).to_have_text("really")
    expect(text.locator("li")).to_have_count(2)
    manual = text.get_by_role("link", name="the manual")
    expect(manual).to_have_attribute("href", "https://example.com/manual")
    expect(manual).to_have_attribute("target", "_blank")
    expect(manual).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(text.get_by_role("link", name=long_url)).to_have_attribute("href", long_url)
    expect(text).not_to_contain_text("onerror")  # unsafe HTML is dropped, not shown (tests/web/test_polish.py)
    expect(text.locator("img")).to_have_count(0)
    expect(text.locator('a[href^="javascript"]')).to_have_count(0)
    expect(text).to_contain_text("this")
    # the long URL wraps inside its bubble
    assert not text.evaluate("node => node.scrollWidth > node.clientWidth")
    bubble = text.bounding_box()
    assert bubble is not None and bubble["x"] + bubble["width"] <= size["width"]


# ------------------------------------------------------------------------ 4. scrolling


@SIZES
def test_a_products_card_opens_at_its_top_and_what_arrives_above_the_fold_is_marked(
    page: Page, shop: Shop, size: dict[str, int]
) -> None:
    thread = shop.thread(messages=[f"Earlier message {n}" for n in range(20)])
    shop.says(thread, products())
    page.set_viewport_size(size)
    shop.open(page, thread)

    card = page.locator('[data-renderer="request_decision"]')
    heading = card.get_by_role("heading", name="Recommended Products", exact=True)
    expect(heading).to_be_in_viewport()  # its top, not its bottom

    page.locator("#scroller").evaluate("node => node.scrollTop = 0")
    shop.says(thread, "Any questions?")
    button = page.get_by_role("button", name="New messages ↓")
    expect(button).to_be_visible()
    expect(page.locator(".new-divider")).to_have_count(1)
    expect(page.locator("article.message", has_text="Any questions?")).not_to_be_in_viewport()
    button.click()
    expect(page.locator("article.message", has_text="Any questions?")).to_be_in_viewport()
    expect(button).to_be_hidden()


def test_an_error_and_an_expanded_message_open_in_view(page: Page, shop: Shop) -> None:
    thread = shop.thread(messages=[f"Message {n}" for n in range(20)])
    shop.says(
        thread,
        {
            "$schema": "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json",
            "top_up_request": example("aitp-01-payments", "top_up_request")["top_up_request"],
        },
    )
    shop.open(page, thread)

    page.locator('[data-renderer="json"] summary').click()
    expect(page.locator('[data-renderer="json"] pre')).to_be_in_viewport()


# ------------------------------------------------------------------------ 6. the list


def test_after_a_reload_the_list_shows_last_messages_unread_state_and_search(page: Page, shop: Shop) -> None:
    threads = [shop.thread(title=f"Order {n}") for n in range(55)]
    shop.says(threads[0], "Your order has shipped")
    shop.open(page)
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")

    first = page.locator(f'#thread-list li[data-thread-id="{threads[0]}"]')
    expect(first.locator(".thread-preview")).to_have_text("Headphone Shop: Your order has shipped")
    expect(first.locator("a")).to_have_class(re.compile("fresh"))  # unread
    expect(page.locator(f'#thread-list li[data-thread-id="{threads[5]}"] .thread-preview')).to_have_text(
        "No messages yet"
    )
    # with 55 conversations, "New conversation" and search stay in reach at the top
    page.locator("#threads").evaluate("node => node.scrollTop = node.scrollHeight")
    expect(page.get_by_text("New conversation")).to_be_in_viewport()
    page.get_by_label("Search conversations").fill("order 42")
    expect(page.locator("#thread-list li")).to_have_count(1)
    expect(page.locator("#thread-list li .thread-title")).to_have_text("Order 42")
    page.get_by_label("Search conversations").fill("")

    first.get_by_role("link").click()
    expect(first.locator("a")).not_to_have_class(re.compile("fresh"))
    page.reload()  # read stays read
    expect(page.locator(f'#thread-list li[data-thread-id="{threads[0]}"] .thread-preview')).to_have_text(
        "Headphone Shop: Your order has shipped"
    )
    expect(page.locator(f'#thread-list li[data-thread-id="{threads[0]}"] a')).not_to_have_class(re.compile("fresh"))


# ------------------------------------------------------------------------ 7. no stale state


def test_a_bought_variant_shows_after_a_reload_and_my_answer_is_a_compact_bubble(page: Page, shop: Shop) -> None:
    thread = shop.thread()
    shop.says(thread, products())
    shop.open(page, thread)
    soundcore = page.locator(".aitp-product").nth(1)
    soundcore.get_by_label("Variant").select_option(label="Cream")
    soundcore.get_by_label("Quantity").fill("3")
    soundcore.get_by_role("button", name=re.compile("^Buy")).click()
    page.get_by_role("button", name="Confirm order").click()
    expect(page.locator(".aitp-notes")).to_contain_text("You chose")

    page.reload()
    soundcore = page.locator(".aitp-product").nth(1)
    expect(soundcore.get_by_label("Variant")).to_have_value("product_4")
    expect(soundcore.get_by_label("Quantity")).to_have_value("3")
    expect(soundcore).to_have_attribute("data-chosen", "true")
    answer = page.locator("article.message.mine.answer")
    expect(answer).to_have_text(re.compile(r"You chose Soundcore by Anker, Cream × 3"))
    bubble = answer.locator(".aitp-answer").bounding_box()
    column = page.locator("#messages").bounding_box()
    assert bubble is not None and column is not None and bubble["width"] < column["width"] * 0.75


def test_the_cannot_be_reached_alert_clears_once_the_connection_is_back(page: Page, shop: Shop) -> None:
    thread = shop.thread()
    shop.open(page, thread)

    page.context.set_offline(True)
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Hello?")
    composer.press("Enter")
    alert = page.locator("#composer [role=alert]")
    expect(alert.locator(".sentence")).to_have_text(
        "We can't reach the service right now. Check your connection; we keep trying."
    )
    page.context.set_offline(False)

    expect(page.locator("#connection")).to_have_attribute("data-state", "live", timeout=20_000)
    expect(alert).to_be_hidden()


# ------------------------------------------------------------------------ 8. focus


def test_focus_follows_the_customer_not_the_page_body(page: Page, shop: Shop, web_server: WebServer) -> None:
    thread = shop.thread(title="Headphones", messages=["Hi"])
    page.goto(web_server.base_url)
    page.get_by_label("Access key").fill(shop.key)
    page.get_by_label("Access key").press("Enter")
    expect(page.locator("#threads-heading")).to_be_focused()

    page.locator(f'#thread-list li[data-thread-id="{thread}"] a').click()
    expect(page.locator("#thread-title")).to_be_focused()
    expect(page.locator("#thread-title")).to_have_text("Headphones")


def test_the_inbox_socket_opens_with_a_ticket_not_the_key(page: Page, shop: Shop) -> None:
    urls: list[str] = []
    page.on("websocket", lambda socket: urls.append(socket.url))
    shop.open(page)

    assert urls and all("ticket=aitpt_" in url and "token=" not in url for url in urls)
    assert shop.key not in page.evaluate("performance.getEntries().map(e => e.name).join(' ')")
    with httpx.Client() as client:  # the ticket worked once: a replay of the URL is refused
        assert client.get(urls[0].replace("ws://", "http://")).status_code in (400, 401, 403, 404)
