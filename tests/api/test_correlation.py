"""Answers must answer real requests: AITP sample flows end to end through HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from aitp.ids import new_id
from aitp.store import Store
from aitp.store.base import CapabilityRef, MessageRecord, NewEvent
from tests.conftest import API, Backend

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
LEGACY_PAYMENTS = "https://aitp.dev/v1/payments/schema.json"


async def _thread(api: API) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")
    caps = [DECISIONS, DATA, PAYMENTS, LEGACY_PAYMENTS]
    body = {"actors": [{"id": "user.near", "capabilities": caps}, {"id": "shop.near", "capabilities": caps}]}
    return user, shop, (await user.post("/threads", json=body)).json()["id"]


def msg(schema: str, **payload: Any) -> dict[str, Any]:
    return {"content": json.dumps({"$schema": schema, **payload})}


PRODUCTS = {
    "id": "req-1",
    "type": "products",
    "options": [
        {"id": "red-socks", "name": "Red socks", "variants": [{"id": "red-socks-l", "name": "L"}]},
        {"id": "blue-socks", "name": "Blue socks"},
    ],
}


async def test_shopping_flow_product_decision(api: API) -> None:
    user, shop, tid = await _thread(api)
    assert (await user.post(f"/threads/{tid}/messages", json={"content": "I'd like some socks"})).status_code == 200
    offered = await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    assert offered.status_code == 200, offered.text
    choice = {"request_decision_id": "req-1", "options": [{"id": "red-socks-l", "quantity": 2}, {"id": "blue-socks"}]}
    answered = await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=choice))
    assert answered.status_code == 200, answered.text
    assert answered.json()["aitp"][0]["type"] == "decision"
    again = await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=choice))
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_answered"


async def test_decision_must_name_an_existing_request_from_another_actor(api: API) -> None:
    user, shop, tid = await _thread(api)
    missing = await user.post(
        f"/threads/{tid}/messages",
        json=msg(DECISIONS, decision={"request_decision_id": "nope", "options": [{"id": "x"}]}),
    )
    assert missing.status_code == 422
    assert (missing.json()["error"]["code"], missing.json()["error"]["param"]) == (
        "unknown_request",
        "content[0].decision.request_decision_id",
    )
    await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    own = await shop.post(
        f"/threads/{tid}/messages",
        json=msg(DECISIONS, decision={"request_decision_id": "req-1", "options": [{"id": "blue-socks"}]}),
    )
    assert own.status_code == 422 and own.json()["error"]["code"] == "unknown_request"


async def test_chosen_options_must_have_been_offered(api: API) -> None:
    user, shop, tid = await _thread(api)
    await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    bad = await user.post(
        f"/threads/{tid}/messages",
        json=msg(DECISIONS, decision={"request_decision_id": "req-1", "options": [{"id": "blue-socks"}, {"id": "x"}]}),
    )
    assert bad.status_code == 422
    assert (bad.json()["error"]["code"], bad.json()["error"]["param"]) == (
        "invalid_decision",
        "content[0].decision.options[1].id",
    )


async def test_radio_and_confirmation_take_exactly_one_option(api: API) -> None:
    user, shop, tid = await _thread(api)
    for kind in ("radio", "confirmation"):
        request = {"id": f"r-{kind}", "type": kind, "options": [{"id": "yes"}, {"id": "no"}]}
        await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=request))
        two = {"request_decision_id": f"r-{kind}", "options": [{"id": "yes"}, {"id": "no"}]}
        refused = await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=two))
        assert refused.status_code == 422 and refused.json()["error"]["param"] == "content[0].decision.options"
        one = {"request_decision_id": f"r-{kind}", "options": [{"id": "yes"}]}
        assert (await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=one))).status_code == 200


async def test_request_ids_are_unique_within_a_thread(api: API) -> None:
    _, shop, tid = await _thread(api)
    await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    again = await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    assert again.status_code == 409 and again.json()["error"]["code"] == "duplicate_request_id"


FORM = {
    "id": "form-1",
    "title": "Shipping",
    "description": "Where should we send the socks?",
    "form": {
        "fields": [
            {"id": "name", "label": "Name", "type": "text", "required": True},
            {"id": "email", "label": "Email", "type": "email", "required": True},
            {"id": "note", "label": "Note", "type": "textarea"},
        ]
    },
}


async def test_data_request_flow_checks_required_and_unknown_fields(api: API) -> None:
    user, shop, tid = await _thread(api)
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(DATA, request_data=FORM))).status_code == 200
    missing = {"request_data_id": "form-1", "fields": [{"id": "name", "value": "Ada"}, {"id": "email", "value": ""}]}
    refused = await user.post(f"/threads/{tid}/messages", json=msg(DATA, data=missing))
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_data"
    unknown = {"request_data_id": "form-1", "fields": [{"id": "name", "value": "Ada"}, {"id": "age", "value": "9"}]}
    refused = await user.post(f"/threads/{tid}/messages", json=msg(DATA, data=unknown))
    assert refused.status_code == 422 and refused.json()["error"]["param"] == "content[0].data.fields[1].id"
    good = {"request_data_id": "form-1", "fields": [{"id": "name", "value": "Ada"}, {"id": "email", "value": "a@b.c"}]}
    assert (await user.post(f"/threads/{tid}/messages", json=msg(DATA, data=good))).status_code == 200
    assert (await user.post(f"/threads/{tid}/messages", json=msg(DATA, data=good))).status_code == 409


async def test_deleting_an_answer_lets_the_request_be_answered_again(api: API) -> None:
    user, shop, tid = await _thread(api)
    await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=PRODUCTS))
    choice = {"request_decision_id": "req-1", "options": [{"id": "blue-socks"}]}
    answer = (await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=choice))).json()
    await user.delete(f"/threads/{tid}/messages/{answer['id']}")
    assert (await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=choice))).status_code == 200


async def test_a_request_in_the_threads_first_messages_can_be_answered(api: API) -> None:
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")
    caps = [DECISIONS]
    body = {
        "actors": [{"id": "shop.near", "capabilities": caps}, {"id": "user.near", "capabilities": caps}],
        "messages": [json.dumps({"$schema": DECISIONS, "request_decision": PRODUCTS})],
    }
    created = await shop.post("/threads", json=body)
    assert created.status_code == 200, created.text
    tid = created.json()["id"]
    choice = {"request_decision_id": "req-1", "options": [{"id": "blue-socks"}]}
    assert (await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=choice))).status_code == 200


# --- payments ----------------------------------------------------------------------------------

QUOTE = {
    "quote_id": "q-1",
    "merchant_id": "shop.near",
    "description": "Red socks, size L",
    "expiration": "2030-01-01T00:00:00Z",
    "payment_options": [
        {
            "amount": "12.50",
            "currency": "USD",
            "payment_methods": [{"type": "near_payment_channel", "token": "usdc.near", "recipient": "shop.near"}],
        }
    ],
    "merchant_signature": "ed25519:shop",
}


def payment(quote_id: str = "q-1", amount: str = "12.50", currency: str = "USD") -> dict[str, Any]:
    method = {"type": "near_payment_channel", "token": "usdc.near", "channel_id": "ch-1"}
    return {
        "quote_id": quote_id,
        "payment_method": {**method, "amount": amount, "currency": currency},
        "payer_id": "user.near",
        "timestamp": "2029-01-01T00:00:00Z",
        "payer_signature": "ed25519:user",
    }


CONFIRMATION = {
    "quote_id": "q-1",
    "payment_id": "pay-1",
    "result": "success",
    "timestamp": "2029-01-01T00:00:05Z",
    "message": "Your socks are on their way",
    "merchant_signature": "ed25519:shop",
}


async def test_shopping_flow_from_products_to_paid_order(api: API) -> None:
    """The AITP sample flow: products decision, quote, payment, confirmation; each step checked."""
    user, shop, tid = await _thread(api)
    steps = [
        (user, {"content": "I want socks"}),
        (shop, msg(DECISIONS, request_decision=PRODUCTS)),
        (user, msg(DECISIONS, decision={"request_decision_id": "req-1", "options": [{"id": "red-socks-l"}]})),
        (shop, msg(PAYMENTS, quote=QUOTE)),
        (user, msg(PAYMENTS, payment=payment())),
        (shop, msg(PAYMENTS, payment_confirmation=CONFIRMATION)),
    ]
    for client, body in steps:
        response = await client.post(f"/threads/{tid}/messages", json=body)
        assert response.status_code == 200, response.text

    messages = (await user.get(f"/threads/{tid}/messages", params={"order": "asc"})).json()["data"]
    kinds = [(m["metadata"]["actor"], m["aitp"][0]["type"] if m["aitp"] else None) for m in messages]
    assert kinds == [
        ("user.near", None),
        ("shop.near", "request_decision"),
        ("user.near", "decision"),
        ("shop.near", "quote"),
        ("user.near", "payment"),
        ("shop.near", "payment_confirmation"),
    ]


async def test_a_payment_must_pay_an_offered_option_of_a_quote_of_another_actor(api: API) -> None:
    user, shop, tid = await _thread(api)
    no_quote = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))
    assert no_quote.status_code == 422
    assert (no_quote.json()["error"]["code"], no_quote.json()["error"]["param"]) == (
        "unknown_request",
        "content[0].payment.quote_id",
    )

    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    own = await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))
    assert own.status_code == 422 and own.json()["error"]["code"] == "unknown_request"

    for wrong in (payment(amount="1.00"), payment(currency="EUR")):
        response = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=wrong))
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("invalid_payment", "content[0].payment.payment_method")

    same_amount = payment(amount="12.5")  # amounts compare as decimals, not strings
    assert (await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=same_amount))).status_code == 200
    twice = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "already_answered"


async def test_a_confirmation_must_follow_a_payment_made_by_another_actor(api: API) -> None:
    user, shop, tid = await _thread(api)
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    early = await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment_confirmation=CONFIRMATION))
    assert early.status_code == 422
    assert early.json()["error"]["param"] == "content[0].payment_confirmation.quote_id"

    assert (await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))).status_code == 200
    by_payer = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment_confirmation=CONFIRMATION))
    assert by_payer.status_code == 422 and by_payer.json()["error"]["code"] == "unknown_request"
    confirmed = await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment_confirmation=CONFIRMATION))
    assert confirmed.status_code == 200, confirmed.text
    again = await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment_confirmation=CONFIRMATION))
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_answered"

    reused = await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))
    assert reused.status_code == 409
    assert (reused.json()["error"]["code"], reused.json()["error"]["param"]) == (
        "duplicate_request_id",
        "content[0].quote.quote_id",
    )


async def test_hub_era_payments_correlate_by_quote_id(api: API) -> None:
    """The pre-2025 model the hub UI sent as https://aitp.dev/v1/payments/schema.json."""
    user, shop, tid = await _thread(api)
    quote = {
        "type": "Quote",
        "quote_id": "legacy-1",
        "payee_id": "shop.near",
        "payment_plans": [{"plan_id": "p1", "plan_type": "one-time", "amount": 2.5, "currency": "USD"}],
        "valid_until": "2030-01-01T00:00:00Z",
    }
    detail = {"account_id": "user.near", "amount": 2.5, "network": "NEAR", "token_type": "USDC", "transaction_id": "tx"}
    authorization = {
        "quote_id": "legacy-1",
        "result": "success",
        "timestamp": "2029-01-01T00:00:00Z",
        "details": [detail],
    }
    result = {
        "quote_id": "legacy-1",
        "result": "success",
        "timestamp": "2029-01-01T00:00:09Z",
        "message": "Shipped",
        "details": [],
    }

    early = await user.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_authorization=authorization))
    assert early.status_code == 422 and early.json()["error"]["code"] == "unknown_request"
    for client, body in (
        (shop, msg(LEGACY_PAYMENTS, quote=quote)),
        (user, msg(LEGACY_PAYMENTS, payment_authorization=authorization)),
        (shop, msg(LEGACY_PAYMENTS, payment_result=result)),
    ):
        response = await client.post(f"/threads/{tid}/messages", json=body)
        assert response.status_code == 200, response.text


LEGACY_QUOTE = {
    "type": "Quote",
    "quote_id": "legacy-1",
    "payee_id": "shop.near",
    "payment_plans": [{"plan_id": "p1", "plan_type": "one-time", "amount": 2.5, "currency": "USD"}],
    "valid_until": "2030-01-01T00:00:00Z",
}


def authorization(quote_id: str = "legacy-1", *amounts: float, result: str = "success") -> dict[str, Any]:
    """A hub-era payment_authorization: one NEAR USDC transfer per amount (2.5 when none is given)."""
    details = [
        {"account_id": "user.near", "amount": a, "network": "NEAR", "token_type": "USDC", "transaction_id": f"tx{i}"}
        for i, a in enumerate(amounts or (2.5,))
    ]
    return {"quote_id": quote_id, "result": result, "timestamp": "2029-01-01T00:00:00Z", "details": details}


async def test_a_quote_is_paid_once_whatever_capability_pays_it(api: API) -> None:
    """An AITP-01 quote paid with an AITP-01 payment cannot be paid again with a hub-era authorization (and
    the other way round): a quote has one payment slot, shared by every payments capability."""
    user, shop, tid = await _thread(api)
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    assert (await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))).status_code == 200
    for amount in (12.5, 0.01):
        again = await user.post(
            f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_authorization=authorization("q-1", amount))
        )
        assert again.status_code == 409, again.text
        error = again.json()["error"]
        assert (error["code"], error["param"]) == ("already_answered", "content[0].payment_authorization")

    assert (
        await shop.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, quote=LEGACY_QUOTE))
    ).status_code == 200
    legacy = msg(LEGACY_PAYMENTS, payment_authorization=authorization())
    assert (await user.post(f"/threads/{tid}/messages", json=legacy)).status_code == 200
    paid_again = await user.post(
        f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment("legacy-1", amount="2.5"))
    )
    assert paid_again.status_code == 409 and paid_again.json()["error"]["code"] == "already_answered"
    assert paid_again.json()["error"]["param"] == "content[0].payment"

    # one confirmation per payment too, whichever capability confirms it
    assert (
        await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment_confirmation=CONFIRMATION))
    ).status_code == 200
    result = {"quote_id": "q-1", "result": "success", "timestamp": "2029-01-01T00:00:09Z", "details": []}
    confirmed_again = await shop.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_result=result))
    assert confirmed_again.status_code == 409 and confirmed_again.json()["error"]["code"] == "already_answered"
    messages = (await user.get(f"/threads/{tid}/messages", params={"limit": 100})).json()["data"]
    paying = [m["aitp"][0]["type"] for m in messages if m["aitp"] and m["aitp"][0]["type"].startswith("payment")]
    assert sorted(paying) == ["payment", "payment_authorization", "payment_confirmation"]


async def test_a_hub_era_authorization_must_pay_an_offered_amount(api: API) -> None:
    user, shop, tid = await _thread(api)
    assert (
        await shop.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, quote=LEGACY_QUOTE))
    ).status_code == 200
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    for wrong in (
        authorization("legacy-1", 0.01),
        authorization("legacy-1", 2.5, 0.01),  # more than asked is not what was offered either
        authorization("legacy-1", 3.5, -1.0),  # no negative transfers to make up a total
        {**authorization("legacy-1"), "details": []},
        authorization("q-1", 0.01),  # an AITP-01 quote paid the hub-era way: its amount still
    ):
        response = await user.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_authorization=wrong))
        assert response.status_code == 422, (wrong, response.text)
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("invalid_payment", "content[0].payment_authorization.details")
    # AITP-01 paying a hub-era quote: its plan's amount and currency
    for wrong in (payment("legacy-1", amount="0.01"), payment("legacy-1", amount="2.5", currency="EUR")):
        response = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=wrong))
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_payment", response.text
    # transfers adding up to the plan's amount pay it (USDC pays a USD plan); decimals compare exactly
    split = msg(LEGACY_PAYMENTS, payment_authorization=authorization("legacy-1", 1.25, 1.25))
    assert (await user.post(f"/threads/{tid}/messages", json=split)).status_code == 200
    # and an AITP-01 quote may be paid the hub-era way when the amount and currency are offered
    legacy_for_new = msg(LEGACY_PAYMENTS, payment_authorization=authorization("q-1", 12.5))
    assert (await user.post(f"/threads/{tid}/messages", json=legacy_for_new)).status_code == 200


async def test_concurrent_payments_of_one_quote_in_two_capabilities_have_one_winner(api: API, backend: Backend) -> None:
    backend.require_isolated_transactions()
    user, shop, tid = await _thread(api)
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    both = await asyncio.gather(
        user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment())),
        user.post(
            f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_authorization=authorization("q-1", 12.5))
        ),
    )
    assert sorted(r.status_code for r in both) == [200, 409], [r.text for r in both]
    assert all(r.json()["error"]["code"] == "already_answered" for r in both if r.status_code == 409)


async def test_payments_recorded_before_the_shared_slot_still_count(api: API, store: Store) -> None:
    """A hub-era authorization stored under its own kind (as before payments shared one slot per quote) still
    pays its quote: no second payment in another capability; its result still finds it."""
    user, shop, tid = await _thread(api)
    assert (await shop.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, quote=QUOTE))).status_code == 200
    earlier = MessageRecord(id=new_id("msg"), thread_id=tid, created_at=1, actor="user.near", role="user", content=[])
    ref = CapabilityRef(tid, "payment_authorization", "q-1", earlier.id, "user.near", authorization("q-1", 12.5))
    assert await store.append_message(earlier, NewEvent("thread.message.created", {}, 1), [ref]) is not None

    again = await user.post(f"/threads/{tid}/messages", json=msg(PAYMENTS, payment=payment()))
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_answered"
    result = {"quote_id": "q-1", "result": "success", "timestamp": "2029-01-01T00:00:09Z", "details": []}
    confirmed = await shop.post(f"/threads/{tid}/messages", json=msg(LEGACY_PAYMENTS, payment_result=result))
    assert confirmed.status_code == 200, confirmed.text
