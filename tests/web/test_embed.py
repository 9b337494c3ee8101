"""The chat a shop puts on its own website (issue 31, items 1 and 2): one `<script>` tag (web/embed.js) frames
web/embed.html, whose key is a customer session the shop's backend asked aitp for.

The shop's website is a few lines of HTML served by the test from its own HTTP server, on another port than
aitp's (so another origin). It "signs its customer in" with its own cookie, and its backend route
`POST /chat/session` asks aitp for a customer session with the shop's key (`POST /v1/customer_sessions`) and
answers the JSON. The customer, on the shop's page in Chromium (1280x800 and 390x844), chats, chooses a product,
pays, and sees only the shop's brand; the shop is an agent talking to aitp over HTTP (tests/web/test_customer.py's
`Shop`). The session key is checked through the API: it cannot reach anyone but the shop, nor set a profile.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from base64 import b64decode
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Frame, FrameLocator, Page, Route, expect
from websockets.sync.client import connect

from tests.web.axe import assert_accessible
from tests.web.conftest import SCREENSHOTS, SIZES, FileHost, WebServer, watched_page
from tests.web.test_customer import EVERY, LOGO, Shop, products
from tests.web.test_payment_status import confirmation, quote_from
from tests.web.test_screenshots import COLOURS, DRAW_HEADPHONES, DRAW_LOGO, png_size

WAIT = 20  # seconds any single wait on the server may take
ACCENT = "#0f766e"  # the shop's brand colour (white text reads on it)
CUSTOMER = "4821"  # the shop's own id for its signed-in customer

# the whole page of the shop: its own look, and the one tag
SHOP_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>{name}</title>
<style>
  body {{ margin: 0; font: 16px/1.5 system-ui, sans-serif; background: #fafaf9; color: #1c1917; }}
  @media (prefers-color-scheme: dark) {{ body {{ background: #0c0a09; color: #e7e5e4; }} }}
  header {{ padding: 1rem 1.5rem; border-bottom: 1px solid #a8a29e55; font-weight: 700; }}
  main {{ max-width: 56rem; margin: 0 auto; padding: 1rem; }}
</style></head>
<body><header>{name}</header>
<main><h1>Help with your order</h1><p>Ask us anything: we answer right here.</p><div id="chat"></div></main>
<script src="{aitp}/embed.js" data-shop="{shop}" data-session-url="/chat/session" data-target="#chat"
  data-height="{height}" {anonymous} async></script>
</body></html>
"""


class ShopSite:
    """The shop's website on its own origin: the page (which signs its customer in with a cookie) and its backend
    route minting customer sessions with the shop's key. Every session it gave is kept, in order."""

    def __init__(self, server: WebServer, shop: Shop, name: str, height: int = 600) -> None:
        self.expires_in = 3600
        self.minted: list[dict[str, Any]] = []
        self.upgrades = 0  # requests that named a visitor's key
        key = shop.api.headers["Authorization"]
        backend = httpx.Client(base_url=f"{server.base_url}/v1", headers={"Authorization": key}, timeout=10)
        page = SHOP_PAGE.format(name=name, aitp=server.base_url, shop=shop.id, height=height, anonymous="").encode()
        # the page that lets visitors not signed in chat too
        open_page = SHOP_PAGE.format(
            name=name, aitp=server.base_url, shop=shop.id, height=height, anonymous="data-anonymous"
        ).encode()
        sign_in = ("Set-Cookie", f"customer={CUSTOMER}; HttpOnly; Path=/")
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                if self.path == "/":  # the shop's own sign-in, as far as this test needs it
                    self.answer(200, "text/html", page, sign_in)
                elif self.path == "/visitors":  # visitors welcome; whoever the cookie says, if any
                    self.answer(200, "text/html", open_page)
                elif self.path == "/visitors/sign-in":  # the same page, after signing in on the shop's site
                    self.answer(200, "text/html", open_page, sign_in)
                elif self.path == "/sign-in-here":  # signs in without leaving the page (fetch)
                    self.answer(200, "application/json", b"{}", sign_in)
                elif self.path == "/signed-out":
                    self.answer(200, "text/html", page, ("Set-Cookie", "customer=; Max-Age=0; Path=/"))
                elif self.path.startswith("/silent"):  # frames a chat (`?shop=`), with no embed.js to answer it
                    framed_shop = self.path.partition("?shop=")[2] or shop.id
                    chat = f"{server.base_url}/embed.html?shop={framed_shop}"
                    silent = f'<!doctype html><title>x</title><iframe title="Chat" src="{chat}"></iframe>'
                    self.answer(200, "text/html", silent.encode())
                elif self.path == "/frames-the-main-ui":
                    framed = f'<!doctype html><title>x</title><iframe title="x" src="{server.base_url}/"></iframe>'
                    self.answer(200, "text/html", framed.encode())
                else:
                    self.answer(404, "text/plain", b"not found")

            def do_POST(self) -> None:  # noqa: N802
                if self.path != "/chat/session":
                    self.answer(404, "text/plain", b"not found")
                    return
                cookie = self.headers.get("Cookie") or ""
                if f"customer={CUSTOMER}" not in cookie:
                    self.answer(401, "application/json", b'{"error": "sign in first"}')
                    return
                asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                request = {"customer": CUSTOMER, "display_name": "Ada Lovelace", "expires_in": site.expires_in}
                if isinstance(asked.get("upgrade_from"), str):  # a visitor's chat, to become the customer's
                    request["upgrade_from"] = asked["upgrade_from"]
                    site.upgrades += 1
                minted = backend.post("/customer_sessions", json=request)
                if minted.status_code == 200:
                    site.minted.append(minted.json())
                self.answer(minted.status_code, "application/json", minted.content)

            def answer(self, status: int, content_type: str, body: bytes, *headers: tuple[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.backend = backend
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.backend.close()


class Embedded:
    """A shop with a brand (name, logo, colour), its website, and the conversation its customer opens there."""

    def __init__(self, server: WebServer, name: str = "Headphone Shop", logo: str = LOGO) -> None:
        self.server = server
        self.name = name
        self.logo = logo
        self.shop = Shop(server, name=name, logo=logo)
        profile = {"display_name": name, "avatar_url": logo, "description": "Good sound", "accent_color": ACCENT}
        assert self.shop.api.put("/actors/me/profile", json=profile).status_code == 200
        self.customer = f"{CUSTOMER}@{self.shop.id}"
        self.site = ShopSite(server, self.shop, name)
        # the shop's website alone may frame its chat
        allowed = self.shop.api.put("/customer_sessions/settings", json={"embed_origins": [self.site.url]})
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["frame_ancestors"] == [self.site.url]

    def open(self, page: Page, path: str = "/") -> FrameLocator:
        """The shop's page with the chat open in it (the conversation shown, the inbox live)."""
        page.goto(self.site.url + path)
        frame = page.frame_locator("#chat iframe")
        expect(frame.locator("body")).to_have_attribute("data-state", "open", timeout=WAIT * 1000)
        expect(frame.locator("#connection")).to_have_attribute("data-state", "live")
        return frame

    def thread(self) -> str:
        """The conversation the chat opened with the shop (it makes one at once when there is none)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for thread in self.shop.api.get("/threads", params={"limit": 100}).json()["data"]:
                if any(actor["id"] == self.customer for actor in thread["actors"]):
                    return str(thread["id"])
            time.sleep(0.1)
        raise AssertionError(f"no thread of {self.customer} with {self.shop.id}")

    def joins(self, thread: str) -> None:
        """The shop's agent declares what it speaks in the thread the customer's chat made (agents do, on joining)."""
        response = self.shop.api.post(f"/threads/{thread}/actors", json={"id": self.shop.id, "capabilities": EVERY})
        assert response.status_code == 200, response.text

    def close(self) -> None:
        self.site.close()


@pytest.fixture
def embedded(web_server: WebServer) -> Iterator[Embedded]:
    shop = Embedded(web_server)
    yield shop
    shop.close()


def rgb(hex_colour: str) -> str:
    value = int(hex_colour[1:], 16)
    return f"rgb({value >> 16}, {(value >> 8) & 255}, {value & 255})"


CONTRAST = """([fg, bg]) => {
  const channels = (css) => css.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (css) => {
    const [r, g, b] = channels(css).map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def header_contrast(frame: FrameLocator) -> tuple[str, float]:
    """The header's background colour, and the contrast of its text (the shop's name) on it."""
    header = frame.locator(".embed-header")
    background = header.evaluate("node => getComputedStyle(node).backgroundColor")
    text = frame.locator("#shop-name").evaluate("node => getComputedStyle(node).color")
    return background, float(header.evaluate(f"(node, pair) => ({CONTRAST})(pair)", [text, background]))


def assert_only_the_shops_brand(page: Page, frame: FrameLocator, embedded: Embedded) -> None:
    """The shop's name, logo and colour; no word of aitp, no sign-in, no actor id, in text or in attributes."""
    expect(frame.locator("#shop-name")).to_have_text(embedded.name)
    expect(frame.locator("#shop-logo img")).to_have_attribute("src", embedded.logo)
    background, ratio = header_contrast(frame)
    assert background == rgb(ACCENT) and ratio >= 4.5, (background, ratio)
    assert frame.locator("html").evaluate("n => getComputedStyle(n).getPropertyValue('--brand').trim()") == ACCENT
    text = frame.locator("body").inner_text()
    for unwanted in ("aitp", "Signed in as", "Sign out", "Developer details", embedded.customer, embedded.shop.id):
        assert unwanted.lower() not in text.lower(), f"{unwanted!r} shown in the chat: {text!r}"
    attributes = frame.locator("body").evaluate(
        """body => [body.ownerDocument.title, ...[...body.querySelectorAll('[title], [aria-label], [alt]')].flatMap(
            (node) => ['title', 'aria-label', 'alt'].map((name) => node.getAttribute(name)).filter(Boolean))]"""
    )
    for unwanted in ("aitp", embedded.customer, embedded.shop.id, CUSTOMER):
        assert not [value for value in attributes if unwanted in value], (unwanted, attributes)
    # the frame is named after the shop's chat on the shop's page
    expect(page.locator("#chat iframe")).to_have_attribute("title", f"Chat with {embedded.name}")


def chat_frame(page: Page) -> Frame:
    """The chat's document (for axe-core, which runs in a document, not through a frame locator)."""
    handle = page.locator("#chat iframe").element_handle()
    frame = handle.content_frame() if handle else None
    assert frame is not None
    return frame


def keys_of(embedded: Embedded) -> list[str]:
    return [str(session["key"]) for session in embedded.site.minted]


def assert_no_key_in_urls(page: Page, embedded: Embedded) -> None:
    urls = [page.url, *(frame.url for frame in page.frames)]
    urls.append(page.locator("#chat iframe").get_attribute("src") or "")
    assert keys_of(embedded) and not [url for url in urls for key in keys_of(embedded) if key in url], urls


# ------------------------------------------------------------------------ the customer buys and pays


@SIZES
def test_on_the_shops_page_the_customer_chats_buys_and_pays_and_sees_only_the_shop(
    sized: Page, embedded: Embedded, size: dict[str, int]
) -> None:
    frame = embedded.open(sized)
    shop = embedded.shop
    thread = embedded.thread()
    embedded.joins(thread)

    # as wide as its container, as tall as the page said
    box, container = sized.locator("#chat iframe").bounding_box(), sized.locator("#chat").bounding_box()
    assert box and container and box["width"] == container["width"] and box["height"] == 600, (box, container)

    # the customer writes first; the shop's agent answers with products
    composer = frame.get_by_label("Message", exact=True)
    composer.fill("Hello! Headphones for running?")
    composer.press("Enter")
    expect(frame.locator("article.message.mine")).to_contain_text("Headphones for running?")
    said = shop.api.get(f"/threads/{thread}/messages").json()["data"]
    assert [m["metadata"]["actor"] for m in said] == [embedded.customer]
    # the shop's agent works on the answer: its name (never its id) is typing, and its presence shows
    assert shop.api.post(f"/threads/{thread}/activity", json={"state": "working"}).status_code == 200
    expect(frame.locator(".typing-line")).to_have_text(f"{embedded.name} is typing…")
    expect(frame.locator(".presence-line")).to_be_visible()
    shop.says(thread, "Here is what we have.")
    expect(frame.locator(".typing-line")).to_have_text("")
    shop.says(thread, products())

    card = frame.locator('[data-renderer="request_decision"]')
    soundcore = card.locator(".aitp-product").nth(1)
    soundcore.get_by_role("button", name=re.compile("^Buy")).click()
    order = card.get_by_role("group", name="Your order")
    expect(order.locator(".aitp-order-total dd")).to_have_text("$79.99")
    order.get_by_role("button", name="Confirm order").click()
    expect(card.locator(".aitp-notes [role=status]")).to_have_text("You chose: Soundcore by Anker, Space One")
    assert [d["options"][0]["id"] for d in shop.decisions(thread)] == ["product_2"]

    # the quote, the payment review, waiting for the shop, then paid
    shop.says(thread, quote_from(shop, "q-embed"))
    quote = frame.locator('[data-renderer="quote"]')
    expect(quote).not_to_contain_text("nverified")  # the shop the customer is on is who they pay
    quote.get_by_role("button", name="Pay $99.99").click()
    review = quote.get_by_role("group", name="Review the payment")
    expect(review).to_contain_text(f"You are paying $99.99 to {embedded.name}")
    review.get_by_role("button", name="Confirm payment").click()
    expect(quote.get_by_role("status")).to_have_text(f"Payment sent, waiting for {embedded.name} to confirm.")
    expect(quote).not_to_contain_text("Paid")
    assert [p["quote_id"] for p in shop.payloads(thread, "payment")] == ["q-embed"]
    shop.says(thread, confirmation("q-embed", "success", "Your headphones are on their way."))
    expect(quote).to_have_attribute("data-payment-state", "paid")
    expect(quote.get_by_role("status")).to_have_text("Paid. Your headphones are on their way.")

    assert_only_the_shops_brand(sized, frame, embedded)
    assert_no_key_in_urls(sized, embedded)
    assert_accessible(chat_frame(sized), "the chat on the shop's page, paid")
    assert_accessible(sized, "the shop's page around the chat")
    assert len(embedded.site.minted) == 1
    assert embedded.site.minted[0]["actor"] == embedded.customer

    # the next visit opens the same conversation (no second one)
    frame = embedded.open(sized)
    expect(frame.locator('[data-renderer="quote"]')).to_have_attribute("data-payment-state", "paid")
    threads = shop.api.get("/threads", params={"limit": 100}).json()["data"]
    assert [t["id"] for t in threads if any(a["id"] == embedded.customer for a in t["actors"])] == [thread]


# ------------------------------------------------------------------------ what the key may not do


def test_the_key_the_shops_page_gets_reaches_the_shop_alone_and_sets_no_profile(
    page: Page, embedded: Embedded, web_server: WebServer
) -> None:
    embedded.open(page)
    thread = embedded.thread()
    key = keys_of(embedded)[0]
    other = embedded.shop.customer  # an actor of this server, who is not the shop
    with web_server.client(key) as customer:
        assert customer.get("/actors/me").json()["id"] == embedded.customer

        opened = customer.post("/threads", json={"actors": [{"id": other}], "messages": ["hi"]})
        assert opened.status_code == 403, opened.text
        assert opened.json()["error"]["code"] == "outside_customer_session"
        assert opened.json()["error"]["param"] == "actors[0].id"
        added = customer.post(f"/threads/{thread}/actors", json={"id": other})
        assert added.status_code == 403 and added.json()["error"]["code"] == "outside_customer_session", added.text

        profile = customer.put("/actors/me/profile", json={"display_name": "Someone else"})
        assert profile.status_code == 403 and profile.json()["error"]["code"] == "customer_profile_read_only"
        minted = customer.post("/customer_sessions", json={"customer": "4822"})
        assert minted.status_code == 403 and minted.json()["error"]["code"] == "customer_session_not_allowed"

        # what it may: its conversation with the shop
        assert customer.post(f"/threads/{thread}/messages", json={"content": "still here"}).status_code == 200
    name = embedded.shop.api.get(f"/threads/{thread}/profiles").json()["data"]
    assert {p["actor"]: p["display_name"] for p in name}[embedded.customer] == "Ada Lovelace"  # as the shop set it


# ------------------------------------------------------------------------ renewing the session


EXPIRED = {"error": {"message": "The API key has expired.", "type": "authentication_error", "code": "expired_api_key"}}


def minted_count(embedded: Embedded, count: int) -> None:
    """Wait until the shop's page has given `count` sessions (and no more)."""
    deadline = time.monotonic() + WAIT
    while len(embedded.site.minted) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(embedded.site.minted) == count


def test_a_short_session_is_renewed_through_the_shops_page_before_it_ends_and_after_a_401(
    page: Page, embedded: Embedded, web_server: WebServer
) -> None:
    embedded.site.expires_in = 60
    page.clock.install()  # time runs as usual, and the test may move it on
    frame = embedded.open(page)
    thread = embedded.thread()
    minted_count(embedded, 1)

    # before the key ends (a quarter of its life early), the chat asks the shop's page for the next one
    page.clock.fast_forward(40_000)
    page.wait_for_timeout(300)
    assert len(embedded.site.minted) == 1
    page.clock.fast_forward(10_000)
    minted_count(embedded, 2)

    # a call answered 401 (the key ended): the chat gets a new key through the page and makes the call again, once
    sent: list[str] = []

    def refuse_the_first(route: Route) -> None:
        sent.append(route.request.headers["authorization"])
        if len(sent) == 1:
            route.fulfill(status=401, content_type="application/json", body=json.dumps(EXPIRED))
        else:
            route.continue_()

    page.route(
        re.compile(r"/v1/threads/[^/]+/messages$"),
        lambda route: refuse_the_first(route) if route.request.method == "POST" else route.continue_(),
    )
    composer = frame.get_by_label("Message", exact=True)
    composer.fill("Are you still there?")
    composer.press("Enter")
    expect(frame.locator("article.message.mine")).to_contain_text("Are you still there?")
    expect(frame.locator("#composer [role=alert]")).to_be_hidden()
    minted_count(embedded, 3)
    keys = keys_of(embedded)
    assert sent == [f"Bearer {keys[1]}", f"Bearer {keys[2]}"]
    said = embedded.shop.api.get(f"/threads/{thread}/messages").json()["data"]
    assert [m["content"][0]["text"]["value"] for m in said] == ["Are you still there?"]

    # every key so far revoked: the live connection ends (4401), and comes back with a key the page gives
    for key in keys:
        key_id = web_server.client(key).get("/actors/me").json()["key_id"]
        assert web_server.admin.delete(f"/keys/{key_id}").status_code == 200
    minted_count(embedded, 4)
    expect(frame.locator("#connection")).to_have_attribute("data-state", "live", timeout=WAIT * 1000)
    embedded.shop.says(thread, "Yes, we are!")
    expect(frame.locator("article.message", has_text="Yes, we are!")).to_be_visible()
    assert_no_key_in_urls(page, embedded)


# ------------------------------------------------------------------------ when there is no chat to show


def test_a_customer_not_signed_in_on_the_shops_site_is_asked_to_sign_in_there(page: Page, embedded: Embedded) -> None:
    page.goto(embedded.site.url + "/signed-out")
    frame = page.frame_locator("#chat iframe")
    expect(frame.locator("#embed-status")).to_have_text("Sign in on this website to chat with us.")
    expect(frame.locator(".embed-header")).to_be_hidden()
    expect(frame.locator("#conversation")).to_be_hidden()
    assert embedded.site.minted == []


def test_a_page_that_never_answers_leaves_a_plain_message_and_the_main_ui_cannot_be_framed(
    page: Page, embedded: Embedded, web_server: WebServer
) -> None:
    # a page that frames the chat with no embed.js behind it: nobody answers the chat's "ready"
    page.clock.install()
    page.goto(embedded.site.url + "/silent")
    frame = page.frame_locator("iframe")
    expect(frame.locator("#embed-status")).to_have_text("Connecting…")
    page.clock.fast_forward(16_000)
    expect(frame.locator("#embed-status")).to_have_text("The chat could not be opened. Reload the page to try again.")

    # opened on its own, outside any page: nobody to ask for a session
    page.goto(f"{web_server.base_url}/embed.html?shop={embedded.shop.id}")
    expect(page.locator("#embed-status")).to_have_text("This chat opens on the shop's website.")

    # framed by a site its shop did not list (here: another shop's chat on this shop's site), the browser refuses
    # it: no page can frame a shop's chat to hand it a key of its own choosing
    other = Shop(web_server, name="Other Shop")
    page.goto(f"{embedded.site.url}/silent?shop={other.id}")
    refused = page.frames[1]
    deadline = time.monotonic() + WAIT
    while not refused.url.startswith("chrome-error:") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert refused.url.startswith("chrome-error:"), refused.url

    # the main UI (it holds a key) refuses to be framed by another site: Chromium shows an error page instead
    page.goto(embedded.site.url + "/frames-the-main-ui")
    framed = page.frames[1]
    deadline = time.monotonic() + WAIT
    while not framed.url.startswith("chrome-error:") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert framed.url.startswith("chrome-error:"), framed.url


# ------------------------------------------------------------------------ visitors not signed in


def actors_of(embedded: Embedded, thread: str) -> list[str]:
    return [actor["id"] for actor in embedded.shop.api.get(f"/threads/{thread}").json()["actors"]]


def visitor_thread(embedded: Embedded) -> tuple[str, str]:
    """The conversation a visitor's chat made with the shop, and the visitor's actor id."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for thread in embedded.shop.api.get("/threads", params={"limit": 100}).json()["data"]:
            visitors = [a["id"] for a in thread["actors"] if a["id"].startswith("anon-")]
            if visitors:
                return str(thread["id"]), visitors[0]
        time.sleep(0.1)
    raise AssertionError("no visitor's conversation")


def test_a_visitor_chats_before_signing_in_and_the_conversation_becomes_the_customers(
    browser: Browser, embedded: Embedded
) -> None:
    opted = embedded.shop.api.put("/customer_sessions/settings", json={"anonymous": True})
    assert opted.status_code == 200, opted.text
    with watched_page(browser, viewport={"width": 1280, "height": 800}) as page:
        frame = embedded.open(page, "/visitors")  # no cookie: the shop's backend gives no session
        thread, visitor = visitor_thread(embedded)
        assert visitor.endswith(f"@{embedded.shop.id}") and embedded.site.minted == []
        composer = frame.get_by_label("Message", exact=True)
        composer.fill("Hello, I have not signed in yet")
        composer.press("Enter")
        expect(frame.locator("article.message.mine")).to_contain_text("not signed in yet")
        assert_only_the_shops_brand(page, frame, embedded)

        # signing in on the shop's website (a new page): the shop names the visitor's key, the chat is the customer's
        frame = embedded.open(page, "/visitors/sign-in")
        expect(frame.locator("article.message.mine")).to_contain_text("not signed in yet")
        assert embedded.site.upgrades == 1 and len(embedded.site.minted) == 1
        assert actors_of(embedded, thread) == [embedded.shop.id, embedded.customer]
        composer = frame.get_by_label("Message", exact=True)
        composer.fill("Signed in now")
        composer.press("Enter")
        expect(frame.locator("article.message.mine").last).to_contain_text("Signed in now")
        said = embedded.shop.api.get(f"/threads/{thread}/messages", params={"order": "asc"}).json()["data"]
        assert [m["metadata"]["actor"] for m in said] == [visitor, embedded.customer]
        # what the visitor wrote is the customer's own ("You"): no visitor's id shows
        expect(frame.locator("article.message.mine")).to_have_count(2)
        assert visitor not in frame.locator("body").inner_text()
        assert_only_the_shops_brand(page, frame, embedded)
        assert_no_key_in_urls(page, embedded)


def test_a_visitor_who_signs_in_without_leaving_the_page_continues_as_the_customer(
    browser: Browser, embedded: Embedded
) -> None:
    assert embedded.shop.api.put("/customer_sessions/settings", json={"anonymous": True}).status_code == 200
    with watched_page(browser, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True) as page:
        frame = embedded.open(page, "/visitors")
        thread, _visitor = visitor_thread(embedded)
        composer = frame.get_by_label("Message", exact=True)
        composer.fill("Do you ship abroad?")
        composer.press("Enter")
        expect(frame.locator("article.message.mine")).to_contain_text("ship abroad")

        # the shop's page signs its customer in by itself, then tells the chat
        page.evaluate("fetch('/sign-in-here').then(() => document.dispatchEvent(new Event('aitp:signed-in')))")

        deadline = time.monotonic() + WAIT
        while embedded.customer not in actors_of(embedded, thread) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert actors_of(embedded, thread) == [embedded.shop.id, embedded.customer]
        frame = page.frame_locator("#chat iframe")
        expect(frame.locator("body")).to_have_attribute("data-state", "open", timeout=WAIT * 1000)
        expect(frame.locator("article.message.mine")).to_contain_text("ship abroad")


def test_a_shop_that_does_not_let_visitors_in_asks_them_to_sign_in(page: Page, embedded: Embedded) -> None:
    page.goto(embedded.site.url + "/visitors")
    frame = page.frame_locator("#chat iframe")
    expect(frame.locator("#embed-status")).to_have_text("Sign in on this website to chat with us.")


# ------------------------------------------------------------------------ the screenshot in the README


# the contrast of a node's text on the first background behind it that is not transparent
CONTRAST_ON_BACKGROUND = (
    "(node) => { let behind = node; while (behind && getComputedStyle(behind).backgroundColor === 'rgba(0, 0, 0, 0)')"
    " behind = behind.parentElement; const background = behind ? getComputedStyle(behind).backgroundColor :"
    " 'rgb(255, 255, 255)'; return (" + CONTRAST + ")([getComputedStyle(node).color, background]); }"
)


IN_VIEW_DECODED = (
    "images => Promise.all(images.filter((image) => image.getBoundingClientRect().top < innerHeight)"
    ".map((image) => image.decode()))"
)


def test_a_screenshot_of_the_chat_on_a_shops_page_in_dark_mode(
    browser: Browser, web_server: WebServer, file_host: FileHost, tmp_path: Path
) -> None:
    target = SCREENSHOTS if os.environ.get("AITP_UPDATE_SCREENSHOTS") == "1" else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    with watched_page(browser, viewport={"width": 1280, "height": 800}, color_scheme="dark") as page:
        page.goto(f"{web_server.base_url}/health")  # any page of the origin: the canvas needs a document
        embedded = Embedded(web_server, name="Sound & Co.", logo=page.evaluate(DRAW_LOGO))
        try:
            ticket = embedded.shop.api.post("/tickets").json()["ticket"]
            inbox = web_server.base_url.replace("http://", "ws://") + f"/v1/actors/me/events/ws?ticket={ticket}"
            agent = connect(inbox)  # the shop's agent follows its inbox: it shows as online
            frame = embedded.open(page)
            expect(frame.locator(".presence-line")).to_have_text("Online")
            thread = embedded.thread()
            embedded.joins(thread)
            shown = products()
            for option in shown["request_decision"]["options"]:
                for item in [option, *option.get("variants", [])]:
                    png = page.evaluate(DRAW_HEADPHONES, COLOURS[item["id"]]).split(",", 1)[1]
                    item["image_url"] = file_host.publish(f"/embed-{item['id']}.png", b64decode(png), "image/png")
            composer = frame.get_by_label("Message", exact=True)
            composer.fill("Hi! I'm looking for noise-cancelling headphones.")
            composer.press("Enter")
            embedded.shop.says(
                thread,
                "Welcome back, Ada! Here are **our best matches**; sizes are in [our guide](https://example.com/guide).",
            )
            embedded.shop.says(thread, shown)
            card = frame.locator('[data-renderer="request_decision"]')
            expect(card).to_contain_text("JBL Tour One M2")
            frame.locator("#scroller").evaluate("node => node.scrollTop = 0")
            # the pictures in view (the others load lazily, when scrolled to)
            card.locator("img").evaluate_all(IN_VIEW_DECODED)

            # dark mode: the shop's colour still carries readable text, and its colour as text reads on the page
            background, ratio = header_contrast(frame)
            assert background == rgb(ACCENT) and ratio >= 4.5, (background, ratio)
            link = frame.get_by_role("link", name="our guide")
            assert link.evaluate("node => getComputedStyle(node).color") != rgb(ACCENT)  # lightened for the dark
            assert float(link.evaluate(CONTRAST_ON_BACKGROUND)) >= 4.5
            assert_only_the_shops_brand(page, frame, embedded)

            composer.blur()
            path = target / "embed-dark.png"
            page.screenshot(path=str(path), animations="disabled")
            assert png_size(path) == (1280, 800)
            agent.close()
        finally:
            embedded.close()
