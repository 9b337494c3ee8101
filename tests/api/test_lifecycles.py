"""Request lifecycles, transition by transition, through HTTP on both backends.

A quote (AITP-01 or hub-era, paid and confirmed in either capability) is open, authorized (a payment
awaits its confirmation), pending, paid or failed; a failure lets it be paid again, a pending payment
gets its final confirmation later, and nothing moves a paid quote. Decisions and data requests are
answered once. docs/capabilities.md ("Request lifecycles") tables the same transitions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from aitp.ids import new_id
from aitp.store import Store
from aitp.store.base import CapabilityRef, MessageRecord, NewEvent
from tests.api.test_correlation import LEGACY_QUOTE
from tests.conftest import API, Backend

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
LEGACY_PAYMENTS = "https://aitp.dev/v1/payments/schema.json"

QUOTE = {
    "quote_id": "q-1",
    "merchant_id": "shop.near",
    "description": "Red socks, size L",
    "payment_options": [
        {
            "amount": "12.50",
            "currency": "USD",
            "payment_methods": [{"type": "near_payment_channel", "token": "usdc.near", "recipient": "shop.near"}],
        }
    ],
    "merchant_signature": "ed25519:shop",
}


def content(schema: str, **payload: Any) -> dict[str, Any]:
    return {"content": json.dumps({"$schema": schema, **payload})}


def pay(amount: str = "12.50") -> dict[str, Any]:
    """An AITP-01 payment of q-1."""
    method = {"type": "near_payment_channel", "token": "usdc.near", "channel_id": "ch-1", "amount": amount}
    payment = {
        "quote_id": "q-1",
        "payment_method": {**method, "currency": "USD"},
        "payer_id": "user.near",
        "timestamp": "2029-01-01T00:00:00Z",
        "payer_signature": "ed25519:user",
    }
    return content(PAYMENTS, payment=payment)


def authorize(result: str = "success", amount: float = 12.5) -> dict[str, Any]:
    """A hub-era payment_authorization of q-1 (USDC pays the quote's USD)."""
    detail = {
        "account_id": "user.near",
        "amount": amount,
        "network": "NEAR",
        "token_type": "USDC",
        "transaction_id": "t",
    }
    authorization = {"quote_id": "q-1", "result": result, "timestamp": "2029-01-01T00:00:00Z", "details": [detail]}
    return content(LEGACY_PAYMENTS, payment_authorization=authorization)


def confirm(result: str) -> dict[str, Any]:
    """An AITP-01 payment_confirmation of q-1."""
    confirmation = {
        "quote_id": "q-1",
        "payment_id": "pay-1",
        "result": result,
        "timestamp": "2029-01-01T00:00:05Z",
        "merchant_signature": "ed25519:shop",
    }
    return content(PAYMENTS, payment_confirmation=confirmation)


def result_of(result: str) -> dict[str, Any]:
    """A hub-era payment_result of q-1."""
    outcome = {"quote_id": "q-1", "result": result, "timestamp": "2029-01-01T00:00:09Z", "details": []}
    return content(LEGACY_PAYMENTS, payment_result=outcome)


@dataclass
class Shop:
    """A thread where shop.near quoted q-1 to user.near."""

    user: httpx.AsyncClient
    shop: httpx.AsyncClient
    thread: str

    async def post(self, who: str, body: dict[str, Any]) -> httpx.Response:
        client = self.user if who == "user" else self.shop
        return await client.post(f"/threads/{self.thread}/messages", json=body)

    async def accepted(self, who: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.post(who, body)
        assert response.status_code == 200, response.text
        return response.json()

    async def refused(self, who: str, body: dict[str, Any], status: int, code: str, param: str) -> str:
        response = await self.post(who, body)
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert (error["code"], error["param"]) == (code, param), error
        return error["message"]

    async def assert_state(self, state: str) -> None:
        """Tell the quote's state by what it refuses (a refusal writes nothing)."""
        if state == "open":
            await self.refused(
                "shop", confirm("success"), 422, "unknown_request", "content[0].payment_confirmation.quote_id"
            )
        elif state == "failed":
            said = await self.refused(
                "shop", confirm("success"), 409, "already_answered", "content[0].payment_confirmation"
            )
            assert "failed" in said and "paid again" in said, said
        elif state == "authorized":
            said = await self.refused("user", pay(), 409, "already_answered", "content[0].payment")
            assert "awaiting its confirmation" in said, said
        elif state == "pending":
            said = await self.refused("user", pay(), 409, "already_answered", "content[0].payment")
            assert "is pending" in said, said
        else:
            assert state == "paid"
            said = await self.refused("user", pay(), 409, "already_answered", "content[0].payment")
            assert "is paid" in said and "paid once" in said, said
            said = await self.refused(
                "shop", confirm("failure"), 409, "already_answered", "content[0].payment_confirmation"
            )
            assert "already confirmed" in said, said


async def quoted(api: API, quote: dict[str, Any] = QUOTE, schema: str = PAYMENTS) -> Shop:
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")
    caps = [DECISIONS, DATA, PAYMENTS, LEGACY_PAYMENTS]
    body = {"actors": [{"id": "user.near", "capabilities": caps}, {"id": "shop.near", "capabilities": caps}]}
    thread = (await user.post("/threads", json=body)).json()["id"]
    flow = Shop(user, shop, thread)
    await flow.accepted("shop", content(schema, quote=quote))
    return flow


# The messages that move a quote: (who sends it, body).
MOVES: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "payment": ("user", pay),
    "authorization success": ("user", lambda: authorize("success")),
    "authorization failure": ("user", lambda: authorize("failure")),
    "confirmation success": ("shop", lambda: confirm("success")),
    "confirmation failure": ("shop", lambda: confirm("failure")),
    "confirmation pending": ("shop", lambda: confirm("pending")),
    "result success": ("shop", lambda: result_of("success")),
    "result failure": ("shop", lambda: result_of("failure")),
}
# How to reach each state from a fresh quote.
REACH = {
    "open": [],
    "authorized": ["payment"],
    "pending": ["payment", "confirmation pending"],
    "paid": ["payment", "confirmation success"],
    "failed": ["payment", "confirmation failure"],
    "failed (authorization)": ["authorization failure"],
}
PAYMENT_REFUSED = (409, "already_answered")
UNPAID = (422, "unknown_request")  # a confirmation with no payment to confirm
# (state, move) -> the next state, or the refusal (status, code). Every pair of REACH x MOVES is here.
TRANSITIONS: dict[tuple[str, str], str | tuple[int, str]] = {
    ("open", "payment"): "authorized",
    ("open", "authorization success"): "authorized",
    ("open", "authorization failure"): "failed",
    ("open", "confirmation success"): UNPAID,
    ("open", "confirmation failure"): UNPAID,
    ("open", "confirmation pending"): UNPAID,
    ("open", "result success"): UNPAID,
    ("open", "result failure"): UNPAID,
    ("authorized", "payment"): PAYMENT_REFUSED,
    ("authorized", "authorization success"): PAYMENT_REFUSED,
    ("authorized", "authorization failure"): PAYMENT_REFUSED,
    ("authorized", "confirmation success"): "paid",
    ("authorized", "confirmation failure"): "failed",
    ("authorized", "confirmation pending"): "pending",
    ("authorized", "result success"): "paid",
    ("authorized", "result failure"): "failed",
    ("pending", "payment"): PAYMENT_REFUSED,
    ("pending", "authorization success"): PAYMENT_REFUSED,
    ("pending", "authorization failure"): PAYMENT_REFUSED,
    ("pending", "confirmation success"): "paid",
    ("pending", "confirmation failure"): "failed",
    ("pending", "confirmation pending"): "pending",
    ("pending", "result success"): "paid",
    ("pending", "result failure"): "failed",
    ("paid", "payment"): PAYMENT_REFUSED,
    ("paid", "authorization success"): PAYMENT_REFUSED,
    ("paid", "authorization failure"): PAYMENT_REFUSED,
    ("paid", "confirmation success"): PAYMENT_REFUSED,
    ("paid", "confirmation failure"): PAYMENT_REFUSED,
    ("paid", "confirmation pending"): PAYMENT_REFUSED,
    ("paid", "result success"): PAYMENT_REFUSED,
    ("paid", "result failure"): PAYMENT_REFUSED,
    ("failed", "payment"): "authorized",
    ("failed", "authorization success"): "authorized",
    ("failed", "authorization failure"): "failed",
    ("failed", "confirmation success"): PAYMENT_REFUSED,
    ("failed", "confirmation failure"): PAYMENT_REFUSED,
    ("failed", "confirmation pending"): PAYMENT_REFUSED,
    ("failed", "result success"): PAYMENT_REFUSED,
    ("failed", "result failure"): PAYMENT_REFUSED,
    ("failed (authorization)", "payment"): "authorized",
    ("failed (authorization)", "authorization success"): "authorized",
    ("failed (authorization)", "authorization failure"): "failed",
    ("failed (authorization)", "confirmation success"): PAYMENT_REFUSED,
    ("failed (authorization)", "confirmation failure"): PAYMENT_REFUSED,
    ("failed (authorization)", "confirmation pending"): PAYMENT_REFUSED,
    ("failed (authorization)", "result success"): PAYMENT_REFUSED,
    ("failed (authorization)", "result failure"): PAYMENT_REFUSED,
}


def test_the_transition_table_covers_every_state_and_message() -> None:
    assert set(TRANSITIONS) == {(state, move) for state in REACH for move in MOVES}


@pytest.mark.parametrize(("state", "move"), list(TRANSITIONS), ids=[f"{s} + {m}" for s, m in TRANSITIONS])
async def test_quote_transition(api: API, state: str, move: str) -> None:
    flow = await quoted(api)
    for step in REACH[state]:
        who, body = MOVES[step]
        await flow.accepted(who, body())
    who, body = MOVES[move]
    expected = TRANSITIONS[(state, move)]
    if isinstance(expected, str):
        await flow.accepted(who, body())
        await flow.assert_state(expected)
        return
    status, code = expected
    message_type = next(key for key in json.loads(body()["content"]) if key != "$schema")
    param = f"content[0].{message_type}" + (".quote_id" if status == 422 else "")
    await flow.refused(who, body(), status, code, param)
    await flow.assert_state(state.split(" ")[0])  # a refusal moves nothing


async def test_a_quote_fails_is_paid_again_and_then_is_paid_once(api: API) -> None:
    """The issue's three cases in one flow: a failed authorization, then a pending confirmation, then a
    failed confirmation, each followed by what the spec allows; a success ends it."""
    flow = await quoted(api)
    await flow.accepted("user", authorize("failure"))
    await flow.accepted("user", authorize("success"))  # was 409 already_answered
    await flow.accepted("shop", confirm("pending"))
    await flow.accepted("shop", confirm("failure"))  # was 409: the pending confirmation took the slot
    await flow.accepted("user", pay())  # was 409: a failed payment freed nothing
    await flow.accepted("shop", result_of("success"))
    await flow.assert_state("paid")
    await flow.refused("user", authorize("success"), 409, "already_answered", "content[0].payment_authorization")
    messages = (await flow.user.get(f"/threads/{flow.thread}/messages", params={"order": "asc"})).json()["data"]
    assert [m["aitp"][0]["type"] for m in messages] == [
        "quote",
        "payment_authorization",
        "payment_authorization",
        "payment_confirmation",
        "payment_confirmation",
        "payment",
        "payment_result",
    ]


async def test_a_retry_pays_an_offer_of_the_quote_and_is_paid_by_another_actor(api: API) -> None:
    flow = await quoted(api)
    await flow.accepted("user", pay())
    await flow.accepted("shop", confirm("failure"))
    await flow.refused("user", pay(amount="1.00"), 422, "invalid_payment", "content[0].payment.payment_method")
    await flow.refused("shop", pay(), 422, "unknown_request", "content[0].payment.quote_id")
    await flow.assert_state("failed")
    await flow.accepted("user", pay())
    await flow.refused("user", confirm("success"), 422, "unknown_request", "content[0].payment_confirmation.quote_id")
    await flow.assert_state("authorized")


async def test_a_failed_authorization_pays_nothing_so_its_transfers_are_not_checked(api: API) -> None:
    flow = await quoted(api)
    await flow.refused(
        "user", authorize("success", 0.01), 422, "invalid_payment", "content[0].payment_authorization.details"
    )
    await flow.accepted("user", authorize("failure", 0.01))
    await flow.assert_state("failed")


async def test_a_hub_era_quote_has_the_same_lifecycle(api: API) -> None:
    plan = {**LEGACY_QUOTE["payment_plans"][0], "amount": 12.5}
    legacy = {**LEGACY_QUOTE, "quote_id": "q-1", "payment_plans": [plan]}
    flow = await quoted(api, legacy, LEGACY_PAYMENTS)
    await flow.accepted("user", authorize("success"))
    await flow.accepted("shop", result_of("failure"))
    await flow.accepted("user", pay(amount="12.5"))
    await flow.accepted("shop", confirm("success"))
    await flow.assert_state("paid")


async def test_deleting_the_payment_of_a_paid_quote_does_not_make_it_payable_again(api: API) -> None:
    flow = await quoted(api)
    payment = await flow.accepted("user", pay())
    await flow.accepted("shop", confirm("success"))
    assert (await flow.user.delete(f"/threads/{flow.thread}/messages/{payment['id']}")).status_code == 200
    said = await flow.refused("user", pay(), 409, "already_answered", "content[0].payment")
    assert "is paid" in said


async def test_deleting_a_pending_confirmation_lets_the_payment_be_confirmed_again(api: API) -> None:
    flow = await quoted(api)
    await flow.accepted("user", pay())
    pending = await flow.accepted("shop", confirm("pending"))
    assert (await flow.shop.delete(f"/threads/{flow.thread}/messages/{pending['id']}")).status_code == 200
    await flow.assert_state("authorized")
    await flow.accepted("shop", confirm("success"))
    await flow.assert_state("paid")


# --- stores written before lifecycles -------------------------------------------------------------


async def _stored_the_old_way(store: Store, flow: Shop, kind: str, actor: str, body: dict[str, Any]) -> None:
    """A ref as earlier versions stored it: under the message type for hub-era answers (before d162d74),
    one per (quote, slot) and never replaced."""
    message = MessageRecord(id=new_id("msg"), thread_id=flow.thread, created_at=1, actor=actor, role="user", content=[])
    ref = CapabilityRef(flow.thread, kind, "q-1", message.id, actor, body)
    assert await store.append_message(message, NewEvent("thread.message.created", {}, 1), [ref]) is not None


def _payload(body: dict[str, Any]) -> dict[str, Any]:
    message = json.loads(body["content"])
    return next(value for key, value in message.items() if key != "$schema")


async def test_a_pending_confirmation_stored_before_lifecycles_gets_its_final_one(api: API, store: Store) -> None:
    flow = await quoted(api)
    await _stored_the_old_way(store, flow, "payment", "user.near", _payload(pay()))
    await _stored_the_old_way(store, flow, "payment_confirmation", "shop.near", _payload(confirm("pending")))
    await flow.assert_state("pending")
    await flow.accepted("shop", confirm("success"))  # refused 409 by the version that stored them
    await flow.assert_state("paid")


async def test_a_failure_stored_under_the_former_hub_era_kinds_frees_the_quote(api: API, store: Store) -> None:
    flow = await quoted(api)
    await _stored_the_old_way(store, flow, "payment_authorization", "user.near", _payload(authorize("success")))
    await _stored_the_old_way(store, flow, "payment_result", "shop.near", _payload(result_of("failure")))
    await flow.assert_state("failed")
    await flow.accepted("user", pay())  # releases both former-kind refs
    assert await store.get_ref(flow.thread, "payment_authorization", "q-1") is None
    assert await store.get_ref(flow.thread, "payment_result", "q-1") is None
    await flow.assert_state("authorized")
    await flow.accepted("shop", result_of("success"))
    await flow.assert_state("paid")


async def test_a_success_stored_before_lifecycles_still_ends_the_quote(api: API, store: Store) -> None:
    flow = await quoted(api)
    await _stored_the_old_way(store, flow, "payment_authorization", "user.near", _payload(authorize("success")))
    await _stored_the_old_way(store, flow, "payment_result", "shop.near", _payload(result_of("success")))
    await flow.assert_state("paid")


# --- concurrent transitions: one winner -----------------------------------------------------------


async def _race(flow: Shop, *moves: tuple[str, dict[str, Any]]) -> list[httpx.Response]:
    posts: list[Awaitable[httpx.Response]] = [flow.post(who, body) for who, body in moves]
    return list(await asyncio.gather(*posts))


def _one_winner(responses: list[httpx.Response]) -> None:
    assert sorted(r.status_code for r in responses) == [200] + [409] * (len(responses) - 1), [r.text for r in responses]
    assert all(r.json()["error"]["code"] == "already_answered" for r in responses if r.status_code == 409)


@pytest.mark.parametrize(
    ("state", "racers"),
    [
        ("failed", ["payment", "authorization success"]),  # two retries in two capabilities
        ("pending", ["confirmation success", "result failure"]),  # two final confirmations
        ("authorized", ["confirmation success", "confirmation failure", "result success"]),
    ],
    ids=["retries after a failure", "finals after pending", "first confirmations"],
)
async def test_concurrent_transitions_from_one_state_have_one_winner(
    api: API, backend: Backend, state: str, racers: list[str]
) -> None:
    backend.require_isolated_transactions()
    flow = await quoted(api)
    for step in REACH[state]:
        who, body = MOVES[step]
        await flow.accepted(who, body())
    _one_winner(await _race(flow, *((MOVES[m][0], MOVES[m][1]()) for m in racers)))
    messages = (await flow.user.get(f"/threads/{flow.thread}/messages")).json()["data"]
    assert len(messages) == 1 + len(REACH[state]) + 1


# --- decisions and data requests: answered once -----------------------------------------------------

REQUEST_DECISION = {"id": "req-1", "type": "radio", "options": [{"id": "yes"}, {"id": "no"}]}
FORM = {
    "id": "form-1",
    "description": "Who are you?",
    "form": {"fields": [{"id": "name", "label": "Name", "required": True}]},
}


async def test_a_request_decision_is_answered_once(api: API) -> None:
    flow = await quoted(api)
    await flow.accepted("shop", content(DECISIONS, request_decision=REQUEST_DECISION))
    answer = content(DECISIONS, decision={"request_decision_id": "req-1", "options": [{"id": "no"}]})
    await flow.refused("shop", answer, 422, "unknown_request", "content[0].decision.request_decision_id")
    await flow.accepted("user", answer)
    changed = content(DECISIONS, decision={"request_decision_id": "req-1", "options": [{"id": "yes"}]})
    said = await flow.refused("user", changed, 409, "already_answered", "content[0].decision")
    assert "'req-1' already has a decision" in said


async def test_a_request_data_is_answered_once(api: API) -> None:
    flow = await quoted(api)
    await flow.accepted("shop", content(DATA, request_data=FORM))
    answer = content(DATA, data={"request_data_id": "form-1", "fields": [{"id": "name", "value": "Ada"}]})
    await flow.accepted("user", answer)
    await flow.refused("user", answer, 409, "already_answered", "content[0].data")


async def test_an_answer_without_its_request_id_says_the_field_is_missing(api: API) -> None:
    flow = await quoted(api)
    await flow.accepted("shop", content(DECISIONS, request_decision=REQUEST_DECISION))
    no_id = content(DECISIONS, decision={"options": [{"id": "yes"}]})  # the schema allows leaving it out
    said = await flow.refused("user", no_id, 422, "unknown_request", "content[0].decision.request_decision_id")
    assert said.startswith(
        "content[0].decision.request_decision_id is missing: a decision must name the request_decision"
    )
    assert "None" not in said
    no_quote = content(PAYMENTS, payment={k: v for k, v in _payload(pay()).items() if k != "quote_id"})
    refused = await flow.post("user", no_quote)  # AITP-01 requires quote_id: the schema refuses first
    assert (refused.status_code, refused.json()["error"]["param"]) == (422, "content[0].payment")
