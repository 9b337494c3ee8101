"""Accessibility (issue 31): axe-core, run in Chromium on each screen a shop's customer meets, finds no violation of
moderate impact or worse (WCAG 2.0/2.1 A and AA, and axe's best practices: heading order, landmarks, names,
contrast). Each screen is checked at desktop (1280x800) and phone (390x844, touch) sizes, in light and dark
colour schemes: the sign-in form (and its error), the list of conversations (with the New conversation form and
a search), a conversation with a products card (its order summary open), a form request (its dialog open, then
sent) and a quote (its payment review open, then paid and waiting for the shop), the About panel (and its
developer details), a phone's separate screens (list, conversation, details, a card's error), and the chat a
shop embeds in its own page, in a light brand colour (the frame's document, and the shop's page around it).

A shop agent talks over HTTP; the customer uses the browser. axe-core is vendored for the tests only
(tests/web/vendor/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.web.axe import assert_accessible
from tests.web.conftest import DESKTOP, PHONE, WebServer, watched_page
from tests.web.test_customer import DECISIONS, LOGO, PAYMENTS, Shop, example
from tests.web.test_embed import Embedded

DATA_REQUEST = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
SCREENS: dict[str, dict[str, Any]] = {
    "desktop-light": {"viewport": DESKTOP, "color_scheme": "light"},
    "desktop-dark": {"viewport": DESKTOP, "color_scheme": "dark"},
    "phone-light": {"viewport": PHONE, "has_touch": True, "is_mobile": True, "color_scheme": "light"},
    "phone-dark": {"viewport": PHONE, "has_touch": True, "is_mobile": True, "color_scheme": "dark"},
}


@dataclass
class Screen:
    """The page, which screen it is (for messages), and how the customer touches it."""

    page: Page
    name: str
    phone: bool

    def press(self, target: Locator) -> None:
        if self.phone:
            target.tap()
        else:
            target.click()

    def check(self, state: str) -> None:
        """No violation of moderate impact or worse in the page as it is now."""
        settle(self.page)
        assert_accessible(self.page, f"{state} ({self.name})")


def open_screen(browser: Browser, name: str) -> Iterator[Screen]:
    with watched_page(browser, **SCREENS[name]) as page:
        yield Screen(page, name, phone=name.startswith("phone"))


@pytest.fixture(params=list(SCREENS))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Screen]:
    yield from open_screen(browser, request.param)


@pytest.fixture(params=[name for name in SCREENS if name.startswith("phone")])
def phone(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Screen]:
    yield from open_screen(browser, request.param)


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


def settle(page: Page) -> None:
    """Let transitions end (axe reads colours as they are painted) and fonts load."""
    page.evaluate("() => document.fonts.ready")
    page.evaluate(
        """() => Promise.all(document.getAnimations().map((animation) =>
            animation.finished.catch(() => undefined)))"""
    )


def quote(shop: Shop) -> dict[str, Any]:
    body = example("aitp-01-payments", "quote")
    body["quote"].update(quote_id="q-axe", merchant_id=shop.id, expiration="2099-01-01T00:00:00Z")
    body["quote"]["payment_options"][0]["payment_methods"][0]["recipient"] = shop.id
    return body


def data_request() -> dict[str, Any]:
    body = example("aitp-03-data-request", "request_data")
    body["$schema"] = DATA_REQUEST
    return body


def shopping_thread(shop: Shop) -> str:
    """A conversation with every kind of card a customer answers: products, a form, a quote."""
    everything = [DECISIONS, PAYMENTS, DATA_REQUEST]
    actors = [{"id": shop.id, "capabilities": everything}, {"id": shop.customer, "capabilities": everything}]
    created = shop.api.post(
        "/threads",
        json={"actors": actors, "metadata": {"title": "Headphones"}, "messages": ["Hello! How can I help?"]},
    )
    assert created.status_code == 200, created.text
    thread: str = created.json()["id"]
    assert shop.customer_api.post(
        f"/threads/{thread}/messages", json={"content": "Noise-cancelling headphones, please."}
    ).is_success
    # headings as an agent types them, levels skipped: the page's outline must stay whole
    shop.says(
        thread, "## Our picks\n\n#### Under $300\n\nThe **best matches**, see [our guide](https://example.com/guide)."
    )
    shop.says(thread, example("aitp-02-decisions", "request_decision_products"))
    shop.says(thread, data_request())
    shop.says(thread, quote(shop))
    return thread


# ------------------------------------------------------------------------ the screens


def test_the_sign_in_form(screen: Screen, web_server: WebServer) -> None:
    page = screen.page
    page.goto(web_server.base_url)
    expect(page.get_by_label("Access key")).to_be_visible()
    screen.check("the sign-in form")

    # with the server's refusal shown
    page.get_by_label("Access key").fill("aitp_not-a-real-key-but-long-enough")
    page.get_by_label("Access key").press("Enter")
    expect(page.locator("#sign-in-error")).to_be_visible()
    screen.check("the sign-in form with an error")


def test_the_list_of_conversations(screen: Screen, shop: Shop) -> None:
    read = shop.thread(title="Order 1", messages=["Your order has shipped"])
    shop.thread(title="Order 2")
    shop.says(shop.thread(title="Socks"), "**Big** sale on _wool_ socks")
    page = screen.page
    shop.open(page)
    expect(page.locator(f'#thread-list li[data-thread-id="{read}"]')).to_be_visible()
    screen.check("the list of conversations")

    screen.press(page.get_by_text("New conversation"))
    screen.press(page.get_by_text("Developer options"))
    screen.check("the list with the New conversation form open")

    page.get_by_label("Search conversations").fill("order")
    expect(page.locator("#thread-list li")).to_have_count(2)
    screen.check("the list filtered by a search")


def test_a_conversation_with_products_a_form_and_a_quote(screen: Screen, shop: Shop) -> None:
    thread = shopping_thread(shop)
    page = screen.page
    shop.open(page, thread)
    products = page.locator('[data-renderer="request_decision"]')
    expect(products.locator(".aitp-product")).to_have_count(4)
    card = page.locator('[data-renderer="quote"]')
    expect(card.get_by_label("$99.99", exact=True)).to_be_checked()
    # the agent's "##" then "####" sit under the conversation's title, with no level skipped
    text = page.locator("article.message .markdown").filter(has_text="Our picks")
    outline = text.evaluate("node => [...node.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => h.outerHTML)")
    assert outline == ["<h3>Our picks</h3>", "<h4>Under $300</h4>"]
    screen.check("a conversation with products, a form and a quote")

    # the order summary, before anything is sent
    soundcore = products.locator(".aitp-product").nth(1)
    screen.press(soundcore.get_by_role("button", name=re.compile("^Buy")))
    expect(products.get_by_role("group", name="Your order")).to_be_visible()
    screen.check("the order summary")

    # the payment review, before anything is paid; then the payment, waiting for the shop
    screen.press(card.get_by_role("button", name="Pay $99.99"))
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_be_visible()
    screen.check("the payment review")
    screen.press(review.get_by_role("button", name="Confirm payment"))
    expect(card).to_have_attribute("data-payment-state", "authorized")
    screen.check("a payment waiting for the shop")

    # the form the shop asks for, in its dialog, then sent
    screen.press(page.get_by_role("button", name="Fill out favorites"))
    dialog = page.get_by_role("dialog", name="Your Favorites")
    expect(dialog).to_be_visible()
    screen.check("the form dialog")
    dialog.get_by_label("Favorite Email").fill("ada@example.com")
    screen.press(dialog.get_by_role("button", name="Send"))
    expect(dialog).to_be_hidden()
    expect(page.locator('[data-renderer="request_data"] .aitp-notes')).to_contain_text("sent")
    screen.check("a sent form")

    # what the customer did is what the shop has: a payment and the form, no order (it was not confirmed)
    assert [payment["quote_id"] for payment in shop.payloads(thread, "payment")] == ["q-axe"]
    assert [data["fields"][2]["value"] for data in shop.payloads(thread, "data")] == ["ada@example.com"]
    assert shop.payloads(thread, "decision") == []


def test_the_about_panel(screen: Screen, shop: Shop) -> None:
    thread = shop.thread(title="Headphones", messages=["Welcome!"])
    page = screen.page
    shop.open(page, thread)
    if screen.phone:  # a screen of its own; on a desktop it sits beside the conversation
        screen.press(page.get_by_role("button", name="About"))
    details = page.locator("#details")
    expect(details).to_be_visible()
    expect(details.locator(f'li.person[data-actor="{shop.id}"]')).to_contain_text("Headphone Shop")
    screen.check("the About panel")

    screen.press(page.get_by_text("Developer details"))
    expect(details.locator(".thread-id")).to_have_text(thread)
    screen.press(details.locator(".add-actor-disclosure summary"))
    screen.check("the About panel with the developer details open")


def test_a_phone_shows_the_list_the_conversation_and_the_details_as_screens(phone: Screen, shop: Shop) -> None:
    screen = phone
    thread = shop.thread(title="Headphones", messages=[f"Message {n}" for n in range(12)])
    shop.says(thread, example("aitp-02-decisions", "request_decision"))
    page = screen.page
    shop.open(page)
    expect(page.locator("#conversation")).to_be_hidden()
    screen.check("the phone's list screen")

    screen.press(page.get_by_role("link", name=re.compile("Headphones")))
    expect(page.locator("#threads")).to_be_hidden()
    card = page.locator('[data-renderer="request_decision"]')
    expect(card).to_be_visible()
    screen.check("the phone's conversation screen")

    # a choice sent with none chosen: the card says so
    screen.press(card.get_by_role("button", name="Submit choice"))
    expect(card.get_by_role("alert")).to_have_text("Choose an option.")
    screen.check("a card's error on the phone")

    screen.press(page.get_by_role("button", name="About"))
    expect(page.locator("#conversation")).to_be_hidden()
    screen.check("the phone's details screen")


# ------------------------------------------------------------------------ the chat on a shop's page

LIGHT_BRAND = "#facc15"  # a yellow: white text would not read on it, nor would it as text on white


@pytest.fixture
def embedded(web_server: WebServer) -> Iterator[Embedded]:
    """A shop in a light brand colour, its website, and its customer's chat there."""
    site = Embedded(web_server)
    profile = {"display_name": site.name, "avatar_url": LOGO, "accent_color": LIGHT_BRAND}
    assert site.shop.api.put("/actors/me/profile", json=profile).status_code == 200
    yield site
    site.close()


def test_the_chat_a_shop_embeds_in_its_page(screen: Screen, embedded: Embedded) -> None:
    shop = embedded.shop
    page = screen.page
    frame = embedded.open(page)
    thread = embedded.thread()
    embedded.joins(thread)
    header = frame.locator(".embed-header")
    assert header.evaluate("node => getComputedStyle(node).backgroundColor") == "rgb(250, 204, 21)"
    chat = page.locator("#chat iframe").element_handle().content_frame()
    assert chat is not None

    def check(state: str) -> None:
        settle(page)
        assert_accessible(page, f"the shop's page, {state} ({screen.name})")
        assert_accessible(chat, f"the embedded chat, {state} ({screen.name})")

    check("the chat open")
    shop.says(thread, "Here is **what** we have, see [our guide](https://example.com/guide).")
    shop.says(thread, example("aitp-02-decisions", "request_decision_products"))
    shop.says(thread, quote(shop))
    card = frame.locator('[data-renderer="quote"]')
    expect(card.get_by_label("$99.99", exact=True)).to_be_checked()
    screen.press(frame.locator(".aitp-product").nth(1).get_by_role("button", name=re.compile("^Buy")))
    screen.press(card.get_by_role("button", name="Pay $99.99"))
    expect(card.get_by_role("group", name="Review the payment")).to_be_visible()
    check("with the order summary and the payment review open")
