"""Payments seen from elsewhere (issue 31, item 5): a payment review still open when the customer pays the quote
in another tab closes, and the card says where the payment stands (sent, then paid once the shop confirms); the
hub-era ("legacy") payment card shows the amount in the quote's money with no crypto words (no token, network,
account or transaction), whoever posted it. At desktop (1280x800) and phone (390x844, touch) sizes."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.web.axe import assert_accessible
from tests.web.conftest import SIZES, WebServer
from tests.web.test_customer import Shop, example
from tests.web.test_payment_status import WAITING, confirmation, quote_from

LEGACY = "https://aitp.dev/v1/payments/schema.json"
CRYPTO = ("USDC", "NEAR", "near_payment_channel", "Network", "Transaction", "Account", "wallet", "token")
_quotes = itertools.count(1)


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


@SIZES
def test_a_review_open_when_the_quote_is_paid_in_another_tab_closes(
    sized: Page, shop: Shop, size: dict[str, int]
) -> None:
    quote_id = f"q-tabs-{next(_quotes)}"
    thread = shop.thread(messages=["Your order"])
    shop.says(thread, quote_from(shop, quote_id))
    shop.open(sized, thread)
    card = sized.locator('[data-renderer="quote"]')
    card.get_by_role("button", name="Pay $99.99").click()
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_be_visible()
    expect(review.get_by_role("button", name="Confirm payment")).to_be_focused()

    # the same customer, in another tab of the same browser, pays the quote
    other = sized.context.new_page()
    shop.open(other, thread)
    elsewhere = other.locator('[data-renderer="quote"]')
    elsewhere.get_by_role("button", name="Pay $99.99").click()
    elsewhere.get_by_role("group", name="Review the payment").get_by_role("button", name="Confirm payment").click()
    expect(elsewhere).to_have_attribute("data-payment-state", "authorized")

    # here, as its payment arrives live: no review of a payment that can no longer be made
    expect(card).to_have_attribute("data-payment-state", "authorized")
    expect(review).to_be_hidden()
    expect(card.get_by_role("status")).to_have_text(WAITING)
    expect(card.get_by_role("button", name="Pay $99.99")).to_be_disabled()
    expect(card).to_be_focused()  # focus went to the card that says why, not to the page's body
    assert [payment["quote_id"] for payment in shop.payloads(thread, "payment")] == [quote_id]  # paid once
    assert_accessible(sized, "a quote paid in another tab")

    shop.says(thread, confirmation(quote_id, "success", "Your socks are on their way."))

    expect(card.get_by_role("status")).to_have_text("Paid. Your socks are on their way.")
    expect(other.locator('[data-renderer="quote"]').get_by_role("status")).to_have_text(
        "Paid. Your socks are on their way."
    )
    other.close()


def legacy_thread(shop: Shop) -> str:
    actors = [{"id": shop.id, "capabilities": [LEGACY]}, {"id": shop.customer, "capabilities": [LEGACY]}]
    response = shop.api.post("/threads", json={"actors": actors, "messages": ["Your order"]})
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


def legacy_quote(shop: Shop, quote_id: str) -> dict[str, Any]:
    quote = example("aitp-legacy-payments", "quote")
    quote["quote"].update(quote_id=quote_id, payee_id=shop.id, valid_until="2099-01-01T00:00:00Z")
    return quote


@SIZES
def test_the_legacy_payment_card_shows_no_crypto_words(sized: Page, shop: Shop, size: dict[str, int]) -> None:
    thread = legacy_thread(shop)
    paid_here, paid_elsewhere = f"legacy-{next(_quotes)}", f"legacy-{next(_quotes)}"
    shop.says(thread, legacy_quote(shop, paid_here))
    shop.says(thread, legacy_quote(shop, paid_elsewhere))
    # the customer's other device pays the second one the hub-era way: USDC over NEAR, an account, a transaction
    authorization = example("aitp-legacy-payments", "payment_authorization")
    authorization["payment_authorization"].update(quote_id=paid_elsewhere)
    authorization["payment_authorization"]["details"][0]["account_id"] = shop.customer
    sent = shop.customer_api.post(f"/threads/{thread}/messages", json={"content": json.dumps(authorization)})
    assert sent.status_code == 200, sent.text
    shop.open(sized, thread)

    card = sized.locator(f'[data-renderer="quote"][data-quote-id="{paid_here}"]')
    card.get_by_role("button", name="Pay $2.50").click()
    card.get_by_role("group", name="Review the payment").get_by_role("button", name="Confirm payment").click()
    expect(card.get_by_role("status")).to_have_text("Payment sent, waiting for Headphone Shop to confirm.")

    payments = sized.locator('[data-renderer="payment_authorization"]')
    expect(payments).to_have_count(2)
    for payment in (payments.nth(0), payments.nth(1)):
        expect(payment).to_contain_text("Payment sent")
        expect(payment.locator(".aitp-amount")).to_have_text("$2.50")  # the quote's money, not the token
        expect(payment).to_contain_text("Payer")
        expect(payment).to_contain_text("you")
        for words in (*CRYPTO, "7vjj6", "ui-"):  # nor the transaction's id
            expect(payment).not_to_contain_text(words)
        expect(payment).not_to_contain_text("Paid")  # the payer's claim: the shop has not said so
    # what the customer's own tab posted, the shop got in full (the capability's fields)
    [mine] = [p for p in shop.payloads(thread, "payment_authorization") if p["quote_id"] == paid_here]
    assert mine["details"][0]["amount"] == 2.5

    result = example("aitp-legacy-payments", "payment_result")
    result["payment_result"].update(quote_id=paid_here)
    shop.says(thread, result)

    expect(card.get_by_role("status")).to_contain_text("Paid.")
    outcome = sized.locator(f'[data-renderer="payment_result"][data-quote-id="{paid_here}"]')
    expect(outcome).to_contain_text("Your red socks are on their way!")
    for words in ("USDC", "NEAR", "Network", "Transaction", "wallet"):
        expect(outcome).not_to_contain_text(words)
    for word in ("USDC", "NEAR"):
        expect(sized.locator(f'[data-renderer="quote"][data-quote-id="{paid_elsewhere}"]')).not_to_contain_text(word)
    assert_accessible(sized, "hub-era payment cards")
