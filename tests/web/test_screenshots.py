"""The screenshots of docs/web-ui.md (and the README), produced from a real conversation: a shop agent with a
profile (name, logo) posts a Markdown message, the products `request_decision` example and a `request_data` form
over HTTP; the customer, with a profile of her own, opens them in the UI.

Takes, on every run: the customer's view (products-decision.png), the order summary before anything is
sent (order-summary.png), the form (data-request-form.png), the developer's view of the same thread
(developer-details.png) and the conversation on a phone (phone-conversation.png). With
AITP_UPDATE_SCREENSHOTS=1 it writes them to docs/screenshots/ (the docs' copies), otherwise to the
test's temporary directory, so a test run leaves the checkout as it was.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.web.conftest import SCREENSHOTS, FileHost, WebServer

CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA_REQUEST = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"

# The example's product photos live on a CDN this network cannot reach: draw stand-ins (headphones in
# each product's colour) on a canvas and serve them from a local file host.
DRAW_HEADPHONES = """(colour) => {
  const canvas = document.createElement("canvas");
  canvas.width = 360; canvas.height = 270;
  const g = canvas.getContext("2d");
  const background = g.createLinearGradient(0, 0, 0, 270);
  background.addColorStop(0, "#f4f5fb"); background.addColorStop(1, "#e3e6f3");
  g.fillStyle = background; g.fillRect(0, 0, 360, 270);
  g.fillStyle = "rgba(20, 24, 40, 0.10)";
  g.beginPath(); g.ellipse(180, 236, 110, 12, 0, 0, Math.PI * 2); g.fill();
  g.strokeStyle = colour; g.lineWidth = 18; g.lineCap = "round";
  g.beginPath(); g.arc(180, 150, 92, Math.PI * 1.08, Math.PI * 1.92); g.stroke();
  const cup = (x) => {
    g.fillStyle = colour; g.beginPath(); g.roundRect(x, 122, 56, 92, 24); g.fill();
    g.fillStyle = "rgba(0, 0, 0, 0.28)"; g.beginPath(); g.roundRect(x + 12, 136, 32, 64, 14); g.fill();
  };
  cup(74); cup(230);
  return canvas.toDataURL("image/png");
}"""
DECODED = "images => Promise.all(images.map((image) => image.decode()))"
# the shop's logo, for its profile: a small PNG drawn on a canvas
DRAW_LOGO = """() => {
  const canvas = document.createElement("canvas");
  canvas.width = 96; canvas.height = 96;
  const g = canvas.getContext("2d");
  g.fillStyle = "#0f766e"; g.fillRect(0, 0, 96, 96);
  g.strokeStyle = "#ffffff"; g.lineWidth = 9; g.lineCap = "round";
  g.beginPath(); g.arc(48, 54, 26, Math.PI * 1.05, Math.PI * 1.95); g.stroke();
  g.fillStyle = "#ffffff";
  g.beginPath(); g.roundRect(18, 50, 14, 24, 6); g.fill();
  g.beginPath(); g.roundRect(64, 50, 14, 24, 6); g.fill();
  return canvas.toDataURL("image/png");
}"""
COLOURS = {
    "product_1": "#1f2937",
    "product_2": "#2563eb",
    "product_3": "#0f766e",
    "product_4": "#be185d",
    "product_5": "#a16207",
    "product_6": "#7c3aed",
}

SHIPPING_FORM = {
    "id": "shipping-details",
    "title": "Shipping details",
    "description": "Where should we send your headphones?",
    "fillButtonLabel": "Fill out shipping details",
    "form": {
        "fields": [
            {"id": "name", "label": "Full name", "type": "text", "required": True, "autocomplete": "name"},
            {"id": "email", "label": "Email", "type": "email", "required": True, "autocomplete": "email"},
            {"id": "phone", "label": "Phone", "type": "tel", "autocomplete": "tel"},
            {"id": "quantity", "label": "Quantity", "type": "number", "default_value": "1"},
            {"id": "country", "label": "Country", "type": "combobox", "options": ["France", "Germany", "Spain"]},
            {"id": "speed", "label": "Delivery", "type": "select", "options": ["Standard", "Express"]},
            {"id": "note", "label": "Note", "type": "textarea", "description": "Anything the courier should know"},
        ]
    },
}


def example(capability: str, name: str) -> dict[str, Any]:
    return json.loads((CAPABILITIES / capability / "1.0.0" / "examples" / f"{name}.json").read_text())


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_screenshots_of_a_customer_buying_headphones_and_the_developer_view(
    page: Page, web_server: WebServer, file_host: FileHost, tmp_path: Path
) -> None:
    target = SCREENSHOTS if os.environ.get("AITP_UPDATE_SCREENSHOTS") == "1" else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    user, shop_id = "ada.near", "headphones-shop.near"
    user_key = web_server.key_for(user)
    user_api, shop = web_server.client(user_key), web_server.agent(shop_id)
    page.goto(f"{web_server.base_url}/health")  # any page of the origin: the canvas needs a document
    profile = {
        "display_name": "Sound & Co.",
        "avatar_url": page.evaluate(DRAW_LOGO),
        "description": "Headphones and speakers, shipped in 24 hours.",
    }
    assert shop.put("/actors/me/profile", json=profile).status_code == 200
    assert user_api.put("/actors/me/profile", json={"display_name": "Ada Lovelace"}).status_code == 200
    capabilities = [DECISIONS, DATA_REQUEST]
    created = user_api.post(
        "/threads",
        json={
            "metadata": {"title": "Noise-cancelling headphones"},
            "actors": [{"id": user, "capabilities": capabilities}, {"id": shop_id, "capabilities": capabilities}],
            "messages": ["I'm looking for noise-cancelling headphones under $300."],
        },
    )
    assert created.status_code == 200, created.text
    thread_id = created.json()["id"]

    def shop_posts(content: str) -> dict[str, Any]:
        response = shop.post(f"/threads/{thread_id}/messages", json={"content": content})
        assert response.status_code == 200, response.text
        return response.json()

    products = example("aitp-02-decisions", "request_decision_products")
    for option in products["request_decision"]["options"]:
        for item in [option, *option.get("variants", [])]:
            png = base64.b64decode(page.evaluate(DRAW_HEADPHONES, COLOURS[item["id"]]).split(",", 1)[1])
            item["image_url"] = file_host.publish(f"/{item['id']}.png", png, "image/png")
    shop_posts(
        "Here are the **best matches** for your budget, all with _active noise cancelling_. "
        "Sizes and battery life are in [our buying guide](https://example.com/guide)."
    )
    decision = shop_posts(json.dumps(products))
    assert decision["aitp"][0]["type"] == "request_decision"

    # the customer's view: names, avatars, Markdown, the products
    page.set_viewport_size({"width": 1280, "height": 1380})  # the whole conversation, no cut-off message
    page.goto(web_server.url(user_key, thread_id))
    card = page.locator(f'article[data-message-id="{decision["id"]}"] [data-renderer="request_decision"]')
    expect(card).to_be_visible()
    expect(card).to_contain_text("JBL Tour One M2")
    expect(page.locator("#thread-subtitle")).to_have_text("With Sound & Co.")
    card.locator("img").evaluate_all(DECODED)
    page.locator("#scroller").evaluate("node => node.scrollTop = 0")
    products_png = target / "products-decision.png"
    page.screenshot(path=str(products_png), animations="disabled")

    # Buy: the order summary, with its total, before anything is sent
    soundcore = card.locator(".aitp-product").nth(1)
    soundcore.get_by_label("Variant").select_option(label="Cream")
    soundcore.get_by_label("Quantity").fill("2")
    soundcore.get_by_role("button", name="Buy Soundcore by Anker, Cream").click()
    order = card.get_by_role("group", name="Your order")
    expect(order.locator(".aitp-order-total dd")).to_have_text("$149.98")
    page.set_viewport_size({"width": 1280, "height": 800})
    order.evaluate("node => node.scrollIntoView({block: 'end'})")
    order_png = target / "order-summary.png"
    page.screenshot(path=str(order_png), animations="disabled")
    order.get_by_role("button", name="Change").click()

    # the developer's view of the same thread: ids, roles, declarations, the negotiated table
    page.get_by_text("Developer details").click()
    expect(page.locator("#details .negotiated-list")).to_be_visible()
    developer_png = target / "developer-details.png"
    page.screenshot(path=str(developer_png), animations="disabled")
    page.get_by_text("Developer details").click()

    page.set_viewport_size({"width": 1280, "height": 960})
    form_request = shop_posts(json.dumps({"$schema": DATA_REQUEST, "request_data": SHIPPING_FORM}))
    assert form_request["aitp"][0]["type"] == "request_data"
    request_card = page.locator(f'article[data-message-id="{form_request["id"]}"] [data-renderer="request_data"]')
    request_card.get_by_role("button", name="Fill out shipping details").click()
    dialog = page.get_by_role("dialog", name="Shipping details")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Full name").fill("Ada Lovelace")
    dialog.get_by_label("Email").fill("ada@example.com")
    form_png = target / "data-request-form.png"
    page.screenshot(path=str(form_png), animations="disabled")
    dialog.get_by_role("button", name="Cancel").click()

    # a phone: the conversation on a screen of its own, the composer pinned
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#scroller").evaluate("node => node.scrollTop = 0")
    phone_png = target / "phone-conversation.png"
    page.screenshot(path=str(phone_png), animations="disabled")

    # the requests are what the server stored, as the shop sees them; nothing was bought
    stored = shop.get(f"/threads/{thread_id}/messages", params={"order": "asc"}).json()["data"]
    kinds = [((m["aitp"] or [None])[0] or {"type": "text"})["type"] for m in stored]
    assert kinds == ["text", "text", "request_decision", "request_data"]
    for path in (products_png, order_png, developer_png, form_png, phone_png):
        width, height = png_size(path)
        assert 300 <= width <= 1280 and 200 <= height <= 2400, (path, width, height)
