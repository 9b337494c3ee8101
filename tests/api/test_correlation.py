"""Answers must answer real requests: AITP sample flows end to end through HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import API

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"


async def _thread(api: API) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")
    caps = [DECISIONS, DATA]
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
        "/decision/request_decision_id",
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
    assert (bad.json()["error"]["code"], bad.json()["error"]["param"]) == ("invalid_decision", "/decision/options/1/id")


async def test_radio_and_confirmation_take_exactly_one_option(api: API) -> None:
    user, shop, tid = await _thread(api)
    for kind in ("radio", "confirmation"):
        request = {"id": f"r-{kind}", "type": kind, "options": [{"id": "yes"}, {"id": "no"}]}
        await shop.post(f"/threads/{tid}/messages", json=msg(DECISIONS, request_decision=request))
        two = {"request_decision_id": f"r-{kind}", "options": [{"id": "yes"}, {"id": "no"}]}
        refused = await user.post(f"/threads/{tid}/messages", json=msg(DECISIONS, decision=two))
        assert refused.status_code == 422 and refused.json()["error"]["param"] == "/decision/options"
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
    assert refused.status_code == 422 and refused.json()["error"]["param"] == "/data/fields/1/id"
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
