"""Bugs and polish a shop's customer would see (issue 31, item 5), each at desktop (1280x800) and on a touch
phone (390x844): the page stays the window's size, HTML in a message renders what is safe and nothing else,
previews are plain text, pictures that do not load leave a placeholder, and a radio card keeps focus and
its error in step with the user.

A shop agent talks over HTTP; the customer uses the browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.web.conftest import FileHost, WebServer, watched_page
from tests.web.test_customer import DECISIONS, Shop

CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"
# a 2x2 PNG: a product photo that loads
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d494844520000000200000002080600000072b60d24"
    "0000001649444154789c63f8cfc0f09f818181e13f030303c3ff0000e8f70bf5f2c8a7c90000000049454e44ae426082"
)


@dataclass
class Screen:
    """The page and how the customer touches it: a mouse on the desktop, a finger on the phone."""

    page: Page
    touch: bool

    def press(self, target: Locator) -> None:
        if self.touch:
            target.tap()
        else:
            target.click()


SCREENS = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}


@pytest.fixture(params=list(SCREENS))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Screen]:
    with watched_page(browser, **SCREENS[request.param]) as page:
        yield Screen(page, touch=request.param == "phone")


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server, name="Sunny Socks", logo=None)  # no picture but the ones a test puts


def example(name: str) -> dict[str, Any]:
    return json.loads((CAPABILITIES / "aitp-02-decisions" / "1.0.0" / "examples" / f"{name}.json").read_text())


def radio_card(screen: Screen, shop: Shop) -> tuple[str, Locator]:
    thread = shop.thread()
    shop.says(thread, example("request_decision"))
    shop.open(screen.page, thread)
    card = screen.page.locator('[data-renderer="request_decision"]')
    expect(card).to_have_attribute("data-kind", "radio")
    return thread, card


# ------------------------------------------------------------------------ the page is the window


def test_the_page_never_grows_past_the_window_only_the_messages_scroll(screen: Screen, shop: Shop) -> None:
    # a long conversation with cards holding visually hidden words ("Rated", " out of 5", legends) far down
    thread = shop.thread(messages=[f"Earlier message {n}" for n in range(30)])
    for n in range(3):
        for name in ("request_decision_products", "request_decision_checkbox"):
            card = example(name)
            card["request_decision"]["id"] = f"{name}-{n}"  # request ids are unique in a thread
            shop.says(thread, card)
    page = screen.page
    shop.open(page, thread)
    expect(page.locator('[data-renderer="request_decision"]')).to_have_count(6)
    scroller = page.locator("#scroller")
    scroller.evaluate("node => { node.scrollTop = node.scrollHeight; }")

    window = page.evaluate("() => innerHeight")
    heights = page.evaluate("() => ({html: document.documentElement.scrollHeight, body: document.body.scrollHeight})")
    assert heights["html"] <= window and heights["body"] <= window, (heights, window)
    page.evaluate("() => window.scrollTo(0, 100000)")
    assert page.evaluate("() => window.scrollY") == 0  # nothing to scroll the page itself to
    # the messages do scroll, inside their own box, and the composer stays in the window
    assert scroller.evaluate("node => node.scrollHeight > node.clientHeight && node.scrollTop > 0")
    expect(page.locator("#composer-text")).to_be_in_viewport()


# ------------------------------------------------------------------------ HTML in a message


def test_html_in_a_message_renders_what_is_safe_and_drops_the_rest(screen: Screen, shop: Shop) -> None:
    page = screen.page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    thread = shop.thread()
    messages = {
        "script": "<script>window.pwned = 1; alert(1)</script>hello",
        "image": 'Look: <img src=x onerror="window.pwned = 2; alert(2)"> there',
        "markdown-link": "Open [the offer](javascript:window.pwned=3) now",
        "html-link": '<a href="javascript:window.pwned=4">raw link</a> and <b>bold</b>',
        "style": "<style>body { display: none }</style>styled <your order number>",
        "svg": "<svg onload=alert(5)><circle r=4 /></svg>shape",
    }
    for text in messages.values():
        shop.says(thread, text)
    shop.open(page, thread)
    bubbles = page.locator("article.message .markdown")
    expect(bubbles).to_have_count(len(messages))

    expect(bubbles.nth(0)).to_have_text("hello")
    expect(bubbles.nth(1)).to_have_text("Look: there")
    expect(bubbles.nth(2)).to_have_text("Open the offer now")
    expect(bubbles.nth(3)).to_have_text("raw link and bold")
    expect(bubbles.nth(3).locator("b")).to_have_text("bold")  # what is safe is rendered
    expect(bubbles.nth(4)).to_have_text("styled <your order number>")  # no element: shown as typed
    expect(bubbles.nth(5)).to_have_text("shape")
    messages_box = page.locator("#messages")
    for literal in ("<script", "onerror", "javascript:", "<img", "<a ", "<style", "<svg"):
        expect(messages_box).not_to_contain_text(literal)
    expect(messages_box.locator("img, script, style, svg, [onerror], [onload]")).to_have_count(0)
    expect(bubbles.get_by_role("link")).to_have_count(0)  # a javascript: link is no link
    screen.press(bubbles.nth(2).get_by_text("the offer"))
    screen.press(bubbles.nth(3).get_by_text("raw link"))

    expect(page.locator("body")).to_be_visible()
    assert page.evaluate("() => window.pwned") is None
    assert dialogs == []


# ------------------------------------------------------------------------ previews


def test_thread_previews_show_plain_text_not_markdown(screen: Screen, shop: Shop) -> None:
    bold = shop.thread()
    shop.says(bold, "**Big** sale on [wool socks](https://example.com/socks), _today_ only")
    html = shop.thread()
    shop.says(html, "<script>alert(1)</script>Your order shipped.\n\n- tracking `soon`")
    page = screen.page
    shop.open(page)  # the list (the phone's first screen)

    preview = page.locator(f'#thread-list li[data-thread-id="{bold}"] .thread-preview')
    expect(preview).to_have_text("Sunny Socks: Big sale on wool socks, today only")
    expect(preview).to_be_visible()
    expect(page.locator(f'#thread-list li[data-thread-id="{html}"] .thread-preview')).to_have_text(
        "Sunny Socks: Your order shipped. tracking soon"
    )
    # search reads what is shown
    page.get_by_label("Search conversations").fill("big sale on wool")
    expect(page.locator("#thread-list li")).to_have_count(1)


# ------------------------------------------------------------------------ broken pictures


def test_a_picture_that_does_not_load_leaves_a_placeholder_not_a_broken_icon(
    screen: Screen, shop: Shop, file_host: FileHost
) -> None:
    photo = file_host.publish("/socks.png", PNG, "image/png")
    missing = f"{file_host.base_url}/gone.png"  # 404
    thread = shop.thread()
    shop.says(
        thread,
        {
            "$schema": DECISIONS,
            "request_decision": {
                "id": "pictures",
                "type": "products",
                "title": "Socks",
                "options": [
                    {"id": "red", "name": "Red socks", "image_url": missing},
                    {"id": "blue", "name": "Blue socks", "image_url": photo},
                ],
            },
        },
    )
    shop.says(
        thread,
        {
            "$schema": DECISIONS,
            "request_decision": {
                "id": "colour",
                "type": "radio",
                "title": "Which colour?",
                "options": [{"id": "green", "name": "Green", "image_url": missing}],
            },
        },
    )
    page = screen.page
    shop.open(page, thread)

    products = page.locator('[data-renderer="request_decision"][data-kind="products"]')
    red = products.locator('.aitp-product[data-option-id="red"]')
    expect(red.locator(".aitp-image-placeholder")).to_be_visible()
    expect(red.locator("img")).to_be_hidden()
    blue = products.locator('.aitp-product[data-option-id="blue"]')
    expect(blue.locator("img")).to_be_visible()
    expect(blue.locator(".aitp-image-placeholder")).to_be_hidden()
    choice = page.locator('[data-renderer="request_decision"][data-kind="radio"]')
    expect(choice.locator(".aitp-image-placeholder")).to_be_visible()
    expect(choice.locator("img")).to_be_hidden()
    # the placeholder keeps the picture's box: the cards still line up
    box, photo_box = red.locator(".aitp-image-placeholder").bounding_box(), blue.locator("img").bounding_box()
    assert box is not None and photo_box is not None and abs(box["height"] - photo_box["height"]) < 1
    expect(blue.locator("img")).to_have_js_property("naturalWidth", 2)
    broken = page.evaluate(
        "() => [...document.images].filter((img) => img.checkVisibility() && img.complete && !img.naturalWidth)"
        ".map((img) => img.src)"
    )
    assert broken == []


# ------------------------------------------------------------------------ a radio card


def test_submit_choice_puts_focus_on_what_was_chosen_not_the_page(screen: Screen, shop: Shop) -> None:
    thread, card = radio_card(screen, shop)
    screen.press(card.get_by_text("7", exact=True))
    expect(card.get_by_label("7", exact=True)).to_be_checked()
    screen.press(card.get_by_role("button", name="Submit choice"))

    note = card.locator(".aitp-notes [role=status]")
    expect(note).to_have_text("You chose: 7")
    expect(note).to_be_focused()
    assert screen.page.evaluate("() => document.activeElement !== document.body")
    assert [decision["options"] for decision in shop.decisions(thread)] == [[{"id": "7", "name": "7"}]]


def test_the_radio_error_goes_away_once_an_option_is_chosen(screen: Screen, shop: Shop) -> None:
    thread, card = radio_card(screen, shop)
    screen.press(card.get_by_role("button", name="Submit choice"))
    alert = card.get_by_role("alert")
    expect(alert).to_have_text("Choose an option.")
    assert shop.decisions(thread) == []

    screen.press(card.get_by_text("100", exact=True))
    expect(card.get_by_label("100", exact=True)).to_be_checked()
    expect(alert).to_be_hidden()
    screen.press(card.get_by_role("button", name="Submit choice"))
    expect(card.locator(".aitp-notes [role=status]")).to_have_text("You chose: 100")
    expect(alert).to_be_hidden()
