"""A shopper agent on an aitp thread service: it opens a thread with a shop, asks for something, buys the
cheapest product offered and exits once the shop confirms the payment (printing the confirmation).

    python examples/user_agent.py --url http://127.0.0.1:8000 --key $(aitp keys create --actor user.near)
    AITP_URL=http://127.0.0.1:8000 AITP_KEY=... python examples/user_agent.py     # the same, from the environment

    a products request_decision       -> decision: the cheapest option, --quantity of it
    a quote                           -> payment of its first payment option (no real transfer is made)
    a payment_confirmation            -> printed as JSON; exit 0 on success, 1 otherwise
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from decimal import Decimal
from typing import Any

from aitp.client import (
    DECISIONS,
    PAYMENTS,
    Agent,
    AitpClient,
    Decision,
    DecisionOption,
    InboxEvent,
    Incoming,
    Payment,
    PaymentConfirmation,
    PaymentMethodUsed,
    Quote,
    RequestDecision,
    SelectedOption,
)

log = logging.getLogger("user_agent")


def price(option: DecisionOption) -> Decimal:
    """An option's price (USD, from its quote); unpriced options come last."""
    return Decimal("Infinity") if option.price is None else option.price


def shopper(client: AitpClient, thread_id: str, shop: str, quantity: int) -> tuple[Agent, dict[str, Any]]:
    """The user's handlers for one thread with `shop`; they stop the agent once the payment is confirmed,
    filling the dict returned with the confirmation."""
    agent = Agent(client)  # its capabilities are declared with the thread it creates
    confirmation: dict[str, Any] = {}

    def from_the_shop(incoming: Incoming) -> bool:
        return incoming.thread_id == thread_id and incoming.sender == shop

    @agent.on("request_decision")
    async def choose(incoming: Incoming) -> None:
        request = RequestDecision.model_validate(incoming.payload)
        if not from_the_shop(incoming) or request.type != "products":
            return
        cheapest = min(request.options, key=price)
        choice = Decision(request_decision_id=request.id, options=[SelectedOption(id=cheapest.id, quantity=quantity)])
        await incoming.reply(choice.to_message())
        log.info("chose %d x %s at %s USD", quantity, cheapest.name or cheapest.id, cheapest.price)

    @agent.on("quote")
    async def pay(incoming: Incoming) -> None:
        if not from_the_shop(incoming):
            return
        quote = Quote.model_validate(incoming.payload)
        option = quote.payment_options[0]
        method = PaymentMethodUsed(
            token=option.payment_methods[0].token,
            channel_id=f"demo-{incoming.message.id}",  # where a wallet's transfer would be
            amount=option.amount,
            currency=option.currency,
        )
        payment = Payment(
            quote_id=quote.quote_id,
            payment_method=method,
            payer_id=agent.actor,
            timestamp=incoming.timestamp(),
            payer_signature="ed25519:unsigned-demo",
        )
        await incoming.reply(payment.to_message())
        log.info("paid %s %s for %s", option.price, option.currency, quote.description)

    @agent.on("payment_confirmation")
    async def done(incoming: Incoming) -> None:
        if from_the_shop(incoming):
            confirmation.update(PaymentConfirmation.model_validate(incoming.payload).to_payload())
            agent.stop()

    @agent.on_event("thread.message.refused")
    async def refused(event: InboxEvent) -> None:
        if event.thread_id == thread_id:  # the shop sent something we cannot read: say so, instead of waiting
            cannot = ", ".join(event.data["unsupported_by"])
            log.warning("%s's %s was refused: %s cannot read it", event.data["actor"], event.data["type"], cannot)

    return agent, confirmation


async def buy(client: AitpClient, shop: str, want: str, quantity: int, timeout: float) -> dict[str, Any]:
    """Open a thread with `shop`, ask for `want`, and follow it until the payment is confirmed."""
    me = await client.me()  # its inbox_cursor: the agent reads from there, so nothing is missed meanwhile
    actors = [{"id": me.id, "capabilities": [DECISIONS, PAYMENTS]}, shop]
    thread = await client.create_thread(actors=actors, messages=[f"Hello! I would like to buy {want}."])
    log.info("thread %s: asked %s for %s", thread.id, shop, want)
    agent, confirmation = shopper(client, thread.id, shop, quantity)
    await asyncio.wait_for(agent.run(after=me.inbox_cursor), timeout)
    return confirmation


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A shopper agent: buys the cheapest product a shop offers.")
    p.add_argument("--url", default=os.environ.get("AITP_URL", "http://127.0.0.1:8000"), help="env AITP_URL")
    p.add_argument("--key", default=os.environ.get("AITP_KEY"), help="the user actor's API key (env AITP_KEY)")
    p.add_argument("--shop", default="shop.near", help="the shop's actor id (default shop.near)")
    p.add_argument("--want", default="socks", help="what to ask the shop for (default socks)")
    p.add_argument("--quantity", type=int, default=1, help="how many of the chosen product (default 1)")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for the confirmation (default 60)")
    args = p.parse_args(argv)
    if not args.key:
        p.error("an API key is needed: --key or AITP_KEY (create one with `aitp keys create --actor user.near`)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    async def shopping() -> dict[str, Any]:
        async with AitpClient(args.url, args.key) as client:
            return await buy(client, args.shop, args.want, args.quantity, args.timeout)

    confirmation = asyncio.run(shopping())
    print(json.dumps(confirmation))
    return 0 if confirmation.get("result") == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
