"""Who is who, verifiably (the "paying $49.00 to Sunny Socks" issue): a local account set its profile to a
shop's name and sent a quote, and the pay review named the shop. The UI now shows, next to every name, what
the server verified: "Sunny Socks · localhost:<port> ✓" for a domain agent that proved itself with the keys
its host publishes, a plain "unverified" tag for an account whose name is only what it says about itself.
The pay review names the verified payee, and a quote from an unverified actor warns before Pay.

The server under test is a real `aitp serve`; the shop is a domain agent `localhost:<port>` whose
`/.well-known/aitp.json` a loopback HTTP server publishes (the server reads it over plain http because
AITP_IDENTITY_ALLOW admits that origin). The customer and the impostor are local accounts (admin keys).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from aitp.client import PrivateKey, sign_in_proof
from aitp.identity import KeyPair, generate_keypair, implicit_account_of, near_keypair
from aitp.testing import start_server
from tests.conftest import ADMIN_KEY
from tests.support.identities import KeySite, key_site
from tests.web.conftest import WebServer, assert_no_key_in_server_log

CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
EVERY = [PAYMENTS, DECISIONS]
PHONE = {"width": 390, "height": 844}
UNVERIFIED_PAYEE = (
    "Unverified payee: this request does not come from a verified business. Do not pay unless you know who this is."
)
NOT_VERIFIED = "not verified: this name is what the account says about itself"
_quotes = itertools.count(1)


class World:
    """The server, a verified shop (Sunny Socks, a domain agent), a customer and an impostor (local accounts)."""

    def __init__(self, server: WebServer, host: KeySite) -> None:
        self.server = server
        self.shop_id = host.host
        pair = generate_keypair()
        host.keys = [pair]
        self.shop = server.client(self.sign_in_as_domain(self.shop_id, pair))
        self.customer_key = server.key_for("cust-1")
        self.customer = server.client(self.customer_key)
        self.impostor = server.agent("cust-2")
        self.profile(self.shop, "Sunny Socks", "Warm socks since 2009")
        self.profile(self.customer, "Ada Lovelace")
        # a name of its own: one that reads like the shop's ("Sunny Socks Shop") is refused (409)
        self.profile(self.impostor, "Sunny Shop Support")
        for agent in (self.shop, self.customer):  # customers may write to the shop, and anyone to the customer
            response = agent.put("/actors/me/contact_policy", json={"policy": "anyone"})
            assert response.status_code == 200, response.text

    def sign_in(self, actor: str, private_key: PrivateKey) -> str:
        """A key for `actor`, a domain agent or a NEAR account: the server's challenge, signed as the Python
        client signs it."""
        with httpx.Client(base_url=f"{self.server.base_url}/v1", timeout=10) as anonymous:
            response = anonymous.post("/auth/challenge", json={"actor": actor})
            assert response.status_code == 200, response.text
            challenge = response.json()
            proof = sign_in_proof(challenge, private_key)
            response = anonymous.post("/auth/token", json={"actor": actor, "nonce": challenge["nonce"], "proof": proof})
            assert response.status_code == 200, response.text
            return response.json()["key"]

    def sign_in_as_domain(self, actor: str, pair: KeyPair) -> str:
        """With a JWS made with a key the domain publishes."""
        return self.sign_in(actor, pair)

    def sign_in_as_near(self) -> tuple[str, str]:
        """A new NEAR implicit account (no network: its id is its public key) and its key, by a NEP-413 message."""
        private, public = near_keypair()
        account = implicit_account_of(public)
        return account, self.sign_in(account, private)

    @staticmethod
    def profile(agent: httpx.Client, name: str, description: str | None = None) -> None:
        response = agent.put("/actors/me/profile", json={"display_name": name, "description": description})
        assert response.status_code == 200, response.text

    def thread(self, creator: httpx.Client, *actors: str) -> str:
        response = creator.post("/threads", json={"actors": [{"id": a, "capabilities": EVERY} for a in actors]})
        assert response.status_code == 200, response.text
        return response.json()["id"]

    def quote(self, author: httpx.Client, thread: str, merchant: str) -> str:
        """Post a $49.00 quote naming `merchant` as the one paid; its id."""
        quote_id = f"q-{next(_quotes)}"
        quote = {
            "quote_id": quote_id,
            "merchant_id": merchant,
            "description": "Wool socks, three pairs",
            "expiration": "2099-01-01T00:00:00Z",
            "payment_options": [
                {
                    "amount": "49.00",
                    "currency": "USD",
                    "payment_methods": [{"type": "near_payment_channel", "token": "usdc.near", "recipient": merchant}],
                }
            ],
            "merchant_signature": "ed25519:unsigned",
        }
        content = json.dumps({"$schema": PAYMENTS, "quote": quote})
        response = author.post(f"/threads/{thread}/messages", json={"content": content})
        assert response.status_code == 200, response.text
        return quote_id

    def open(self, page: Page, thread: str) -> None:
        page.goto(self.server.url(self.customer_key, thread))
        expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        expect(page.locator("#conversation")).to_have_attribute("data-state", "open")


@pytest.fixture(scope="module")
def key_host() -> Iterator[KeySite]:
    with key_site() as site:
        yield site


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, key_host: KeySite) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("identity")
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_IDENTITY_ALLOW": key_host.allow}
    process = start_server(f"sqlite:///{directory / 'web.db'}", directory / "serve.log", env)
    server = WebServer(process)
    try:
        yield World(server, key_host)
    finally:
        server.admin.close()
        process.stop()
    assert_no_key_in_server_log(process)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: AITP_IDENTITY_SCREENSHOTS (to look at them), else the test's temporary directory."""
    wanted = os.environ.get("AITP_IDENTITY_SCREENSHOTS")
    directory = Path(wanted) if wanted else tmp_path_factory.mktemp("identity-shots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def mark_of(scope: Locator) -> Locator:
    """The verification mark in `scope` (lib/people.js `badge`)."""
    return scope.locator(".identity")


def test_a_verified_shop_is_named_with_its_domain_and_the_pay_review_names_it(
    page: Page, world: World, shots: Path
) -> None:
    thread = world.thread(world.shop, world.shop_id, "cust-1")
    world.shop.post(f"/threads/{thread}/messages", json={"content": "Hi Ada! Here is your quote."})
    world.quote(world.shop, thread, world.shop_id)
    world.open(page, thread)
    shop = world.shop_id

    # the header, every message's author line, the people panel and the list: the name with its domain and ✓
    expect(page.locator("#thread-subtitle")).to_have_text("With Sunny Socks")
    for scope in (
        page.locator("#thread-identities"),
        page.locator(f'article.message[data-actor="{shop}"] .message-head').first,
        page.locator(f'#details li.person[data-actor="{shop}"] .person-name'),
        page.locator(f'#thread-list li[data-thread-id="{thread}"]'),
    ):
        mark = mark_of(scope)
        expect(mark).to_have_attribute("data-verified", "true")
        expect(mark).to_contain_text(f"{shop} ✓")
        expect(mark.get_by_role("img", name="verified")).to_have_text("✓")
    expect(page.locator(f'article.message[data-actor="{shop}"] .message-author').first).to_have_text("Sunny Socks")
    expect(page.locator(f'#details li.person[data-actor="{shop}"] .person-identity')).to_have_text(
        f"Verified: {shop} publishes this account's keys."
    )
    expect(page.locator(".identity-unverified")).not_to_have_count(0)  # Ada herself: a local account
    expect(page.locator("article.message .identity-unverified")).to_have_count(0)

    # the quote: the merchant row, no warning, and a review naming the verified payee
    card = page.locator('[data-renderer="quote"]')
    merchant = card.locator(".aitp-facts > div", has_text="Merchant")
    expect(merchant.locator("dd")).to_contain_text(f"Sunny Socks · {shop} ✓")
    expect(card.locator(".aitp-warning")).to_have_count(0)
    expect(card).not_to_contain_text("Sent by")
    card.get_by_role("button", name="Pay $49.00").click()
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text(f"You are paying $49.00 to Sunny Socks ({shop} ✓).")
    expect(review.get_by_role("img", name="verified")).to_be_visible()
    expect(review.locator(".aitp-warning")).to_have_count(0)
    page.screenshot(path=str(shots / "identity-verified.png"))


def test_an_impostor_is_marked_unverified_and_its_quote_warns_before_pay(page: Page, world: World, shots: Path) -> None:
    thread = world.thread(world.impostor, "cust-2", "cust-1")
    quote_id = world.quote(world.impostor, thread, "cust-2")
    world.open(page, thread)

    author = page.locator('article.message[data-actor="cust-2"]')
    expect(author.locator(".message-author")).to_have_text("Sunny Shop Support")
    for scope in (
        author.locator(".message-head"),
        page.locator("#thread-identities"),
        page.locator('#details li.person[data-actor="cust-2"] .person-name'),
        page.locator(f'#thread-list li[data-thread-id="{thread}"]'),
    ):
        mark = mark_of(scope)
        expect(mark).to_have_attribute("data-verified", "false")
        expect(mark).to_have_attribute("title", NOT_VERIFIED)
        expect(mark).to_contain_text("unverified")
        expect(mark.locator(".visually-hidden")).to_have_text(NOT_VERIFIED)  # what a screen reader hears
    expect(author).to_have_attribute("aria-label", f"Sunny Shop Support, not verified, {author_time(author)}")

    card = page.locator('[data-renderer="quote"]')
    expect(card.locator(".aitp-facts > div", has_text="Merchant").locator("dd")).to_contain_text(
        "Sunny Shop Support unverified"
    )
    # on the card, before Pay (and Pay's description), then again in the review: a warning, not a block
    warning = card.locator('[data-warning="card"]')
    expect(warning).to_be_visible()
    expect(warning).to_contain_text(UNVERIFIED_PAYEE)
    pay = card.get_by_role("button", name="Pay $49.00")
    expect(pay).to_have_attribute("aria-describedby", str(warning.get_attribute("id")))
    assert warning.evaluate("(node, pay) => !!(node.compareDocumentPosition(pay) & 4)", pay.element_handle())
    expect(pay).to_be_enabled()
    pay.click()
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text("You are paying $49.00 to Sunny Shop Support.")
    expect(review.locator('[data-warning="review"]')).to_contain_text(UNVERIFIED_PAYEE)
    confirm = review.get_by_role("button", name="Confirm payment")
    expect(confirm).to_be_enabled()
    expect(confirm).to_be_focused()
    page.screenshot(path=str(shots / "identity-unverified.png"))

    confirm.click()  # the customer may know who this is: the payment goes
    expect(card).to_have_attribute("data-payment-state", "authorized")
    messages = world.impostor.get(f"/threads/{thread}/messages", params={"order": "asc"}).json()["data"]
    assert any(
        quote_id in part["text"]["value"] and '"payment"' in part["text"]["value"]
        for message in messages
        for part in message["content"]
    )


def test_a_quote_an_unverified_actor_sends_in_a_verified_shops_name_warns(page: Page, world: World) -> None:
    thread = world.thread(world.impostor, "cust-2", "cust-1")
    world.quote(world.impostor, thread, world.shop_id)  # the shop is no member here: the UI asks who it is
    world.open(page, thread)

    card = page.locator('[data-renderer="quote"]')
    expect(card.locator(".aitp-facts > div", has_text="Merchant").locator("dd")).to_contain_text(
        f"Sunny Socks · {world.shop_id} ✓"
    )
    expect(card.locator(".aitp-facts > div", has_text="Sent by").locator("dd")).to_contain_text(
        "Sunny Shop Support unverified"
    )
    expect(card.locator('[data-warning="card"]')).to_contain_text(
        "Unverified sender: Sunny Shop Support is not verified and sent this quote in the name of Sunny Socks. "
        "Do not pay unless you know who this is."
    )
    card.get_by_role("button", name="Pay $49.00").click()
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text(f"to Sunny Socks ({world.shop_id} ✓)")
    expect(review.locator('[data-warning="review"]')).to_contain_text("Unverified sender")


def test_on_a_phone_the_marks_fit_and_stay_readable(page: Page, world: World, shots: Path) -> None:
    thread = world.thread(world.shop, world.shop_id, "cust-1")
    world.quote(world.shop, thread, world.shop_id)
    impostor_thread = world.thread(world.impostor, "cust-2", "cust-1")
    world.quote(world.impostor, impostor_thread, "cust-2")
    page.set_viewport_size(PHONE)

    for opened, name in ((thread, "verified"), (impostor_thread, "unverified")):
        world.open(page, opened)
        card = page.locator('[data-renderer="quote"]')
        card.get_by_role("button", name="Pay $49.00").click()
        for mark in (page.locator("#thread-identities .identity"), card.locator(".aitp-facts .identity")):
            expect(mark).to_be_visible()
            box = mark.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
            assert not mark.evaluate("node => node.scrollWidth > node.clientWidth + 1"), f"{name}: the mark is cut"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.screenshot(path=str(shots / f"identity-phone-{name}.png"))


def test_the_order_summary_of_a_buy_names_the_seller_as_verified(page: Page, world: World, shots: Path) -> None:
    thread = world.thread(world.shop, world.shop_id, "cust-1")
    example = CAPABILITIES / "aitp-02-decisions" / "1.0.0" / "examples" / "request_decision_products.json"
    products = json.loads(example.read_text())
    response = world.shop.post(f"/threads/{thread}/messages", json={"content": json.dumps(products)})
    assert response.status_code == 200, response.text
    world.open(page, thread)

    card = page.locator('[data-renderer="request_decision"]')
    card.locator(".aitp-product").first.get_by_role("button", name=re.compile("^Buy")).click()
    order = card.get_by_role("group", name="Your order")
    expect(order.locator(".aitp-order-seller dd")).to_contain_text(f"Sunny Socks · {world.shop_id} ✓")
    order.screenshot(path=str(shots / "identity-order.png"))


def test_a_near_implicit_account_is_named_with_its_id_shortened_in_the_middle(page: Page, world: World) -> None:
    account, key = world.sign_in_as_near()
    near = world.server.client(key)
    world.profile(near, "Moon Mittens")
    thread = world.thread(near, account, "cust-1")
    world.quote(near, thread, account)
    world.open(page, thread)

    short = f"{account[:4]}…{account[-4:]}"
    mark = page.locator(f'article.message[data-actor="{account}"] .message-head .identity')
    expect(mark).to_have_attribute("data-verified", "true")
    expect(mark.locator(".identity-id")).to_have_text(short)
    expect(mark).to_have_attribute("title", f"Verified NEAR account {account}: it signed in with its own key")
    card = page.locator('[data-renderer="quote"]')
    expect(card.locator(".aitp-warning")).to_have_count(0)
    card.get_by_role("button", name="Pay $49.00").click()
    expect(card.locator(".aitp-review-text")).to_contain_text(f"to Moon Mittens ({short} ✓)")
    expect(page.locator(f'#details li.person[data-actor="{account}"] .person-identity')).to_have_text(
        f"Verified NEAR account {account}."
    )


def author_time(article: Locator) -> str:
    return str(article.locator(".message-time").text_content())


def test_typing_a_shops_name_into_new_conversation_says_no_such_account_and_creates_nothing(
    page: Page, world: World
) -> None:
    before = world.customer.get("/threads").json()["data"]
    page.goto(world.server.url(world.customer_key))
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    page.get_by_text("New conversation").click()
    form = page.get_by_role("form", name="New conversation")
    form.get_by_label("Who do you want to talk to?").fill("Sunny Socks")
    form.get_by_role("button", name="Start conversation").click()
    expect(form.get_by_role("alert")).to_contain_text("No one with that account name is on this service")
    assert world.customer.get("/threads").json()["data"] == before
    assert world.customer.get("/actors/Sunny").status_code == 404
