"""A sock shop agent on an aitp thread service: it offers socks, quotes the choice and confirms the payment.

    python examples/shop_agent.py --url http://127.0.0.1:8000 --key $(aitp keys create --actor shop.near)

In every thread it is in (it declares both capabilities on joining):

    someone mentions "socks"         -> request_decision of type products (aitp-02-decisions)
    a decision on that request       -> quote for the chosen socks (aitp-01-payments)
    a payment of that quote          -> payment_confirmation

It keeps no state: its requests and quotes are looked up in the thread, and what it posts derives from
the message it answers (ids, times), so a replayed event posts nothing twice. It starts at the inbox's
end, or after `--after`; with `--cursor-file` a restart resumes after the last event handled.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from aitp.client import Agent, AitpClient, Incoming

log = logging.getLogger("shop_agent")

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
SIGNATURE = "ed25519:unsigned-demo"  # a real merchant signs its quotes and confirmations


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    description: str
    price: Decimal  # USD


CATALOG = (
    Product("red-wool-socks", "Red wool socks", "Warm merino wool", Decimal("12.50")),
    Product("blue-cotton-socks", "Blue cotton socks", "Breathable everyday cotton", Decimal("8.00")),
    Product("rainbow-socks", "Rainbow socks", "Seven colours, one pair", Decimal("15.99")),
)


def shop(client: AitpClient, catalog: tuple[Product, ...] = CATALOG, cursor_file: str | None = None) -> Agent:
    """The shop: an `Agent` with a handler for each step of the sale."""
    agent = Agent(client, capabilities=[DECISIONS, PAYMENTS], cursor_file=cursor_file)
    products = {p.id: p for p in catalog}

    @agent.on_text
    async def offer(incoming: Incoming) -> None:
        if "socks" not in incoming.text.lower():
            return
        request_id = f"socks-{incoming.message.id}"
        plan = {"plan_type": "one-time", "currency": "USD"}
        options = [
            {
                "id": p.id,
                "name": p.name,
                "description": f"{p.description}, {p.price} USD a pair",
                # the schema's per-option price: a (pre-2025) quote with one payment plan
                "quote": {
                    "type": "Quote",
                    "quote_id": f"{request_id}-{p.id}",
                    "payee_id": agent.actor,
                    "payment_plans": [{"plan_id": p.id, "amount": float(p.price), **plan}],
                    "valid_until": incoming.timestamp(timedelta(hours=1)),
                },
            }
            for p in products.values()
        ]
        request = {"id": request_id, "type": "products", "title": "Our socks", "options": options}
        intro = "Here are our socks: choose a pair or several."
        await incoming.reply([intro, {"$schema": DECISIONS, "request_decision": request}])
        log.info("thread %s: offered %d socks (request %s)", incoming.thread_id, len(options), request_id)

    @agent.on("decision", capability="aitp-02-decisions")
    async def quote(incoming: Incoming) -> None:
        decision = incoming.payload
        if not await incoming.find("request_decision", sender=agent.actor, id=decision.get("request_decision_id")):
            return  # a decision on another actor's request
        # the service has checked that every chosen option was offered in that request; a request of the shop's
        # that offered other things than socks (or a catalog changed since) is not this handler's to quote
        chosen = [o for o in decision["options"] if o["id"] in products]
        if not chosen:
            return
        lines = [(products[o["id"]], Decimal(str(o.get("quantity", 1)))) for o in chosen]
        if any(quantity <= 0 for _, quantity in lines):
            await incoming.reply("Quantities must be positive; please choose again.")
            return
        amount = f"{sum((p.price * quantity for p, quantity in lines), Decimal(0)):.2f}"
        method = {"type": "near_payment_channel", "token": "usdc.near", "recipient": agent.actor}
        quote = {
            "quote_id": f"q-{incoming.message.id}",
            "merchant_id": agent.actor,
            "description": ", ".join(f"{quantity:g} x {p.name}" for p, quantity in lines),
            "expiration": incoming.timestamp(timedelta(hours=1)),
            "payment_options": [{"amount": amount, "currency": "USD", "payment_methods": [method]}],
            "merchant_signature": SIGNATURE,
        }
        await incoming.reply({"$schema": PAYMENTS, "quote": quote})
        log.info("thread %s: quoted %s USD for %s", incoming.thread_id, amount, quote["description"])

    @agent.on("payment", capability="aitp-01-payments")
    async def confirm(incoming: Incoming) -> None:
        quote_id = incoming.payload["quote_id"]
        if not await incoming.find("quote", sender=agent.actor, quote_id=quote_id):
            return  # a payment of another actor's quote
        # The service has checked amount and currency against the quote; a real shop would also check
        # that the transfer (payment_method.channel_id) arrived before confirming.
        confirmation = {
            "quote_id": quote_id,
            "payment_id": f"pay-{incoming.message.id}",
            "result": "success",
            "timestamp": incoming.timestamp(),
            "message": "Thank you! Your socks are on their way.",
            "details": [{"label": "Order", "value": f"pay-{incoming.message.id}"}],
            "merchant_signature": SIGNATURE,
        }
        await incoming.reply({"$schema": PAYMENTS, "payment_confirmation": confirmation})
        log.info("thread %s: confirmed payment of quote %s", incoming.thread_id, quote_id)

    return agent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A sock shop agent: offers socks, quotes and confirms payments.")
    p.add_argument("--url", default=os.environ.get("AITP_URL", "http://127.0.0.1:8000"), help="env AITP_URL")
    p.add_argument("--key", default=os.environ.get("AITP_KEY"), help="the shop actor's API key (env AITP_KEY)")
    p.add_argument("--cursor-file", help="where to keep the inbox cursor, to resume after a restart")
    p.add_argument("--after", type=int, help="start after this inbox cursor (default: only new events)")
    args = p.parse_args(argv)
    if not args.key:
        p.error("an API key is needed: --key or AITP_KEY (create one with `aitp keys create --actor shop.near`)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown what the shop does

    async def serve() -> None:
        async with AitpClient(args.url, args.key) as client:
            await client.set_contact_policy("anyone")  # a shop serves the public: anyone may open a thread with it
            await shop(client, cursor_file=args.cursor_file).run(args.after)

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
