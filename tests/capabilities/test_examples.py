"""Every shipped example validates; jsonschema-rs and jsonschema agree on examples and on invalid messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
import referencing.exceptions
from packaging.version import Version
from referencing.jsonschema import DRAFT202012

from aitp.capabilities.registry import (
    CapabilityRef,
    CapabilityVersion,
    Registry,
    default_directory,
    json_pointer,
    message_branches,
)

DIRECTORY = default_directory()
EXAMPLES = sorted(DIRECTORY.glob("*/*/examples/*.json"))
V1 = Version("1.0.0")

DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
NEAR = "https://aitp.dev/capabilities/aitp-04-near-wallet/v1.0.0/schema.json"
EVM = "https://aitp.dev/capabilities/aitp-05-evm-wallet/v1.0.0/schema.json"
LEGACY = "https://aitp.dev/v1/payments.schema.json"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.from_directory(DIRECTORY)


def example_id(path: Path) -> str:
    parts = path.relative_to(DIRECTORY).parts
    return f"{parts[0]}/{parts[-1]}"


# --------------------------------------------------------------------------------- shipped examples


def test_examples_are_shipped() -> None:
    assert len(EXAMPLES) >= 34
    assert {p.relative_to(DIRECTORY).parts[0] for p in EXAMPLES} == {
        "aitp-01-payments",
        "aitp-02-decisions",
        "aitp-03-data-request",
        "aitp-04-near-wallet",
        "aitp-05-evm-wallet",
        "aitp-legacy-payments",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=example_id)
def test_example_validates_against_the_capability_its_schema_names(registry: Registry, path: Path) -> None:
    capability_id, version = path.relative_to(DIRECTORY).parts[:2]
    example = json.loads(path.read_text())
    ref = registry.resolve(example["$schema"])
    assert ref == CapabilityRef(capability_id, Version(version)), f"{example['$schema']} resolves to {ref}"
    capability = registry.get(ref)
    assert capability is not None
    assert capability.examples[path.name] == example
    assert registry.validate(ref, example) == []
    assert [key for key in example if key != "$schema"][0] in capability.message_types


def test_every_message_type_has_an_example(registry: Registry) -> None:
    for info in registry.capabilities():
        for version in info.versions:
            capability = registry.get(CapabilityRef(info.id, version))
            assert capability is not None
            shown = {key for example in capability.examples.values() for key in example if key != "$schema"}
            assert shown == set(capability.message_types), info.id


@pytest.mark.parametrize(
    ("capability_id", "message_types"),
    [
        ("aitp-02-decisions", ["decision", "request_decision"]),
        ("aitp-03-data-request", ["data", "request_data"]),
        (
            "aitp-01-payments",
            ["quote", "wrapped_quote", "payment", "payment_confirmation", "top_up_request", "top_up_response"],
        ),
        ("aitp-legacy-payments", ["payment_authorization", "payment_result", "quote"]),
        (
            "aitp-04-near-wallet",
            [
                "request_account",
                "account_response",
                "request_transaction",
                "transaction_response",
                "request_message_signing",
                "message_signing_response",
                "token_notification",
            ],
        ),
        (
            "aitp-05-evm-wallet",
            [
                "request_address",
                "address_response",
                "request_transaction",
                "transaction_response",
                "request_message_signing",
                "message_signing_response",
                "chain_notification",
                "token_notification",
            ],
        ),
    ],
)
def test_message_types(registry: Registry, capability_id: str, message_types: list[str]) -> None:
    capability = registry.get(CapabilityRef(capability_id, V1))
    assert capability is not None and capability.message_types == message_types


def test_docs_v010_payment_examples_validate_through_the_alias(registry: Registry) -> None:
    """The AITP-01 page's own quote, with its v0.1.0 URL (comment removed)."""
    quote = {
        "$schema": "https://aitp.dev/capabilities/aitp-01-payments/v0.1.0/schema.json",
        "quote": {
            "quote_id": "q_123456789",
            "merchant_id": "store.near",
            "description": "Premium Subscription - Annual Plan",
            "expiration": "2025-03-01T12:00:00Z",
            "next_recipient": "service-agent.near",
            "payment_options": [
                {
                    "amount": "99.99",
                    "currency": "USD",
                    "payment_methods": [
                        {"type": "near_payment_channel", "token": "usdc.near", "recipient": "store.near"}
                    ],
                }
            ],
            "revenue_share": {
                "affiliate_share_bps": 300,
                "affiliates": [
                    {"id": "assistant.near", "role": "personal_assistant", "weight": 2},
                    {"id": "discovery.near", "role": "discovery", "weight": 1},
                ],
            },
            "merchant_signature": "ed25519:...",
        },
    }
    ref = registry.resolve(quote["$schema"])
    assert ref == CapabilityRef("aitp-01-payments", V1)
    assert registry.validate(ref, quote) == []


# ------------------------------------------------------------------------------ the invalid corpus

PRODUCT_QUOTE = {
    "type": "Quote",
    "quote_id": "q1",
    "payee_id": "shop.near",
    "payment_plans": [{"plan_id": "p1", "plan_type": "one-time", "amount": 10.5, "currency": "USD"}],
    "valid_until": "2050-01-01T00:00:00Z",
}
PAYMENT_METHOD = {"type": "near_payment_channel", "token": "usdc.near", "channel_id": "ch_1", "currency": "USD"}
PAYMENT = {
    "quote_id": "q1",
    "payment_method": PAYMENT_METHOD,
    "payer_id": "user.near",
    "timestamp": "2025-02-25T08:32:15Z",
    "payer_signature": "ed25519:...",
}
PAYMENT_OPTION = {
    "amount": "99.99",
    "currency": "USD",
    "payment_methods": [{"type": "near_payment_channel", "token": "usdc.near", "recipient": "store.near"}],
}
PAYMENTS_QUOTE = {
    "quote_id": "q1",
    "merchant_id": "store.near",
    "description": "Socks",
    "payment_options": [PAYMENT_OPTION],
    "merchant_signature": "ed25519:...",
}


def rd(**fields: Any) -> dict[str, Any]:
    return {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"id": "a"}], **fields}}


# (name, schema URL, message, a pointer the issues must include)
INVALID: list[tuple[str, str, Any, str]] = [
    (
        "decisions: option id not a string",
        DECISIONS,
        rd(options=[{"id": 1, "name": "One"}]),
        "/request_decision/options/0/id",
    ),
    (
        "decisions: request id missing",
        DECISIONS,
        {"$schema": DECISIONS, "request_decision": {"options": [{"id": "a"}]}},
        "/request_decision",
    ),
    ("decisions: unknown decision type", DECISIONS, rd(type="product"), "/request_decision/type"),
    ("decisions: no options", DECISIONS, rd(options=[]), "/request_decision/options"),
    (
        "decisions: rating above 5",
        DECISIONS,
        rd(options=[{"id": "a", "five_star_rating": 7}]),
        "/request_decision/options/0/five_star_rating",
    ),
    (
        "decisions: reviews_count not an integer",
        DECISIONS,
        rd(options=[{"id": "a", "reviews_count": 1.5}]),
        "/request_decision/options/0/reviews_count",
    ),
    (
        "decisions: quote currency not USD",
        DECISIONS,
        rd(
            options=[
                {
                    "id": "a",
                    "quote": {
                        **PRODUCT_QUOTE,
                        "payment_plans": [{**PRODUCT_QUOTE["payment_plans"][0], "currency": "EUR"}],
                    },
                }
            ]
        ),
        "/request_decision/options/0/quote/payment_plans/0/currency",
    ),
    (
        "decisions: variant quote missing valid_until",
        DECISIONS,
        rd(
            options=[
                {
                    "id": "a",
                    "variants": [{"id": "v", "quote": {k: v for k, v in PRODUCT_QUOTE.items() if k != "valid_until"}}],
                }
            ]
        ),
        "/request_decision/options/0/variants/0/quote",
    ),
    (
        "decisions: extra key on a selected option (closed)",
        DECISIONS,
        {"$schema": DECISIONS, "decision": {"options": [{"id": "a", "price": 3}]}},
        "/decision/options/0",
    ),
    ("decisions: $schema missing", DECISIONS, {"request_decision": {"id": "r", "options": [{"id": "a"}]}}, ""),
    (
        "decisions: hub-era request_decision from examples.md",
        "https://aitp.dev/v1/requests.schema.json",
        {
            "$schema": "https://aitp.dev/v1/requests.schema.json",
            "request_decision": {
                "type": "product",
                "options": [
                    {
                        "id": 1,
                        "image_url": "https://...",
                        "name": "Red Socks",
                        "price": {"usd": 10.5},
                        "url": "https://amazon.com/...",
                    },
                    {
                        "id": 2,
                        "image_url": "https://...",
                        "name": "Blue Socks",
                        "price": {"usd": 9},
                        "url": "https://amazon.com/...",
                    },
                ],
            },
        },
        "/request_decision/options/1/id",
    ),
    ("decisions: no message type", DECISIONS, {"$schema": DECISIONS, "hello": "world"}, ""),
    ("decisions: not an object", DECISIONS, ["request_decision"], ""),
    ("data: fields missing", DATA, {"$schema": DATA, "data": {"request_data_id": "r"}}, "/data"),
    (
        "data: field value not a string",
        DATA,
        {"$schema": DATA, "data": {"fields": [{"id": "n", "value": 7}]}},
        "/data/fields/0/value",
    ),
    (
        "data: unknown field type",
        DATA,
        {
            "$schema": DATA,
            "request_data": {"id": "f", "description": "d", "form": {"fields": [{"id": "d", "type": "date"}]}},
        },
        "/request_data/form/fields/0/type",
    ),
    (
        "data: required not a boolean",
        DATA,
        {
            "$schema": DATA,
            "request_data": {"id": "f", "description": "d", "form": {"fields": [{"id": "d", "required": "yes"}]}},
        },
        "/request_data/form/fields/0/required",
    ),
    ("data: form missing", DATA, {"$schema": DATA, "request_data": {"id": "f", "description": "d"}}, "/request_data"),
    (
        "payments: extra key in quote (closed)",
        PAYMENTS,
        {"$schema": PAYMENTS, "quote": {**PAYMENTS_QUOTE, "price": 3}},
        "/quote",
    ),
    (
        "payments: amount with a comma",
        PAYMENTS,
        {"$schema": PAYMENTS, "quote": {**PAYMENTS_QUOTE, "payment_options": [{**PAYMENT_OPTION, "amount": "12,50"}]}},
        "/quote/payment_options/0/amount",
    ),
    (
        "payments: unknown payment method",
        PAYMENTS,
        {"$schema": PAYMENTS, "payment": {**PAYMENT, "payment_method": {**PAYMENT_METHOD, "type": "credit_card"}}},
        "/payment/payment_method/type",
    ),
    (
        "payments: extra top-level key (closed root)",
        PAYMENTS,
        {"$schema": PAYMENTS, "payment": PAYMENT, "note": "x"},
        "",
    ),
    (
        "payments: affiliate weight below 1",
        PAYMENTS,
        {
            "$schema": PAYMENTS,
            "quote": {
                **PAYMENTS_QUOTE,
                "revenue_share": {
                    "affiliate_share_bps": 300,
                    "affiliates": [{"id": "a", "role": "other", "weight": 0}],
                },
            },
        },
        "/quote/revenue_share/affiliates/0/weight",
    ),
    (
        "payments: detail value neither string nor number",
        PAYMENTS,
        {
            "$schema": PAYMENTS,
            "payment_confirmation": {
                "quote_id": "q",
                "payment_id": "p",
                "result": "success",
                "timestamp": "t",
                "merchant_signature": "s",
                "details": [{"label": "l", "value": True}],
            },
        },
        "/payment_confirmation/details/0/value",
    ),
    (
        "near: unknown action",
        NEAR,
        {
            "$schema": NEAR,
            "request_transaction": {
                "request_id": "t",
                "transaction": {"receiver_id": "c.near", "actions": [{"type": "Swap", "params": {}}]},
            },
        },
        "/request_transaction/transaction/actions/0/type",
    ),
    (
        "evm: address not hex",
        EVM,
        {"$schema": EVM, "address_response": {"request_id": "a", "addresses": ["0x12zz"]}},
        "/address_response/addresses/0",
    ),
    (
        "evm: personal_sign without message (oneOf)",
        EVM,
        {"$schema": EVM, "request_message_signing": {"request_id": "m", "signing_type": "personal_sign"}},
        "/request_message_signing",
    ),
    (
        "evm: chain id a string",
        EVM,
        {"$schema": EVM, "request_address": {"request_id": "a", "chain_id": "1"}},
        "/request_address/chain_id",
    ),
    (
        "legacy: hub-era quote from examples.md",
        LEGACY,
        {
            "$schema": LEGACY,
            "quote": {
                "quote_id": "quote_1234",
                "payee_id": "demo-shopper.near",
                "payment_plans": [
                    {"plan_id": "...", "plan_type": "one-time", "amount": 123.45, "currency": "USD"},
                    {
                        "plan_id": "...",
                        "plan_type": "subscription",
                        "recurring_details": {"interval": "monthly", "amount": 9.99, "currency": "USD"},
                    },
                ],
                "valid_until": "2025-12-31 12:00:00",
            },
        },
        "/quote/payment_plans/1/plan_type",
    ),
    (
        "legacy: authorization detail on another network",
        LEGACY,
        {
            "$schema": LEGACY,
            "payment_authorization": {
                "quote_id": "q",
                "result": "success",
                "timestamp": "t",
                "details": [
                    {"network": "ETH", "token_type": "USDC", "amount": 1, "account_id": "a", "transaction_id": "x"}
                ],
            },
        },
        "/payment_authorization/details/0/network",
    ),
]


def test_corpus_size() -> None:
    assert len(INVALID) >= 15


@pytest.mark.parametrize(("name", "url", "message", "pointer"), INVALID, ids=[case[0] for case in INVALID])
def test_invalid_message_is_reported(registry: Registry, name: str, url: str, message: Any, pointer: str) -> None:
    ref = registry.resolve(url)
    assert ref is not None and registry.get(ref) is not None
    issues = registry.validate(ref, message, limit=50)
    assert issues, name
    assert pointer in [issue.pointer for issue in issues], issues
    assert all(issue.message for issue in issues)


# ------------------------------------------------------------------------------- engine agreement


def _refuse(uri: str) -> referencing.Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)


def python_validator(capability: CapabilityVersion, pointer: str | None = None) -> jsonschema.Draft202012Validator:
    """jsonschema (Python) for the whole compiled schema, or for the subschema at `pointer`."""
    if pointer is None:
        return jsonschema.Draft202012Validator(capability.schema, registry=referencing.Registry(retrieve=_refuse))
    uri = "urn:aitp:test:capability"
    resource = DRAFT202012.create_resource(capability.schema)
    registry = referencing.Registry(retrieve=_refuse).with_resource(uri, resource)
    return jsonschema.Draft202012Validator({"$ref": f"{uri}#{pointer}"}, registry=registry)


def _all_messages(registry: Registry) -> list[tuple[str, CapabilityVersion, Any]]:
    cases: list[tuple[str, CapabilityVersion, Any]] = []
    for path in EXAMPLES:
        example = json.loads(path.read_text())
        cases.append((example_id(path), registry.get(registry.resolve(example["$schema"])), example))  # type: ignore[arg-type]
    for name, url, message, _ in INVALID:
        cases.append((name, registry.get(registry.resolve(url)), message))  # type: ignore[arg-type]
    return cases


def test_engines_agree_on_validity(registry: Registry) -> None:
    cases = _all_messages(registry)
    assert len(cases) == len(EXAMPLES) + len(INVALID)
    verdicts = {"valid": 0, "invalid": 0}
    for name, capability, message in cases:
        rust = registry.validator(capability.ref).is_valid(message)
        python = python_validator(capability).is_valid(message)
        assert rust == python, f"{name}: jsonschema-rs says {rust}, jsonschema says {python}"
        assert rust == (registry.validate(capability.ref, message) == []), name
        verdicts["valid" if rust else "invalid"] += 1
    assert verdicts == {"valid": len(EXAMPLES), "invalid": len(INVALID)}


def test_engines_agree_on_where_a_message_is_wrong(registry: Registry) -> None:
    """Against the branch of the message's type, both engines report errors at the same places."""
    compared = 0
    for name, capability, message in _all_messages(registry):
        if not isinstance(message, dict):
            continue
        branches = message_branches(capability.schema)
        message_type = next((key for key in message if key in branches), None)
        if message_type is None:
            continue
        python = sorted(
            json_pointer(e.absolute_path)
            for e in python_validator(capability, branches[message_type]).iter_errors(message)
        )
        rust = sorted(issue.pointer for issue in registry.validate(capability.ref, message, limit=1000))
        assert rust == python, name
        compared += 1
    assert compared >= len(EXAMPLES) + len(INVALID) - 2  # all but "no message type" and "not an object"
