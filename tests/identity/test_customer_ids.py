"""A shop's customer ids, read from the id alone: `<customer>@<shop>`, the customer 1 to 64 letters, digits,
'.', '_' or '-' starting with a letter or digit, the shop an actor id without '@'; and which actors a customer's
shop covers (the shop itself, and for a domain shop its agents under it)."""

from __future__ import annotations

import pytest

from aitp.identity.actor_ids import (
    CustomerActor,
    customer_of,
    is_customer,
    kind_of,
    parse_customer_actor,
    within_shop,
)
from aitp.identity.refusals import ProofRefused


@pytest.mark.parametrize(
    ("actor_id", "customer", "shop"),
    [
        ("4821@sunnysocks.example", "4821", "sunnysocks.example"),
        ("Ada.L_1-x@shop-3.near", "Ada.L_1-x", "shop-3.near"),
        ("c@localhost:8000/sales", "c", "localhost:8000/sales"),
        ("a" * 64 + "@corner-shop", "a" * 64, "corner-shop"),
    ],
)
def test_a_customer_id_reads_as_the_customer_and_its_shop(actor_id: str, customer: str, shop: str) -> None:
    assert customer_of(actor_id) == CustomerActor(customer, shop)
    assert parse_customer_actor(actor_id).id == actor_id
    assert kind_of(actor_id) == "customer" and is_customer(actor_id)


@pytest.mark.parametrize(
    "actor_id",
    [
        "sunnysocks.example",  # no '@'
        "@shop",
        "4821@",
        "4821@shop@other",  # the shop may not hold '@'
        "-4821@shop",
        ".4821@shop",
        "a b@shop",
        "caf\u00e9@shop",
        "a" * 65 + "@shop",
        "4821@ shop",
        "4821@shop\n",
        "4821@" + "s" * 252,  # over 256 in all
    ],
)
def test_other_ids_are_not_customers(actor_id: str) -> None:
    assert customer_of(actor_id) is None and not is_customer(actor_id)
    assert kind_of(actor_id) != "customer"
    with pytest.raises(ProofRefused) as refused:
        parse_customer_actor(actor_id)
    assert refused.value.code == "invalid_actor_id"


def test_near_and_domain_ids_keep_their_kinds() -> None:
    assert kind_of("alice.near") == "near" and kind_of("example.com/sales") == "domain"
    assert kind_of("alice") == "local"


@pytest.mark.parametrize(
    ("actor", "shop", "within"),
    [
        ("sunnysocks.example", "sunnysocks.example", True),
        ("sunnysocks.example/sales", "sunnysocks.example", True),
        ("sunnysocks.example/sales/eu", "sunnysocks.example", True),
        ("sunnysocks.example.evil.com", "sunnysocks.example", False),
        ("sunnysocks.examplex/sales", "sunnysocks.example", False),
        ("sunnysocks.example/Sales", "sunnysocks.example", False),  # not a domain agent id
        ("corner-shop", "corner-shop", True),
        ("corner-shop/till", "corner-shop", False),  # a local shop has no agents under it
        ("9@sunnysocks.example", "sunnysocks.example", False),
    ],
)
def test_a_shop_covers_itself_and_a_domain_shop_its_agents(actor: str, shop: str, within: bool) -> None:
    assert within_shop(actor, shop) is within
