"""A sock shop agent on an aitp thread service: it offers socks, quotes the choice and confirms the payment.

    aitp keys create --actor shop.near            # prints the shop's key
    python examples/shop_agent.py --url http://127.0.0.1:8000 --key aitp_...

It follows its inbox (the events of every thread it is in) and, in each thread:

    someone mentions "socks"         -> request_decision of type products (aitp-02-decisions)
    a decision on that request       -> quote for the chosen socks (aitp-01-payments)
    a payment of that quote          -> payment_confirmation

On joining a thread it declares both capabilities (an actor's declarations are its own to make). It
keeps no state: requests and quotes it sent are looked up in the thread, so a restart loses nothing
but the events it skips (by default it starts at the inbox's current end; `--after` resumes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from aitp.client import AitpClient, AitpError, Event, Message, Reconnect, SchemaDeclaration, TextPart

log = logging.getLogger("shop_agent")

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
CAPABILITIES = (DECISIONS, PAYMENTS)
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


def _timestamp(delta: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def capability_payloads(message: Message, capability: str, kind: str) -> list[dict[str, Any]]:
    """The `kind` payloads (`decision`, `quote`, ...) of the message's parts the service validated as `capability`."""
    payloads = []
    for part, summary in zip(message.content, message.aitp or [], strict=False):
        if summary is None or not (summary.validated and summary.capability == capability and summary.type == kind):
            continue
        if isinstance(part, TextPart):
            payloads.append(json.loads(part.text.value)[kind])
    return payloads


def plain_text(message: Message) -> str:
    """The message's text parts that are not capability messages."""
    summaries = message.aitp or [None] * len(message.content)
    parts = zip(message.content, summaries, strict=False)
    return " ".join(p.text.value for p, s in parts if s is None and isinstance(p, TextPart))


class ShopAgent:
    """The shop's logic: `handle` one event (returns what it posted, if anything); `run` follows the inbox."""

    def __init__(self, client: AitpClient, actor: str = "shop.near", catalog: Sequence[Product] = CATALOG) -> None:
        self.client = client
        self.actor = actor
        self.catalog = {p.id: p for p in catalog}
        self._declared: set[str] = set()  # threads where our declarations are known to be in place

    async def run(self, after: int | None = None) -> None:
        """Follow the inbox after cursor `after` (default: its current end, so that history is not answered again)."""
        cursor = await self.inbox_end() if after is None else after
        log.info("%s: following the inbox after cursor %d", self.actor, cursor)
        # Ride out a server restart or an outage of several minutes before giving up.
        async for event in self.client.inbox(after=cursor, reconnect=Reconnect(max_attempts=120)):
            try:
                await self.handle(event)
            except AitpError as error:  # refused (e.g. the thread went away meanwhile): the next event may work
                log.warning("thread %s: event %d: %s", event.thread_id, event.cursor, error)

    async def inbox_end(self) -> int:
        """The cursor of the last event in the inbox now."""
        page = await self.client.list_inbox(limit=1000)
        while page.has_more:
            page = await self.client.list_inbox(after=page.last_cursor, limit=1000)
        return page.last_cursor

    async def handle(self, event: Event) -> Message | None:
        """React to one event of a thread the shop is in; returns the message it posted, if any."""
        if event.type in ("thread.created", "thread.actor.joined"):
            joined = event.data.get("actors", [event.data])  # a thread lists its actors; a join is one actor
            if any(a.get("id") == self.actor for a in joined):
                await self.declare(event.thread_id)
            return None
        if event.type != "thread.message.created":
            return None
        message = Message.model_validate(event.data)
        if message.metadata.get("actor") == self.actor:
            return None
        if decisions := capability_payloads(message, "aitp-02-decisions", "decision"):
            return await self.quote(message.thread_id, decisions[0])
        if payments := capability_payloads(message, "aitp-01-payments", "payment"):
            return await self.confirm(message.thread_id, payments[0])
        if "socks" in plain_text(message).lower():
            return await self.offer(message.thread_id)
        return None

    async def declare(self, thread_id: str) -> None:
        """Declare the capabilities we send in, unless already declared for us."""
        if thread_id in self._declared:
            return
        me = next((a for a in await self.client.list_actors(thread_id) if a.id == self.actor), None)
        declared = {d.schema_ for d in me.capabilities if isinstance(d, SchemaDeclaration)} if me else set()
        if not set(CAPABILITIES) <= declared:
            await self.client.put_actor(thread_id, self.actor, capabilities=CAPABILITIES)
            log.info("thread %s: declared %s", thread_id, ", ".join(CAPABILITIES))
        self._declared.add(thread_id)

    async def offer(self, thread_id: str) -> Message:
        await self.declare(thread_id)
        request_id = f"socks-{uuid.uuid4().hex[:12]}"
        options = [
            {
                "id": p.id,
                "name": p.name,
                "description": f"{p.description}, {p.price} USD a pair",
                # The schema's per-option price: a (pre-2025) quote with one payment plan.
                "quote": {
                    "type": "Quote",
                    "quote_id": f"{request_id}-{p.id}",
                    "payee_id": self.actor,
                    "payment_plans": [
                        {"plan_id": p.id, "plan_type": "one-time", "amount": float(p.price), "currency": "USD"}
                    ],
                    "valid_until": _timestamp(timedelta(hours=1)),
                },
            }
            for p in self.catalog.values()
        ]
        request = {"id": request_id, "type": "products", "title": "Our socks", "options": options}
        intro = "Here are our socks: choose a pair or several."
        sent = await self.client.create_message(thread_id, [intro, {"$schema": DECISIONS, "request_decision": request}])
        log.info("thread %s: offered %d socks (request %s)", thread_id, len(options), request_id)
        return sent

    async def quote(self, thread_id: str, decision: dict[str, Any]) -> Message | None:
        request_id = decision.get("request_decision_id")
        if await self._sent(thread_id, "aitp-02-decisions", "request_decision", "id", request_id) is None:
            log.info("thread %s: a decision on %s, not a request of ours", thread_id, request_id)
            return None
        # The service has checked that every chosen option was offered in that request.
        lines = [(self.catalog[o["id"]], Decimal(str(o.get("quantity", 1)))) for o in decision["options"]]
        if any(quantity <= 0 for _, quantity in lines):
            return await self.client.create_message(thread_id, "Quantities must be positive; please choose again.")
        amount = f"{sum((p.price * quantity for p, quantity in lines), Decimal(0)):.2f}"
        method = {"type": "near_payment_channel", "token": "usdc.near", "recipient": self.actor}
        quote_id = f"q-{uuid.uuid4().hex[:12]}"
        quote = {
            "quote_id": quote_id,
            "merchant_id": self.actor,
            "description": ", ".join(f"{quantity:g} x {p.name}" for p, quantity in lines),
            "expiration": _timestamp(timedelta(hours=1)),
            "payment_options": [{"amount": amount, "currency": "USD", "payment_methods": [method]}],
            "merchant_signature": SIGNATURE,
        }
        sent = await self.client.create_message(thread_id, {"$schema": PAYMENTS, "quote": quote})
        log.info("thread %s: quoted %s USD for %s (quote %s)", thread_id, amount, quote["description"], quote_id)
        return sent

    async def confirm(self, thread_id: str, payment: dict[str, Any]) -> Message | None:
        quote_id = payment.get("quote_id")
        if await self._sent(thread_id, "aitp-01-payments", "quote", "quote_id", quote_id) is None:
            log.info("thread %s: a payment of %s, not a quote of ours", thread_id, quote_id)
            return None
        # The service has checked amount and currency against the quote; a real shop would also check
        # that the transfer (payment_method.channel_id) arrived before confirming.
        payment_id = f"pay-{uuid.uuid4().hex[:12]}"
        confirmation = {
            "quote_id": quote_id,
            "payment_id": payment_id,
            "result": "success",
            "timestamp": _timestamp(),
            "message": "Thank you! Your socks are on their way.",
            "details": [{"label": "Order", "value": payment_id}],
            "merchant_signature": SIGNATURE,
        }
        sent = await self.client.create_message(thread_id, {"$schema": PAYMENTS, "payment_confirmation": confirmation})
        log.info("thread %s: confirmed payment %s of quote %s", thread_id, payment_id, quote_id)
        return sent

    async def _sent(self, thread_id: str, capability: str, kind: str, key: str, value: Any) -> dict[str, Any] | None:
        """Our own `kind` payload in the thread whose `key` is `value`: the thread is the shop's memory."""
        async for message in self.client.iter_messages(thread_id, order="desc"):
            if message.metadata.get("actor") == self.actor:
                for payload in capability_payloads(message, capability, kind):
                    if payload.get(key) == value:
                        return payload
        return None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="A sock shop agent: offers socks, quotes and confirms payments.")
    url = os.environ.get("AITP_URL", "http://127.0.0.1:8000")
    p.add_argument("--url", default=url, help="the server (env AITP_URL, default http://127.0.0.1:8000)")
    p.add_argument("--key", default=os.environ.get("AITP_KEY"), help="the shop actor's API key (env AITP_KEY)")
    p.add_argument("--actor", default="shop.near", help="the actor id the key acts as (default shop.near)")
    p.add_argument("--after", type=int, help="resume after this inbox cursor (default: only new events)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.key:
        parser().error("an API key is needed: --key or AITP_KEY (create one with `aitp keys create --actor shop.near`)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown what the shop does

    async def serve() -> None:
        async with AitpClient(args.url, args.key) as client:
            await ShopAgent(client, args.actor).run(args.after)

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
