"""Searching the conversations (issue 31, item 5): the list's search box filters by what the list shows at once, and
a moment later (one request for a burst of keys) the server's full-text search of every message of the
customer's conversations adds those it finds, each with an excerpt of the matching message, the words marked;
choosing one opens it. At desktop (1280x800) and phone (390x844, touch) sizes."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from tests.web.axe import assert_accessible
from tests.web.conftest import PHONE, SIZES, WebServer
from tests.web.test_customer import Shop

SEARCH = "**/v1/threads/search?*"


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


def search_requests(page: Page) -> list[str]:
    """The URLs of the searches the page asks the server for, from now on."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/v1/threads/search" in request.url else None)
    return asked


@SIZES
def test_a_word_of_an_older_message_finds_its_conversation_and_opens_it(
    sized: Page, shop: Shop, web_server: WebServer, size: dict[str, int]
) -> None:
    socks = shop.thread(messages=["Your **merino** socks shipped today, with the receipt."])
    for n in range(12):  # the match is far above the end of the conversation
        shop.says(socks, f"Tracking update {n}: your parcel moved.\n\nIt is on its way.")
    shop.says(socks, "Anything else I can help with?")  # the list shows this one: it has no "merino"
    shop.thread(messages=["Cotton only, sorry"])
    stranger = Shop(web_server, name="Other Shop")  # another customer's conversation with the same word
    stranger.thread(messages=["merino for someone else"])
    shop.open(sized)
    asked = search_requests(sized)

    sized.get_by_label("Search conversations").press_sequentially("Merino socks", delay=40)

    found = sized.locator("#thread-list li")
    expect(found).to_have_count(1)
    item = sized.locator(f'#thread-list li[data-thread-id="{socks}"]')
    # the message that matched, as the customer reads it (no Markdown), its words marked
    expect(item.locator(".thread-snippet")).to_have_text(
        "Headphone Shop: Your merino socks shipped today, with the receipt."
    )
    expect(item.locator("mark")).to_have_text(["merino", "socks"])
    first = shop.api.get(f"/threads/{socks}/messages", params={"order": "asc"}).json()["data"][0]
    expect(item).to_have_attribute("data-matched-message", first["id"])
    expect(sized.locator("#threads [role=status]")).to_have_text("1 conversation found.")
    sized.wait_for_timeout(600)  # nothing more is asked once the keys stopped
    assert len(asked) == 1, asked  # one search for the burst of keys, not one per key
    assert "q=Merino+socks" in asked[0]
    assert_accessible(sized, "the list with a message found by a search")

    item.get_by_role("link").click()  # choosing it opens it

    expect(sized.locator("#conversation")).to_have_attribute("data-state", "open")
    expect(sized.locator("#thread-title")).to_have_text("Headphone Shop")
    assert f"thread={socks}" in sized.url and "message=" not in sized.url
    # it opens at the message found (not at the end), marked for a moment
    matched = sized.locator(f'article.message[data-message-id="{first["id"]}"]')
    expect(matched).to_be_in_viewport()
    expect(matched).to_have_class(re.compile(r"\bfound\b"))
    expect(sized.locator("article.message", has_text="Anything else")).not_to_be_in_viewport()
    if size == PHONE:
        expect(sized.locator("body")).to_have_attribute("data-screen", "conversation")


@SIZES
def test_the_names_filter_answers_at_once_and_the_messages_search_adds_to_it(
    sized: Page, shop: Shop, size: dict[str, int]
) -> None:
    titled = shop.thread(title="Gift ideas", messages=["Hello!"])
    mentioned = shop.thread(messages=["Wrap it as a gift, please"])
    shop.says(mentioned, "Done!")  # what the list shows of it
    shop.open(sized)
    held: list[Route] = []
    sized.route(SEARCH, lambda route: held.append(route))  # the server's answer waits

    sized.get_by_label("Search conversations").fill("gift")

    # at once, before the server answers: what the list shows matches
    expect(sized.locator("#thread-list li")).to_have_count(1)
    expect(sized.locator(f'#thread-list li[data-thread-id="{titled}"] .thread-title')).to_have_text("Gift ideas")
    expect(sized.locator("p.hint", has_text="No conversation matches")).to_be_hidden()  # (not yet: still searching)
    for _ in range(100):
        if held:
            break
        sized.wait_for_timeout(50)
    assert len(held) == 1
    held.pop().continue_()

    # then the conversation whose message has the word
    expect(sized.locator("#thread-list li")).to_have_count(2)
    snippet = sized.locator(f'#thread-list li[data-thread-id="{mentioned}"] .thread-snippet')
    expect(snippet).to_have_text("Headphone Shop: Wrap it as a gift, please")
    expect(snippet.locator("mark")).to_have_text("gift")

    sized.unroute(SEARCH)
    sized.get_by_label("Search conversations").fill("zebra")
    expect(sized.locator("p.hint", has_text="No conversation matches your search.")).to_be_visible()
    sized.get_by_label("Search conversations").fill("")
    expect(sized.locator("#thread-list .thread-snippet")).to_have_count(0)  # the list as it was
    expect(sized.locator(f'#thread-list li[data-thread-id="{mentioned}"] .thread-preview')).to_have_text(
        "Headphone Shop: Done!"
    )
