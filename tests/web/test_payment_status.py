"""Paid that means paid (issue 31, item 3): the UI holds no wallet, so the payment it sends is only a claim until
the payee answers it. Until the shop's payment confirmation arrives the customer reads "Payment sent, waiting for
<shop> to confirm", never "Paid"; after a success, "Paid"; after a failure, that the shop says it failed. Amounts
are in plain words: no token, network or wallet names.

The server is a real `aitp serve`; the shop is an agent over HTTP that confirms, refuses, or stays silent; the
customer pays in Chromium at desktop (1280x800) and phone (390x844, touch) sizes.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import SIZES, WebServer
from tests.web.test_customer import DECISIONS, PAYMENTS, Shop, example

SHOP_AGENT = Path(__file__).resolve().parents[2] / "examples" / "shop_agent.py"
WAIT = 30  # seconds any single wait may take
_names = itertools.count(1)
WAITING = "Payment sent, waiting for Headphone Shop to confirm."


@pytest.fixture
def shop(web_server: WebServer) -> Shop:
    return Shop(web_server)


def quote_from(shop: Shop, quote_id: str) -> dict[str, Any]:
    quote = example("aitp-01-payments", "quote")
    quote["quote"].update(quote_id=quote_id, merchant_id=shop.id, expiration="2099-01-01T00:00:00Z")
    quote["quote"]["payment_options"][0]["payment_methods"][0]["recipient"] = shop.id
    return quote


def confirmation(quote_id: str, result: str, message: str) -> dict[str, Any]:
    body = example("aitp-01-payments", "payment_confirmation")
    body["payment_confirmation"].update(quote_id=quote_id, result=result, message=message)
    del body["payment_confirmation"]["details"]
    return body


def pay(page: Page, shop: Shop, quote_id: str) -> tuple[str, Locator]:
    """A thread where the shop quoted $99.99, paid by the customer in the browser: (thread, the quote's card)."""
    thread = shop.thread(messages=["Your order"])
    shop.says(thread, quote_from(shop, quote_id))
    shop.open(page, thread)
    card = page.locator('[data-renderer="quote"]')
    expect(card.get_by_label("$99.99", exact=True)).to_be_checked()
    for crypto in ("USDC", "NEAR", "near_payment_channel", "wallet"):
        expect(card).not_to_contain_text(crypto)
    card.get_by_role("button", name="Pay $99.99").click()
    review = card.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text("You are paying $99.99 to Headphone Shop")
    review.get_by_role("button", name="Confirm payment").click()
    expect(card).to_have_attribute("data-payment-state", "authorized")
    assert [p["quote_id"] for p in shop.payloads(thread, "payment")] == [quote_id]  # the shop has the payment
    return thread, card


@SIZES
def test_a_payment_the_shop_has_not_confirmed_is_waiting_and_never_paid(
    sized: Page, shop: Shop, size: dict[str, int]
) -> None:
    thread, card = pay(sized, shop, "q-silent")

    expect(card.get_by_role("status")).to_have_text(WAITING)
    sized.wait_for_timeout(1000)  # the shop stays silent: nothing turns the claim into "Paid"
    expect(card).not_to_contain_text("Paid")
    expect(card.get_by_role("button", name="Pay $99.99")).to_be_disabled()  # no second payment meanwhile

    sized.reload()  # read from the thread again, not from what this page remembers
    card = sized.locator('[data-renderer="quote"]')
    expect(card).to_have_attribute("data-payment-state", "authorized")
    expect(card.get_by_role("status")).to_have_text(WAITING)
    expect(card).not_to_contain_text("Paid")


@SIZES
def test_after_the_shop_confirms_the_payment_it_is_paid(sized: Page, shop: Shop, size: dict[str, int]) -> None:
    thread, card = pay(sized, shop, "q-confirmed")
    expect(card.get_by_role("status")).to_have_text(WAITING)

    shop.says(thread, confirmation("q-confirmed", "success", "Your socks are on their way."))

    expect(card).to_have_attribute("data-payment-state", "paid")
    expect(card.get_by_role("status")).to_have_text("Paid. Your socks are on their way.")
    expect(card.get_by_role("button", name="Pay $99.99")).to_be_disabled()
    expect(sized.locator('[data-renderer="payment_confirmation"]')).to_contain_text("Your socks are on their way.")


@SIZES
def test_a_payment_the_shop_reports_failed_says_so_and_may_be_paid_again(
    sized: Page, shop: Shop, size: dict[str, int]
) -> None:
    thread, card = pay(sized, shop, "q-refused")

    shop.says(thread, confirmation("q-refused", "failure", "The transfer did not arrive."))

    expect(card).to_have_attribute("data-payment-state", "failed")
    expect(card.get_by_role("status")).to_have_text(
        "Headphone Shop reports the payment failed: The transfer did not arrive. You can pay again."
    )
    expect(card).not_to_contain_text("Paid")
    expect(card.get_by_role("button", name="Pay $99.99")).to_be_enabled()


# ------------------------------------------------------------------ the example shop, confirming and not


@contextmanager
def example_shop(server: WebServer, actor: str, *options: str) -> Iterator[list[str]]:
    """examples/shop_agent.py run as documented, as `actor`, following its inbox once this yields its log lines."""
    process = subprocess.Popen(
        [sys.executable, str(SHOP_AGENT), "--url", server.base_url, "--key", server.key_for(actor), *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:  # to its end: a full pipe would stall the shop
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip())
            if "following the inbox" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(WAIT), "\n".join(lines)
        yield lines
    finally:
        process.terminate()
        process.wait(WAIT)
        reader.join(WAIT)


def posted(client: httpx.Client, thread: str, sender: str, kind: str) -> dict[str, Any]:
    """The first `kind` capability payload `sender` posted in `thread`, waited for."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        messages = client.get(f"/threads/{thread}/messages", params={"order": "asc", "limit": 100}).json()["data"]
        for message in messages:
            for part, aitp in zip(message["content"], message["aitp"] or [], strict=False):
                if aitp and aitp["type"] == kind and message["metadata"]["actor"] == sender:
                    return dict(json.loads(part["text"]["value"])[kind])
        time.sleep(0.1)
    raise AssertionError(f"no {kind} from {sender} in {thread}")


@SIZES
@pytest.mark.parametrize("confirms", [True, False], ids=["confirming", "holding"])
def test_the_example_shop_is_paid_only_once_it_confirms(
    sized: Page, web_server: WebServer, size: dict[str, int], confirms: bool
) -> None:
    n = next(_names)
    shop, customer = f"sockshop-{n}.near", f"bea-{n}.near"
    key = web_server.key_for(customer)
    api = web_server.client(key)
    with example_shop(web_server, shop, *([] if confirms else ["--hold-payments"])) as shop_log:
        actors = [{"id": customer, "capabilities": [DECISIONS, PAYMENTS]}, {"id": shop}]
        created = api.post("/threads", json={"actors": actors, "messages": ["I would like some socks"]})
        assert created.status_code == 200, created.text
        thread = created.json()["id"]
        request = posted(api, thread, shop, "request_decision")
        choice = {"request_decision_id": request["id"], "options": [{"id": "blue-cotton-socks", "quantity": 1}]}
        answered = api.post(
            f"/threads/{thread}/messages", json={"content": json.dumps({"$schema": DECISIONS, "decision": choice})}
        )
        assert answered.status_code == 200, answered.text
        quote = posted(api, thread, shop, "quote")

        sized.goto(web_server.url(key, thread))
        expect(sized.locator("#conversation")).to_have_attribute("data-state", "open")
        card = sized.locator(f'[data-renderer="quote"][data-quote-id="{quote["quote_id"]}"]')
        for crypto in ("USDC", "NEAR", "wallet"):
            expect(card).not_to_contain_text(crypto)
        card.get_by_role("button", name="Pay $8.00").click()
        card.get_by_role("group", name="Review the payment").get_by_role("button", name="Confirm payment").click()

        if confirms:
            expect(card).to_have_attribute("data-payment-state", "paid")
            expect(card.get_by_role("status")).to_have_text("Paid. Payment received. Your socks are on their way.")
        else:
            deadline = time.monotonic() + WAIT
            while not any("holding payment" in line for line in shop_log) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert any("holding payment" in line for line in shop_log), "\n".join(shop_log)
            expect(card).to_have_attribute("data-payment-state", "authorized")
            expect(card.get_by_role("status")).to_have_text("Payment sent, waiting for Sunny Socks to confirm.")
            expect(card).not_to_contain_text("Paid")
            expect(sized.locator("#conversation")).not_to_contain_text("on their way")
