"""Capability messages are validated before they are stored; threads negotiate versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import API

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"


def example(capability: str, name: str) -> dict[str, Any]:
    return json.loads((ROOT / "capabilities" / capability / "1.0.0" / "examples" / name).read_text())


async def _shop_thread(
    api: API, user_caps: list[Any], shop_caps: list[Any]
) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")
    body = {"actors": [{"id": "user.near", "capabilities": user_caps}, {"id": "shop.near", "capabilities": shop_caps}]}
    thread = await user.post("/threads", json=body)
    assert thread.status_code == 200, thread.text
    return user, shop, thread.json()["id"]


async def test_a_valid_capability_message_is_stored_with_its_aitp_summary(api: API) -> None:
    _, shop, tid = await _shop_thread(api, [DECISIONS], [{"schema": DECISIONS}])
    request = example("aitp-02-decisions", "request_decision_products.json")  # legacy $schema URL
    response = await shop.post(f"/threads/{tid}/messages", json={"content": ["Here you go:", json.dumps(request)]})
    assert response.status_code == 200, response.text
    assert response.json()["aitp"] == [
        None,
        {
            "capability": "aitp-02-decisions",
            "version": "1.0.0",
            "type": "request_decision",
            "validated": True,
            "schema": "https://aitp.dev/v1/decisions/schema.json",
        },
    ]
    stored = (await shop.get(f"/threads/{tid}/messages/{response.json()['id']}")).json()
    assert stored["aitp"] == response.json()["aitp"]
    assert json.loads(stored["content"][1]["text"]["value"]) == request


async def test_an_invalid_message_is_refused_with_the_path_of_the_first_error(api: API) -> None:
    """`param` is the part, then the path into its payload: the one style every error uses."""
    _, shop, tid = await _shop_thread(api, [DECISIONS], [DECISIONS])
    options = [{"id": "yes"}, {"name": "no id"}]
    bad = {"$schema": DECISIONS, "request_decision": {"id": "r1", "type": "radio", "options": options}}
    response = await shop.post(f"/threads/{tid}/messages", json={"content": ["Choose:", json.dumps(bad)]})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_capability_message", "content[1].request_decision.options[1]")
    assert "content[1].request_decision.options[1]: " in error["message"]
    assert (await shop.get(f"/threads/{tid}/messages")).json()["data"] == []


async def test_an_object_whose_schema_is_not_a_string_is_an_invalid_capability_message(api: API) -> None:
    """Any JSON object with a `$schema` key is a capability message: a `$schema` naming no URL is refused,
    not stored as plain text."""
    _, shop, tid = await _shop_thread(api, [DECISIONS], [DECISIONS])
    for value in (5, None, {"url": DECISIONS}):
        part = json.dumps({"$schema": value, "request_decision": {"id": "r1", "options": [{"id": "a"}]}})
        response = await shop.post(f"/threads/{tid}/messages", json={"content": ["hello", part]})
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("invalid_capability_message", "content[1].$schema")
        assert error["message"].startswith(
            f"content[1].$schema must be a schema URL (a string), got {json.dumps(value, separators=(',', ':'))}"
        )
    assert (await shop.get(f"/threads/{tid}/messages")).json()["data"] == []


async def test_errors_in_a_threads_first_messages_name_the_message_too(api: API) -> None:
    shop = await api.actor("shop.near")
    await api.known("user.near")
    actors = [{"id": "shop.near", "capabilities": [DECISIONS]}, {"id": "user.near", "capabilities": [DECISIONS]}]
    ask = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"id": "yes"}]}}
    bad = {"$schema": DECISIONS, "request_decision": {"id": "r2", "options": [{"id": "yes"}, {"name": "no id"}]}}
    answer = {"$schema": DECISIONS, "decision": {"request_decision_id": "r9", "options": [{"id": "yes"}]}}
    cases = [
        (["hi", json.dumps(bad)], "messages[1].content[0].request_decision.options[1]"),
        ([{"content": ["Well?", json.dumps({"$schema": 5})]}], "messages[0].content[1].$schema"),
        ([json.dumps(ask), json.dumps(ask)], "messages[1].content[0].request_decision.id"),  # from the store
        ([json.dumps(answer)], "messages[0].content[0].decision.request_decision_id"),
    ]
    for messages, param in cases:
        refused = await shop.post("/threads", json={"actors": actors, "messages": messages})
        assert refused.status_code in (409, 422), refused.text
        assert refused.json()["error"]["param"] == param


async def test_unknown_capability_is_refused(api: API) -> None:
    _, shop, tid = await _shop_thread(api, [], [])
    unknown = {"$schema": "https://example.com/nope/v1.0.0/schema.json", "x": {}}
    response = await shop.post(f"/threads/{tid}/messages", json={"content": json.dumps(unknown)})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "unknown_capability"
    assert response.json()["error"]["param"] == "content[0].$schema"


async def test_recipients_must_support_the_capability(api: API) -> None:
    _, shop, tid = await _shop_thread(api, [DATA], [DECISIONS])
    request = example("aitp-02-decisions", "request_decision.json")
    response = await shop.post(f"/threads/{tid}/messages", json={"content": json.dumps(request)})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "capability_not_supported"
    assert "user.near" in response.json()["error"]["message"]


async def test_the_sender_must_have_declared_the_capability(api: API) -> None:
    _, shop, tid = await _shop_thread(api, [DECISIONS], [])
    request = example("aitp-02-decisions", "request_decision.json")
    response = await shop.post(f"/threads/{tid}/messages", json={"content": json.dumps(request)})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "capability_not_supported"
    assert "sender 'shop.near'" in response.json()["error"]["message"]


async def test_json_without_schema_and_plain_text_stay_plain(api: API) -> None:
    _, shop, tid = await _shop_thread(api, [], [])
    response = await shop.post(f"/threads/{tid}/messages", json={"content": ['{"request_decision": {}}', "hi {"]})
    assert response.status_code == 200
    assert response.json()["aitp"] is None


async def test_negotiation_picks_the_version_every_actor_reads(api: API) -> None:
    user, shop, tid = await _shop_thread(
        api, [{"capability": "aitp-02-decisions", "versions": ">=1.0.0,<3"}, PAYMENTS], [DECISIONS, "https://x/y.json"]
    )
    table = (await user.get(f"/threads/{tid}/capabilities")).json()
    by_id = {row["id"]: row for row in table["data"]}
    assert by_id["aitp-02-decisions"]["version"] == "1.0.0"
    assert by_id["aitp-02-decisions"]["supported_by"] == ["user.near", "shop.near"]
    assert by_id["aitp-02-decisions"]["declared"] == {"user.near": [">=1.0.0,<3"], "shop.near": [DECISIONS]}
    assert by_id["aitp-01-payments"]["version"] is None
    assert by_id["aitp-01-payments"]["unsupported_by"] == ["shop.near"]
    assert table["unknown"] == [{"actor": "shop.near", "declaration": {"schema": "https://x/y.json"}}]
    # A newcomer without decisions makes it unreadable for someone: the table and the log say so.
    await api.known("pay.near")
    await user.post(f"/threads/{tid}/actors", json={"id": "pay.near", "capabilities": [PAYMENTS]})
    after = {row["id"]: row for row in (await user.get(f"/threads/{tid}/capabilities")).json()["data"]}
    assert after["aitp-02-decisions"]["version"] is None
    assert after["aitp-02-decisions"]["unsupported_by"] == ["pay.near"]
    events = (await user.get(f"/threads/{tid}/events")).json()["data"]
    assert events[-1]["type"] == "thread.capabilities.updated"
    assert events[-1]["data"]["data"] == list(after.values())


async def test_unknown_capabilities_may_be_accepted_unvalidated(api: API) -> None:
    api.settings_override(unknown_capabilities="accept")
    _, shop, tid = await _shop_thread(api, [], [])
    unknown = {"$schema": "https://example.com/nope/v1.0.0/schema.json", "thing": {}}
    response = await shop.post(f"/threads/{tid}/messages", json={"content": json.dumps(unknown)})
    assert response.status_code == 200, response.text
    assert response.json()["aitp"] == [
        {"capability": None, "version": None, "type": "thing", "validated": False, "schema": unknown["$schema"]}
    ]


async def test_capability_registry_routes(api: API) -> None:
    listed = (await api.admin.get("/capabilities")).json()
    ids = [c["id"] for c in listed["data"]]
    assert ids == sorted(ids) and {"aitp-01-payments", "aitp-02-decisions", "aitp-legacy-payments"} <= set(ids)
    decisions = (await api.admin.get("/capabilities/aitp-02-decisions")).json()
    assert decisions["versions"] == ["1.0.0"] and decisions["latest"] == "1.0.0"
    assert decisions["schema_urls"]["1.0.0"] == DECISIONS
    public = api.client(None)
    schema = await public.get("/capabilities/aitp-02-decisions/1.0.0/schema.json")
    assert schema.status_code == 200
    assert schema.json() == json.loads((ROOT / "capabilities/aitp-02-decisions/1.0.0/schema.json").read_text())
    assert (await public.get("/capabilities/aitp-02-decisions/9.9.9/schema.json")).status_code == 404
    assert (await api.admin.get("/capabilities/nope")).json()["error"]["code"] == "capability_not_found"
