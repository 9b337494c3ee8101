"""The capability renderers in a real browser: an agent posts AITP messages over HTTP, the user
answers in the UI, and every answer is checked through the API as a message the server accepted.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from aitp.config import Settings
from aitp.testing import start_server
from tests.conftest import ADMIN_KEY
from tests.web.conftest import FileHost, WebServer

EXAMPLES = Path(__file__).resolve().parents[2] / "capabilities"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
LEGACY_PAYMENTS = "https://aitp.dev/v1/payments/schema.json"
NEAR_WALLET = "https://aitp.dev/capabilities/aitp-04-near-wallet/v1.0.0/schema.json"
EVERY_CAPABILITY = [DECISIONS, DATA, PAYMENTS, LEGACY_PAYMENTS, NEAR_WALLET]


def example(capability: str, name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / capability / "1.0.0" / "examples" / f"{name}.json").read_text())


class Conversation:
    """A thread between the user (in the browser) and a shop agent (over HTTP)."""

    def __init__(self, server: WebServer, user: str, shop: str, capabilities: list[str]) -> None:
        self.server = server
        self.user, self.shop_id = user, shop
        self.user_key = server.key_for(user)
        self.user_api = server.client(self.user_key)
        self.shop = server.agent(shop)
        body = {"actors": [{"id": user, "capabilities": capabilities}, {"id": shop, "capabilities": capabilities}]}
        created = self.user_api.post("/threads", json=body)
        assert created.status_code == 200, created.text
        self.id = created.json()["id"]

    def agent_posts(self, payload: dict[str, Any], client: httpx.Client | None = None) -> dict[str, Any]:
        response = (client or self.shop).post(f"/threads/{self.id}/messages", json={"content": json.dumps(payload)})
        assert response.status_code == 200, response.text
        return response.json()

    def messages(self) -> list[dict[str, Any]]:
        """Every message, oldest first, as the shop agent reads them."""
        response = self.shop.get(f"/threads/{self.id}/messages", params={"order": "asc", "limit": 100})
        assert response.status_code == 200, response.text
        return response.json()["data"]

    def answers(self, kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(payload, aitp) of every accepted part of message type `kind`, oldest first."""
        found = []
        for message in self.messages():
            for part, aitp in zip(message["content"], message["aitp"] or [], strict=False):
                if aitp and aitp["type"] == kind:
                    assert message["metadata"]["actor"] == self.user
                    found.append((json.loads(part["text"]["value"]), aitp))
        return found

    def open(self, page: Page) -> None:
        page.goto(self.server.url(self.user_key, self.id))
        expect(page.locator("article.message").first).to_be_visible()

    def shows(self, page: Page, payload: dict[str, Any], renderer: str) -> Locator:
        """The agent posts `payload` and the user opens the thread: the element its renderer drew."""
        self.agent_posts(payload)
        self.open(page)
        return page.locator(f'[data-renderer="{renderer}"]')


@pytest.fixture
def conversation(web_server: WebServer, request: pytest.FixtureRequest) -> Conversation:
    # actor ids unique per test: keys and threads accumulate on the module's server
    suffix = request.node.name.replace("_", "-")[-40:]
    return Conversation(web_server, f"user-{suffix}.near", f"shop-{suffix}.near", EVERY_CAPABILITY)


def answered_with(conversation: Conversation, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one accepted answer of type `kind` (polled: the click returns before the POST does)."""
    for _ in range(50):
        found = conversation.answers(kind)
        if found:
            assert len(found) == 1, found
            return found[0]
        threading.Event().wait(0.1)
    raise AssertionError(f"no {kind} message was accepted")


# ------------------------------------------------------------------ decisions


def test_products_render_as_cards_and_buying_a_variant_posts_a_decision(page: Page, conversation: Conversation) -> None:
    request = example("aitp-02-decisions", "request_decision_products")
    card = conversation.shows(page, request, "request_decision")
    expect(card).to_have_attribute("data-kind", "products")
    expect(card.get_by_role("heading", name="Recommended Products")).to_be_visible()
    products = card.locator(".aitp-product")
    expect(products).to_have_count(4)
    first = products.nth(0)
    expect(first.get_by_role("link", name="JBL Tour One M2")).to_have_attribute(
        "href", "https://www.amazon.com/JBL-Tour-One-Cancelling-Headphones/dp/B0C4JBTM5B"
    )
    expect(first.locator(".aitp-rating")).to_contain_text("4.2")
    expect(first.locator(".aitp-rating")).to_contain_text("132 reviews")
    expect(first.locator(".aitp-price")).to_have_text("$199.50")
    expect(first.locator("img")).to_have_attribute(
        "src", "https://m.media-amazon.com/images/I/61rJmoiiYHL._AC_SX679_.jpg"
    )
    expect(first).to_contain_text("A short, summarized description about the headphones")

    soundcore = products.nth(1)
    soundcore.get_by_label("Variant").select_option(label="Cream")
    expect(soundcore.locator(".aitp-price")).to_have_text("$74.99")  # the variant's own quote
    expect(soundcore.get_by_role("link", name="Soundcore by Anker, Cream")).to_be_visible()
    soundcore.get_by_label("Quantity").fill("2")
    soundcore.get_by_role("button", name="Buy Soundcore by Anker, Cream").click()

    # an order summary first, with its total; nothing is sent before Confirm
    order = card.get_by_role("group", name="Your order")
    expect(order.locator(".aitp-order-item dd")).to_have_text("Soundcore by Anker, Cream")
    expect(order.locator(".aitp-order-quantity dd")).to_have_text("2 × $74.99")
    expect(order.locator(".aitp-order-total dd")).to_have_text("$149.98")
    confirm = order.get_by_role("button", name="Confirm order")
    expect(confirm).to_be_focused()
    assert conversation.answers("decision") == []
    confirm.click()

    expect(card.locator(".aitp-notes")).to_have_text("You chose: Soundcore by Anker, Cream ×2")
    payload, aitp = answered_with(conversation, "decision")
    assert payload == {
        "$schema": DECISIONS,
        "decision": {
            "request_decision_id": request["request_decision"]["id"],
            "options": [{"id": "product_4", "name": "Soundcore by Anker, Cream", "quantity": 2}],
        },
    }
    assert (aitp["capability"], aitp["version"], aitp["validated"]) == ("aitp-02-decisions", "1.0.0", True)
    expect(card.locator("fieldset.aitp-controls")).to_have_attribute("disabled", "")
    expect(first.get_by_role("button", name="Buy JBL Tour One M2")).to_be_disabled()
    # the decision itself renders as a summary naming the request it answers
    decision = page.get_by_role("region", name="Answer to “Recommended Products”")
    expect(decision).to_have_attribute("data-renderer", "decision")
    expect(decision).to_have_text("You chose Soundcore by Anker, Cream × 2")


def test_cards_fit_a_360_pixel_wide_screen(page: Page, conversation: Conversation) -> None:
    conversation.agent_posts(example("aitp-02-decisions", "request_decision_products"))
    conversation.agent_posts(example("aitp-04-near-wallet", "request_transaction"))  # long unbroken strings
    page.set_viewport_size({"width": 360, "height": 740})
    conversation.open(page)
    expect(page.locator('[data-renderer="request_decision"] .aitp-product')).to_have_count(4)
    page.locator('[data-renderer="json"] summary').click()
    for card in page.locator("[data-renderer]").all():
        box = card.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360, card.get_attribute("data-renderer")
        assert not card.evaluate("node => node.scrollWidth > node.clientWidth")


def test_message_data_is_text_and_unsafe_urls_are_dropped(page: Page, conversation: Conversation) -> None:
    request = {
        "$schema": DECISIONS,
        "request_decision": {
            "id": "xss",
            "type": "products",
            "title": "<img src=x onerror=alert(1)>",
            "options": [
                {
                    "id": "p1",
                    "name": "<b>Bold</b> socks",
                    "url": "javascript:alert(1)",
                    "image_url": "javascript:alert(2)",
                }
            ],
        },
    }
    card = conversation.shows(page, request, "request_decision")
    expect(card.get_by_role("heading", name="<img src=x onerror=alert(1)>")).to_be_visible()
    expect(card.locator(".aitp-product-name")).to_have_text("<b>Bold</b> socks")
    assert card.locator("b, a[href^=javascript], img[src^=javascript], img[src=x]").count() == 0


def test_a_radio_choice_made_with_the_keyboard_posts_one_option(page: Page, conversation: Conversation) -> None:
    request = example("aitp-02-decisions", "request_decision")
    card = conversation.shows(page, request, "request_decision")
    expect(card).to_have_attribute("data-kind", "radio")
    expect(card).to_contain_text("Select your favorite number:")
    card.get_by_label("0", exact=True).focus()
    page.keyboard.press("ArrowDown")  # native radio groups move the choice with the arrow keys
    expect(card.get_by_label("7", exact=True)).to_be_checked()
    page.keyboard.press("Tab")
    expect(card.get_by_role("button", name="Submit choice")).to_be_focused()
    page.keyboard.press("Enter")

    expect(card).to_contain_text("You chose: 7")
    payload, _ = answered_with(conversation, "decision")
    assert payload["decision"] == {
        "request_decision_id": request["request_decision"]["id"],
        "options": [{"id": "7", "name": "7"}],
    }
    expect(card.get_by_label("100", exact=True)).to_be_disabled()


def test_checkboxes_post_every_chosen_option(page: Page, conversation: Conversation) -> None:
    request = example("aitp-02-decisions", "request_decision_checkbox")
    card = conversation.shows(page, request, "request_decision")
    expect(card).to_have_attribute("data-kind", "checkbox")
    card.get_by_role("button", name="Submit choices").click()
    expect(card.get_by_role("alert")).to_have_text("Choose at least one option.")
    card.get_by_label("Blue").check()
    card.get_by_label("Green").check()
    card.get_by_role("button", name="Submit choices").click()

    expect(card).to_contain_text("You chose")
    payload, _ = answered_with(conversation, "decision")
    assert payload["decision"]["options"] == [{"id": "blue", "name": "Blue"}, {"id": "green", "name": "Green"}]


def test_a_confirmation_is_one_button_per_option(page: Page, conversation: Conversation) -> None:
    request = example("aitp-02-decisions", "request_decision_confirmation")
    card = conversation.shows(page, request, "request_decision")
    expect(card).to_have_attribute("data-kind", "confirmation")
    expect(card.get_by_role("button")).to_have_count(3)
    card.get_by_role("button", name="No, that's not healthy").click()

    expect(card).to_contain_text("You chose")
    payload, _ = answered_with(conversation, "decision")
    assert payload["decision"]["options"] == [{"id": "2", "name": "No, that's not healthy"}]


def test_a_request_answered_by_someone_else_is_disabled_live(
    page: Page, web_server: WebServer, conversation: Conversation
) -> None:
    friend_id = conversation.user.replace("user-", "friend-")
    friend = web_server.agent(friend_id)
    added = conversation.shop.post(
        f"/threads/{conversation.id}/actors", json={"id": friend_id, "capabilities": EVERY_CAPABILITY}
    )
    assert added.status_code == 200, added.text
    request = example("aitp-02-decisions", "request_decision_confirmation")
    card = conversation.shows(page, request, "request_decision")
    expect(card.get_by_role("button", name="Yes, eat the cookies")).to_be_enabled()

    answer = {"request_decision_id": request["request_decision"]["id"], "options": [{"id": "1"}]}
    conversation.agent_posts({"$schema": DECISIONS, "decision": answer}, client=friend)
    expect(card).to_contain_text(f"{friend_id} chose: Yes, eat the cookies")
    for name in ("Yes, eat the cookies", "No, that's not healthy", "Something else"):
        expect(card.get_by_role("button", name=name)).to_be_disabled()

    page.reload()  # already answered when the thread loads
    expect(page.locator('[data-renderer="request_decision"]')).to_contain_text(f"{friend_id} chose")


# ------------------------------------------------------------------ data requests

EVERY_FIELD = {
    "id": "shipping-1",
    "title": "Shipping details",
    "description": "Where should we send your order?",
    "fillButtonLabel": "Fill out shipping details",
    "form": {
        "fields": [
            {"id": "name", "label": "Full name", "type": "text", "required": True, "autocomplete": "name"},
            {"id": "pairs", "label": "Pairs", "type": "number", "default_value": "1"},
            {"id": "email", "label": "Email", "type": "email", "required": True, "autocomplete": "email"},
            {"id": "note", "label": "Note", "type": "textarea", "description": "Anything the courier should know"},
            {"id": "size", "label": "Size", "type": "select", "options": ["S", "M", "L"], "default_value": "M"},
            {"id": "country", "label": "Country", "type": "combobox", "options": ["France", "Germany"]},
            {"id": "phone", "label": "Phone", "type": "tel", "autocomplete": "tel"},
        ]
    },
}


def test_a_data_request_opens_a_form_with_every_field_type_and_posts_data(
    page: Page, conversation: Conversation
) -> None:
    card = conversation.shows(page, {"$schema": DATA, "request_data": EVERY_FIELD}, "request_data")
    expect(card.get_by_role("heading", name="Shipping details")).to_be_visible()
    expect(card).to_contain_text("Where should we send your order?")
    card.get_by_role("button", name="Fill out shipping details").click()

    form = page.get_by_role("dialog", name="Shipping details")
    expect(form).to_be_visible()
    expect(form.get_by_label("Full name")).to_be_focused()
    expect(form.get_by_label("Full name")).to_have_attribute("autocomplete", "name")
    expect(form.get_by_label("Full name")).to_have_attribute("required", "")
    expect(form.get_by_label("Pairs")).to_have_attribute("type", "number")
    expect(form.get_by_label("Pairs")).to_have_value("1")
    expect(form.get_by_label("Email")).to_have_attribute("type", "email")
    expect(form.get_by_label("Note")).to_have_accessible_description("Anything the courier should know")
    assert form.get_by_label("Note").evaluate("node => node.tagName") == "TEXTAREA"
    expect(form.get_by_label("Size")).to_have_value("M")
    assert form.get_by_label("Country").evaluate("node => [...node.list.options].map(o => o.value)") == [
        "France",
        "Germany",
    ]
    expect(form.get_by_label("Phone")).to_have_attribute("type", "tel")

    form.get_by_role("button", name="Send").click()  # required fields empty: the browser keeps the form open
    expect(form).to_be_visible()
    assert conversation.answers("data") == []
    form.get_by_label("Full name").fill("Ada Lovelace")
    form.get_by_label("Email").fill("ada@example.com")
    form.get_by_label("Note").fill("Ring twice")
    form.get_by_label("Size").select_option("L")
    form.get_by_label("Country").fill("France")
    form.get_by_label("Phone").fill("+33 1 23 45 67 89")
    form.get_by_role("button", name="Send").click()

    expect(form).to_be_hidden()
    expect(card).to_contain_text("You sent: ")
    expect(card.get_by_role("button", name="Fill out shipping details")).to_be_disabled()
    payload, aitp = answered_with(conversation, "data")
    assert (aitp["capability"], aitp["version"]) == ("aitp-03-data-request", "1.0.0")
    assert payload["$schema"] == DATA
    assert payload["data"]["request_data_id"] == "shipping-1"
    assert {f["id"]: f["value"] for f in payload["data"]["fields"]} == {
        "name": "Ada Lovelace",
        "pairs": "1",
        "email": "ada@example.com",
        "note": "Ring twice",
        "size": "L",
        "country": "France",
        "phone": "+33 1 23 45 67 89",
    }
    data = page.locator('[data-renderer="data"]')
    expect(data).to_contain_text("You sent “Shipping details”")
    expect(data.locator('[data-field-id="email"] dd')).to_have_text("ada@example.com")


def the_shipping_form(page: Page, conversation: Conversation) -> Locator:
    """The shop asks for EVERY_FIELD; the user opens the form: its dialog."""
    card = conversation.shows(page, {"$schema": DATA, "request_data": EVERY_FIELD}, "request_data")
    card.get_by_role("button", name="Fill out shipping details").click()
    return page.get_by_role("dialog", name="Shipping details")


def test_the_form_dialog_works_from_the_keyboard(page: Page, conversation: Conversation) -> None:
    card = conversation.shows(page, {"$schema": DATA, "request_data": EVERY_FIELD}, "request_data")
    fill = card.get_by_role("button", name="Fill out shipping details")
    fill.focus()
    page.keyboard.press("Enter")
    form = page.get_by_role("dialog", name="Shipping details")
    expect(form.get_by_label("Full name")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(fill).to_be_focused()  # focus returns to the button that opened the form

    page.keyboard.press("Enter")
    page.keyboard.type("Ada")
    page.keyboard.press("Tab")  # Pairs
    page.keyboard.press("Tab")  # Email
    page.keyboard.type("ada@example.com")
    page.keyboard.press("Enter")  # submits the form
    expect(page.get_by_role("dialog")).to_have_count(0)
    payload, _ = answered_with(conversation, "data")
    assert {f["id"]: f["value"] for f in payload["data"]["fields"]}["email"] == "ada@example.com"


def test_editing_data_reopens_the_filled_form_and_replaces_the_answer(page: Page, conversation: Conversation) -> None:
    form = the_shipping_form(page, conversation)
    form.get_by_label("Full name").fill("Ada")
    form.get_by_label("Email").fill("ada@example.com")
    form.get_by_role("button", name="Send").click()
    first, _ = answered_with(conversation, "data")

    page.locator('[data-renderer="data"]').get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog")
    expect(form.get_by_label("Full name")).to_have_value("Ada")  # re-opened filled
    expect(form.get_by_label("Email")).to_have_value("ada@example.com")
    form.get_by_label("Full name").fill("Ada Lovelace")
    form.get_by_role("button", name="Save changes").click()
    expect(form).to_be_hidden()

    expect(page.locator('[data-renderer="data"]')).to_have_count(1)
    expect(page.locator('[data-renderer="data"] [data-field-id="name"] dd')).to_have_text("Ada Lovelace")
    edited, aitp = answered_with(conversation, "data")  # exactly one answer: the edited one
    assert aitp["type"] == "data"
    assert {f["id"]: f["value"] for f in edited["data"]["fields"]}["name"] == "Ada Lovelace"
    assert edited["data"]["request_data_id"] == first["data"]["request_data_id"]


def test_a_refused_answer_shows_the_servers_error(page: Page, conversation: Conversation) -> None:
    form = the_shipping_form(page, conversation)
    form.get_by_label("Full name").fill("Ada")
    form.get_by_label("Email").fill("ada@example.com")
    form.get_by_label("Note").fill("x" * (Settings.max_part_chars + 1))  # more than a content part may hold
    form.get_by_role("button", name="Send").click()

    alert = form.get_by_role("alert")
    expect(alert.locator(".sentence")).to_have_text("That is too long to send. Shorten it and try again.")
    alert.get_by_text("Details").click()
    expect(alert.locator("code")).to_contain_text("string too long")
    expect(alert.locator("code")).to_contain_text("param content")  # the param the server named
    expect(form).to_be_visible()  # the user can fix it and send again
    form.get_by_label("Note").fill("short")
    form.get_by_role("button", name="Send").click()
    expect(form).to_be_hidden()
    answered_with(conversation, "data")


def test_a_reply_the_thread_no_longer_negotiates_is_disabled_and_says_why(
    page: Page, conversation: Conversation
) -> None:
    conversation.agent_posts({"$schema": DATA, "request_data": EVERY_FIELD})
    late = conversation.user.replace("user-", "late-")
    conversation.server.known(late)
    joined = conversation.shop.post(f"/threads/{conversation.id}/actors", json={"id": late, "capabilities": []})
    assert joined.status_code == 200, joined.text
    conversation.open(page)
    card = page.locator('[data-renderer="request_data"]')
    expect(card.get_by_role("button", name="Fill out shipping details")).to_be_disabled()
    expect(card).to_contain_text(f"not supported by {late}")


# ------------------------------------------------------------------ json_url forms through /v1/fetch

SHIPPING_FORM = {
    "fields": [
        {"id": "street", "label": "Street", "type": "text", "required": True, "autocomplete": "street-address"},
        {"id": "city", "label": "City", "type": "text", "required": True},
    ]
}


@pytest.fixture(scope="module")
def form_documents(file_host: FileHost) -> str:
    """Where the form definitions are published (the fetching server's allow-list)."""
    file_host.publish("/forms/shipping.json", json.dumps(SHIPPING_FORM).encode(), "application/json")
    return f"{file_host.base_url}/forms/"


@pytest.fixture(scope="module")
def fetching_server(tmp_path_factory: pytest.TempPathFactory, form_documents: str) -> Iterator[WebServer]:
    """A server whose /v1/fetch may load the local form documents (AITP_FETCH_ALLOW)."""
    directory = tmp_path_factory.mktemp("web-fetch")
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_FETCH_ALLOW": form_documents, "AITP_CONTACT_POLICY": "anyone"}
    server = WebServer(start_server(f"sqlite:///{directory / 'web.db'}", directory / "serve.log", env))
    try:
        yield server
    finally:
        server.admin.close()
        server.process.stop()


def json_url_request(url: str, request_id: str) -> dict[str, Any]:
    request = copy.deepcopy(example("aitp-03-data-request", "request_data_json_url"))
    request["request_data"]["id"] = request_id
    request["request_data"]["form"]["json_url"] = url
    return request


def test_a_json_url_form_is_loaded_through_the_service(
    page: Page, fetching_server: WebServer, form_documents: str
) -> None:
    conversation = Conversation(fetching_server, "user.near", "shop.near", EVERY_CAPABILITY)
    card = conversation.shows(page, json_url_request(f"{form_documents}shipping.json", "ship-1"), "request_data")
    expect(card).to_contain_text("Great! Let's start with your shipping info.")
    card.get_by_role("button", name="Fill out shipping info").click()

    form = page.get_by_role("dialog", name="Shipping Info (International)")
    expect(form.get_by_label("Street")).to_have_attribute("autocomplete", "street-address")
    form.get_by_label("Street").fill("1 Rue de Rivoli")
    form.get_by_label("City").fill("Paris")
    form.get_by_role("button", name="Send").click()

    expect(card).to_contain_text("You sent: ")
    payload, _ = answered_with(conversation, "data")
    assert payload["data"] == {
        "request_data_id": "ship-1",
        "fields": [
            {"id": "street", "value": "1 Rue de Rivoli", "label": "Street"},
            {"id": "city", "value": "Paris", "label": "City"},
        ],
    }


def test_a_json_url_outside_the_allow_list_shows_the_refusal(page: Page, fetching_server: WebServer) -> None:
    conversation = Conversation(fetching_server, "user2.near", "shop2.near", EVERY_CAPABILITY)
    outside = json_url_request("https://forms.example.com/shipping.json", "ship-2")
    card = conversation.shows(page, outside, "request_data")
    card.get_by_role("button", name="Fill out shipping info").click()
    expect(card.get_by_role("alert")).to_contain_text("may not fetch https://forms.example.com/shipping.json")
    expect(page.get_by_role("dialog")).to_have_count(0)


# ------------------------------------------------------------------ payments

QUOTE = {
    "quote_id": "q-socks",
    "merchant_id": "socks.near",
    "description": "Red socks, size L",
    "expiration": "2099-01-01T00:00:00Z",
    "payment_options": [
        {
            "amount": "12.50",
            "currency": "USD",
            "payment_methods": [{"type": "near_payment_channel", "token": "usdc.near", "recipient": "socks.near"}],
        }
    ],
    "merchant_signature": "ed25519:shop",
}


def test_paying_an_aitp_01_quote_posts_a_payment_and_shows_the_confirmation(
    page: Page, conversation: Conversation
) -> None:
    card = conversation.shows(page, {"$schema": PAYMENTS, "quote": QUOTE}, "quote")
    expect(card.get_by_role("heading", name="Red socks, size L")).to_be_visible()
    expect(card.locator(".aitp-amount")).to_have_text("$12.50")
    expect(card).to_contain_text("socks.near")
    expect(card).to_contain_text("Expires")
    expect(card.get_by_label("$12.50", exact=True)).to_be_checked()
    card.get_by_role("button", name="Pay $12.50").click()
    # a review before anything is sent
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text("You are paying $12.50 to socks.near.")
    assert conversation.answers("payment") == []
    review.get_by_role("button", name="Confirm payment").click()

    # paid only once the merchant confirms a success
    expect(card).to_contain_text("Payment sent, waiting for socks.near to confirm.")
    expect(card).to_have_attribute("data-payment-state", "authorized")
    expect(card.get_by_role("button", name="Pay $12.50")).to_be_disabled()
    payload, aitp = answered_with(conversation, "payment")
    assert (aitp["capability"], aitp["type"]) == ("aitp-01-payments", "payment")
    payment = payload["payment"]
    assert payload["$schema"] == PAYMENTS
    assert payment["quote_id"] == "q-socks" and payment["payer_id"] == conversation.user
    assert {k: payment["payment_method"][k] for k in ("type", "token", "amount", "currency")} == {
        "type": "near_payment_channel",
        "token": "usdc.near",
        "amount": "12.50",
        "currency": "USD",
    }
    expect(page.locator('[data-renderer="payment"]')).to_contain_text("Payment for “Red socks, size L”")

    confirmation = copy.deepcopy(example("aitp-01-payments", "payment_confirmation"))
    confirmation["payment_confirmation"]["quote_id"] = "q-socks"
    conversation.agent_posts(confirmation)
    shown = page.locator('[data-renderer="payment_confirmation"]')
    expect(shown).to_contain_text("Your premium subscription has been activated!")
    expect(shown).to_contain_text("Payment received")
    expect(shown.get_by_role("link", name="ORD-12345")).to_have_attribute("href", "https://example.com/orders/12345")
    expect(card).to_contain_text("Paid. Your premium subscription has been activated!")
    expect(card).to_have_attribute("data-payment-state", "paid")


def test_a_failed_payment_leaves_pay_enabled_and_a_pending_one_shows_as_pending(
    page: Page, conversation: Conversation
) -> None:
    card = conversation.shows(page, {"$schema": PAYMENTS, "quote": QUOTE}, "quote")
    pay = card.get_by_role("button", name="Pay $12.50")
    confirm_payment = card.get_by_role("button", name="Confirm payment")
    pay.click()
    confirm_payment.click()
    expect(card).to_have_attribute("data-payment-state", "authorized")

    def confirm(result: str, message: str) -> None:
        confirmation = copy.deepcopy(example("aitp-01-payments", "payment_confirmation"))
        confirmation["payment_confirmation"].update(quote_id="q-socks", result=result, message=message)
        del confirmation["payment_confirmation"]["details"]
        conversation.agent_posts(confirmation)

    confirm("failure", "Channel has no funds")
    expect(card).to_contain_text("socks.near reports the payment failed: Channel has no funds. You can pay again.")
    expect(card).to_have_attribute("data-payment-state", "failed")
    expect(pay).to_be_enabled()
    pay.click()  # the retry the service accepts after a failure
    confirm_payment.click()
    expect(card).to_have_attribute("data-payment-state", "authorized")
    for _ in range(50):
        if len(conversation.answers("payment")) == 2:
            break
        threading.Event().wait(0.1)
    assert len(conversation.answers("payment")) == 2

    confirm("pending", "Waiting for the channel to settle")
    expect(card).to_contain_text("Payment sent, socks.near says it is pending. Waiting for the channel to settle")
    expect(pay).to_be_disabled()
    confirm("success", "Your socks are on their way")
    expect(card).to_contain_text("Paid. Your socks are on their way")
    expect(pay).to_be_disabled()

    page.reload()  # the same standing when the thread loads
    reloaded = page.locator('[data-renderer="quote"]')
    expect(reloaded).to_have_attribute("data-payment-state", "paid")
    expect(reloaded.get_by_role("button", name="Pay $12.50")).to_be_disabled()


def test_paying_a_legacy_quote_posts_a_payment_authorization(page: Page, conversation: Conversation) -> None:
    quote = example("aitp-legacy-payments", "quote")
    card = conversation.shows(page, quote, "quote")
    expect(card).to_have_attribute("data-model", "legacy")
    expect(card.locator(".aitp-amount")).to_have_text("$2.50")
    expect(card).to_contain_text("merchant.near")
    card.get_by_role("button", name="Pay $2.50").click()
    card.get_by_role("button", name="Confirm payment").click()

    expect(card).to_contain_text("Payment sent, waiting for merchant.near to confirm.")
    payload, aitp = answered_with(conversation, "payment_authorization")
    assert aitp["capability"] == "aitp-legacy-payments"
    authorization = payload["payment_authorization"]
    assert (authorization["quote_id"], authorization["result"]) == ("quote_123", "success")
    assert authorization["details"][0]["amount"] == 2.5
    assert authorization["details"][0]["account_id"] == conversation.user

    result = example("aitp-legacy-payments", "payment_result")
    conversation.agent_posts(result)
    outcome = page.locator('[data-renderer="payment_result"]')
    expect(outcome).to_contain_text("Your red socks are on their way!")
    expect(outcome.locator(".aitp-eyebrow")).to_have_text("Payment received")  # words, not the protocol's "success"
    # the payment as the customer reads it: the amount in the quote's currency, no token or network
    authorization_card = page.locator('[data-renderer="payment_authorization"]')
    expect(authorization_card).to_contain_text("$2.50")
    expect(authorization_card).not_to_contain_text("USDC")
    expect(card).to_contain_text("Paid.")


# ------------------------------------------------------------------ anything else


def test_other_capability_messages_show_as_collapsed_highlighted_json(page: Page, conversation: Conversation) -> None:
    view = conversation.shows(page, example("aitp-04-near-wallet", "request_account"), "json")
    expect(view.locator("summary")).to_have_text("aitp-04-near-wallet 1.0.0 · request_account")
    expect(view).not_to_have_attribute("open", "")
    expect(view.locator("pre")).to_be_hidden()
    view.locator("summary").click()
    expect(view.locator(".aitp-json-key").first).to_have_text('"$schema"')
    expect(view.locator("pre")).to_contain_text("request_account")
