"""A sock shop agent on an aitp thread service: it offers socks, quotes the choice and confirms the payment.

    python examples/shop_agent.py --url http://127.0.0.1:8000 --key $(aitp keys create --actor shop.near)

In every thread it is in (it declares both capabilities on joining):

    a customer opens a thread without a word  -> a greeting
    someone mentions "socks"                  -> request_decision of type products, each priced (aitp-02-decisions)
    a decision on that request                -> quote for the chosen socks (aitp-01-payments)
    a payment of that quote                   -> payment_confirmation (the payment result), which alone says
                                                 the socks are on their way; with --hold-payments, nothing: the
                                                 customer's app shows the payment as sent, waiting for the shop

It keeps no state (its requests and quotes are looked up in the thread, what it posts derives from the message
it answers), so a replayed event posts nothing twice: `--cursor-file` resumes after a restart where it stopped.
"""

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from aitp.client import (
    DECISIONS,
    PAYMENTS,
    Agent,
    AitpClient,
    Arrival,
    Conflict,
    Decision,
    DecisionOption,
    Incoming,
    OptionQuote,
    Payment,
    PaymentConfirmation,
    PaymentMethod,
    PaymentOption,
    Quote,
    RequestDecision,
)

log = logging.getLogger("shop_agent")
SIGNATURE = "ed25519:unsigned-demo"  # a real merchant signs its quotes and confirmations


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    description: str
    price: Decimal  # USD

    def option(self, request_id: str, shop: str | None, until: str) -> DecisionOption:  # priced as products are
        price = OptionQuote.one_time(self.price, quote_id=f"{request_id}-{self.id}", payee_id=shop, valid_until=until)
        return DecisionOption(id=self.id, name=self.name, description=self.description, quote=price)


CATALOG = (
    Product("red-wool-socks", "Red wool socks", "Warm merino wool", Decimal("12.50")),
    Product("blue-cotton-socks", "Blue cotton socks", "Breathable everyday cotton", Decimal("8.00")),
    Product("rainbow-socks", "Rainbow socks", "Seven colours, one pair", Decimal("15.99")),
)


def shop(
    client: AitpClient,
    catalog: tuple[Product, ...] = CATALOG,
    cursor_file: str | None = None,
    confirm_payments: bool = True,
) -> Agent:
    """The shop: an `Agent` with a handler for each step of the sale. `confirm_payments=False` holds every
    payment unanswered, as a shop does while it waits for the money to arrive."""
    agent = Agent(client, capabilities=[DECISIONS, PAYMENTS], cursor_file=cursor_file)
    products = {p.id: p for p in catalog}

    @agent.on_arrival
    async def greet(arrival: Arrival) -> None:
        if not (await client.list_messages(arrival.thread_id, limit=1)).data:  # one who asked gets an answer
            await arrival.reply(f"Welcome to the sock shop, {arrival.creator}! Ask me for socks.")

    @agent.on_text
    async def offer(incoming: Incoming) -> None:
        if "socks" not in incoming.text.lower():
            return
        request_id, until = f"socks-{incoming.message.id}", incoming.timestamp(timedelta(hours=1))
        options = [p.option(request_id, agent.actor, until) for p in products.values()]
        request = RequestDecision(id=request_id, type="products", title="Our socks", options=options)
        await incoming.reply(["Here are our socks: choose a pair or several.", request.to_message()])
        log.info("thread %s: offered %d socks (request %s)", incoming.thread_id, len(options), request_id)

    @agent.on("decision", capability="aitp-02-decisions")
    async def quote(incoming: Incoming) -> None:
        decision = Decision.model_validate(incoming.payload)
        if not await incoming.find("request_decision", sender=agent.actor, id=decision.request_decision_id):
            return  # a decision on another actor's request
        # the service checked that the options chosen were offered; not socks (another request): not ours to quote
        chosen = [o for o in decision.options if o.id in products]
        lines = [(products[o.id], Decimal(str(1 if o.quantity is None else o.quantity))) for o in chosen]
        if not lines:
            return
        if any(quantity <= 0 for _, quantity in lines):
            await incoming.reply("Quantities must be positive; please choose again.")
            return
        total = sum((p.price * quantity for p, quantity in lines), Decimal(0)).quantize(Decimal("0.01"))
        method = PaymentMethod(token="usdc.near", recipient=agent.actor)
        quote = Quote(
            quote_id=f"q-{incoming.message.id}",
            merchant_id=agent.actor,
            description=", ".join(f"{quantity:g} x {p.name}" for p, quantity in lines),
            expiration=incoming.timestamp(timedelta(hours=1)),
            payment_options=[PaymentOption(amount=total, currency="USD", payment_methods=[method])],
            merchant_signature=SIGNATURE,
        )
        await incoming.reply(quote.to_message())
        log.info("thread %s: quoted %s USD for %s", incoming.thread_id, total, quote.description)

    @agent.on("payment", capability="aitp-01-payments")
    async def confirm(incoming: Incoming) -> None:
        paid = Payment.model_validate(incoming.payload)
        if not await incoming.find("quote", sender=agent.actor, quote_id=paid.quote_id):
            return  # a payment of another actor's quote
        if not confirm_payments:  # not received yet: no result, and no word of shipping before one
            log.info("thread %s: holding payment of quote %s unconfirmed", incoming.thread_id, paid.quote_id)
            return
        # the service checked amount and currency; a real shop would check the transfer arrived (its channel_id).
        # The payment result comes first: only a confirmed payment sends the socks on their way.
        confirmation = PaymentConfirmation(
            quote_id=paid.quote_id,
            payment_id=f"pay-{incoming.message.id}",
            result="success",
            timestamp=incoming.timestamp(),
            message="Payment received. Your socks are on their way.",
            merchant_signature=SIGNATURE,
        )
        await incoming.reply(confirmation.to_message())
        log.info("thread %s: confirmed payment of quote %s", incoming.thread_id, paid.quote_id)

    return agent


async def name_the_shop(client: AitpClient, name: str) -> None:
    """What customers see ("waiting for Sunny Socks to confirm"), not the shop's actor id. A name that reads as a
    verified actor's is refused (409 display_name_taken): the shop then goes on under its id."""
    try:
        await client.set_profile(display_name=name, description="Warm socks since 1999", accent_color="#b45309")
    except Conflict as error:
        log.warning("the shop keeps its id as its name: %s", error)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A sock shop agent: offers socks, quotes and confirms payments.")
    p.add_argument("--url", default=os.environ.get("AITP_URL", "http://127.0.0.1:8000"), help="env AITP_URL")
    p.add_argument("--key", default=os.environ.get("AITP_KEY"), help="the shop actor's API key (env AITP_KEY)")
    p.add_argument("--cursor-file", help="where to keep the inbox cursor, to resume after a restart")
    p.add_argument("--after", type=int, help="start after this inbox cursor (default: only new events)")
    p.add_argument("--name", default="Sunny Socks", help="the shop's display name, as customers see it")
    p.add_argument("--hold-payments", action="store_true", help="never confirm a payment (to see an unconfirmed one)")
    args = p.parse_args(argv)
    if not args.key:
        p.error("an API key is needed: --key or AITP_KEY (create one with `aitp keys create --actor shop.near`)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown what the shop does

    async def serve() -> None:
        async with AitpClient(args.url, args.key) as client:
            await client.set_contact_policy("anyone")  # a shop serves the public: anyone may open a thread with it
            await name_the_shop(client, args.name)
            await shop(client, cursor_file=args.cursor_file, confirm_payments=not args.hold_payments).run(args.after)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
