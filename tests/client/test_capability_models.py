"""`aitp.client.capabilities`: the typed capability messages, checked against the shipped schemas.

Specification: a URL constant per shipped capability, resolving to it; a model per message type of the
decisions, data-request and payments capabilities, with the schema's properties, required properties, types,
enums, bounds and closedness (read from the server's compiled schema); every shipped example reads into its
model and comes back unchanged, valid by the server's own validator; messages built as the guide builds them
are valid; what the schema refuses (the server's invalid corpus, and more) the model refuses as it is built;
a whole sale of built messages is accepted by the service (in process on each store, and by a real server).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.version import Version
from pydantic import BaseModel, ValidationError

from aitp.app import create_app
from aitp.capabilities.registry import CapabilityRef, Registry, default_directory, message_branches
from aitp.client import (
    DATA_REQUESTS,
    DECISIONS,
    EVM_WALLET,
    LEGACY_PAYMENTS,
    NEAR_WALLET,
    PAYMENTS,
    Affiliate,
    AitpClient,
    CapabilityMessage,
    CapabilityPayload,
    Data,
    Decision,
    DecisionOption,
    FieldValue,
    Form,
    FormField,
    OptionQuote,
    Payment,
    PaymentConfirmation,
    PaymentDetail,
    PaymentMethod,
    PaymentMethodUsed,
    PaymentOption,
    PaymentPlan,
    Quote,
    RequestData,
    RequestDecision,
    SelectedOption,
    TopUpResponse,
    capability_payloads,
    parse_payload,
)
from aitp.client.capabilities import MODELS
from aitp.config import Settings
from aitp.store import Store
from tests.capabilities.test_examples import INVALID
from tests.conftest import ADMIN_KEY

DIRECTORY = default_directory()
V1 = Version("1.0.0")
URLS = {
    "aitp-01-payments": PAYMENTS,
    "aitp-02-decisions": DECISIONS,
    "aitp-03-data-request": DATA_REQUESTS,
    "aitp-04-near-wallet": NEAR_WALLET,
    "aitp-05-evm-wallet": EVM_WALLET,
    "aitp-legacy-payments": LEGACY_PAYMENTS,
}
MODELLED = ("aitp-01-payments", "aitp-02-decisions", "aitp-03-data-request")
EXAMPLES = sorted(path for capability in MODELLED for path in (DIRECTORY / capability).glob("*/examples/*.json"))
UNTIL = "2030-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.from_directory(DIRECTORY)


def validate(registry: Registry, message: dict[str, Any]) -> list[str]:
    """The server's verdict on a capability message: its issues, none when valid."""
    ref = registry.resolve(message["$schema"])
    assert ref is not None, message["$schema"]
    return [f"{issue.pointer}: {issue.message}" for issue in registry.validate(ref, message, limit=20)]


# ------------------------------------------------------------------------------ URLs and models


def test_a_url_constant_names_each_shipped_capability(registry: Registry) -> None:
    assert {info.id for info in registry.capabilities()} == set(URLS)
    for capability_id, url in URLS.items():
        assert registry.resolve(url) == CapabilityRef(capability_id, V1), url


def test_every_message_type_of_the_modelled_capabilities_has_a_model(registry: Registry) -> None:
    for capability_id in MODELLED:
        capability = registry.get(CapabilityRef(capability_id, V1))
        assert capability is not None
        assert sorted(capability.message_types) == sorted(t for c, t in MODELS if c == capability_id)
        for message_type in capability.message_types:
            assert MODELS[(capability_id, message_type)].schema_url == URLS[capability_id]


def _at(document: Any, pointer: str) -> Any:
    for token in pointer.strip("/").split("/") if pointer.strip("/") else []:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def _theirs(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A node of the capability's compiled schema, its local `$ref`s followed."""
    while "$ref" in node:
        node = _at(document, node["$ref"].removeprefix("#"))
    return node


def _ours(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A node of a model's JSON Schema (pydantic's), `$ref`s followed and `None` (a field left out) dropped."""
    if "$ref" in node:
        return _ours(defs, {**defs[node["$ref"].rpartition("/")[2]], **{k: v for k, v in node.items() if k != "$ref"}})
    branches = [b for b in node.get("anyOf", []) if b != {"type": "null"}]
    if "anyOf" in node and len(branches) < len(node["anyOf"]):  # X | None: X, with what the union carries (bounds)
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
        return _ours(defs, {**branches[0], **rest} if len(branches) == 1 else {"anyOf": branches, **rest})
    return node


def _types(node: dict[str, Any]) -> set[str]:
    """The JSON types a node admits, "integer" counted as a "number" when both are there."""
    found: set[str] = set()
    if isinstance(node.get("type"), str):
        found.add(node["type"])
    for keyword in ("anyOf", "oneOf"):
        for branch in node.get(keyword, []):
            found |= _types(branch)
    return found - {"integer"} if "number" in found else found


def _constraints(node: dict[str, Any]) -> dict[str, Any]:
    # pydantic writes the bounds of a union of number types as `ge`/`le`
    enum = node.get("enum", [node["const"]] if "const" in node else None)
    return {
        "enum": sorted(enum) if enum is not None else None,
        "minItems": node.get("minItems"),
        "minimum": node.get("minimum", node.get("ge")),
        "maximum": node.get("maximum", node.get("le")),
        "pattern": node.get("pattern"),
    }


def _compare(defs: dict[str, Any], ours: dict[str, Any], document: dict[str, Any], theirs: dict[str, Any], where: str):
    ours, theirs = _ours(defs, ours), _theirs(document, theirs)
    assert _types(ours) == _types(theirs), where
    assert _constraints(ours) == _constraints(theirs), where
    if "properties" in theirs:
        properties = ours["properties"]
        assert sorted(properties) == sorted(theirs["properties"]), where
        # a required property is required by the model, or has a default always sent (e.g. plan_type one-time)
        defaulted = {name for name, node in properties.items() if node.get("default") is not None}
        assert set(ours.get("required", [])) | defaulted == set(theirs.get("required", [])), where
        assert ours.get("additionalProperties") == theirs.get("additionalProperties", True), where
        for name, node in properties.items():
            _compare(defs, node, document, theirs["properties"][name], f"{where}.{name}")
    if "items" in theirs:
        _compare(defs, ours["items"], document, theirs["items"], f"{where}[]")


@pytest.mark.parametrize(("capability_id", "message_type"), sorted(MODELS))
def test_a_model_has_its_schemas_properties_types_and_bounds(
    registry: Registry, capability_id: str, message_type: str
) -> None:
    capability = registry.get(CapabilityRef(capability_id, V1))
    assert capability is not None
    branch = _theirs(capability.schema, _at(capability.schema, message_branches(capability.schema)[message_type]))
    ours = MODELS[(capability_id, message_type)].model_json_schema(by_alias=True)
    _compare(ours.get("$defs", {}), ours, capability.schema, branch["properties"][message_type], message_type)


def test_the_comparison_sees_a_difference() -> None:
    """A guard on the check above: a model that drifted from its schema fails it."""

    class Drifted(BaseModel):
        options: list[SelectedOption]  # no minItems, request_decision_id missing, open

    document = {"$ref": "#/x", "x": {"type": "object", "properties": {"options": {"type": "array", "minItems": 1}}}}
    with pytest.raises(AssertionError):
        _compare({}, Drifted.model_json_schema(), document, document, "drifted")


# ------------------------------------------------------------------------------------ examples


def example_id(path: Path) -> str:
    return f"{path.relative_to(DIRECTORY).parts[0]}/{path.stem}"


@pytest.mark.parametrize("path", EXAMPLES, ids=example_id)
def test_a_shipped_example_reads_into_its_model_and_back(registry: Registry, path: Path) -> None:
    capability_id = path.relative_to(DIRECTORY).parts[0]
    example = json.loads(path.read_text())
    message_type = next(key for key in example if key != "$schema")
    model = MODELS[(capability_id, message_type)]
    parsed = model.from_message(example)
    assert parsed.to_message(example["$schema"]) == example  # nothing lost, nothing added
    assert validate(registry, parsed.to_message()) == []  # under the capability's canonical URL
    part = CapabilityPayload(
        capability=capability_id,
        version="1.0.0",
        type=message_type,
        payload=example[message_type],
        document=example,
        schema=example["$schema"],
        validated=True,
        index=0,
    )
    assert parse_payload(part) == parsed
    assert parse_payload(dataclasses.replace(part, version="2.0.0")) is None  # not what a 1.x model reads


def test_prices_read_as_decimals() -> None:
    products = RequestDecision.from_message(
        json.loads((DIRECTORY / "aitp-02-decisions/1.0.0/examples/request_decision_products.json").read_text())
    )
    assert [option.price for option in products.options] == [Decimal(p) for p in ("199.5", "79.99", "399.99", "348")]
    assert [variant.price for variant in products.options[1].variants or []] == [Decimal("89.99"), Decimal("74.99")]
    quote = Quote.from_message(json.loads((DIRECTORY / "aitp-01-payments/1.0.0/examples/quote.json").read_text()))
    assert quote.payment_options[0].price == Decimal("99.99")
    assert DecisionOption(id="unpriced").price is None


# --------------------------------------------------------------------------- built as the guide does


def guide_sale() -> list[tuple[str, CapabilityMessage]]:
    """The guide's sale (docs/agents.md, Answering requests), built with the models: (author, message)."""
    prices = {"red": Decimal("12.50"), "blue": Decimal("8.00")}
    options = [
        DecisionOption(
            id=colour,
            name=f"{colour} socks",
            quote=OptionQuote.one_time(price, quote_id=f"socks-1-{colour}", payee_id="shop.near", valid_until=UNTIL),
        )
        for colour, price in prices.items()
    ]
    address = FormField(id="address", label="Shipping address", required=True)
    method = PaymentMethod(token="usdc.near", recipient="shop.near")
    paid_with = PaymentMethodUsed(token="usdc.near", channel_id="ch-1", amount="16.00", currency="USD")
    return [
        ("shop.near", RequestDecision(id="socks-1", type="products", options=options)),
        ("user.near", Decision(request_decision_id="socks-1", options=[SelectedOption(id="blue", quantity=2)])),
        ("shop.near", RequestData(id="ship-1", description="Where to?", form=Form(fields=[address]))),
        ("user.near", Data(request_data_id="ship-1", fields=[FieldValue(id="address", value="1 Sock Street")])),
        (
            "shop.near",
            Quote(
                quote_id="q-1",
                merchant_id="shop.near",
                description="2 x blue socks",
                expiration=datetime(2030, 1, 1, tzinfo=UTC),
                payment_options=[PaymentOption(amount=2 * prices["blue"], currency="USD", payment_methods=[method])],
                merchant_signature="ed25519:demo",
            ),
        ),
        (
            "user.near",
            Payment(
                quote_id="q-1",
                payment_method=paid_with,
                payer_id="user.near",
                timestamp=UNTIL,
                payer_signature="ed25519:demo",
            ),
        ),
        (
            "shop.near",
            PaymentConfirmation(
                quote_id="q-1",
                payment_id="pay-1",
                result="success",
                timestamp=UNTIL,
                message="Thank you!",
                details=[PaymentDetail(label="Order", value="pay-1")],
                merchant_signature="ed25519:demo",
            ),
        ),
    ]


@pytest.mark.parametrize("built", [m for _, m in guide_sale()], ids=[m.message_type for _, m in guide_sale()])
def test_a_message_built_as_the_guide_builds_it_is_valid(registry: Registry, built: CapabilityMessage) -> None:
    assert validate(registry, built.to_message()) == []


def test_the_wire_form_of_the_one_price_shape() -> None:
    (_, offer), _, _, _, (_, quote), (_, payment), _ = guide_sale()
    assert offer.to_message()["request_decision"]["options"][1] == {
        "id": "blue",
        "name": "blue socks",
        "quote": {
            "type": "Quote",
            "quote_id": "socks-1-blue",
            "payee_id": "shop.near",
            "payment_plans": [{"plan_id": "socks-1-blue", "plan_type": "one-time", "amount": 8.0, "currency": "USD"}],
            "valid_until": UNTIL,
        },
    }
    assert isinstance(offer, RequestDecision) and offer.options[1].price == Decimal("8")
    payload = quote.to_payload()
    assert (payload["expiration"], payload["payment_options"][0]["amount"]) == (UNTIL, "16.00")
    assert isinstance(quote, Quote) and quote.payment_options[0].price == Decimal("16.00")
    assert payment.to_payload()["payment_method"]["amount"] == "16.00"
    assert Decision(options=[SelectedOption(id="a", quantity=2)]).to_payload() == {
        "options": [{"id": "a", "quantity": 2}]
    }


def test_fields_named_otherwise_in_python_are_sent_as_the_schema_names_them() -> None:
    form = RequestData(
        id="f", description="d", form=Form(json_url="https://example.com/form.json"), fill_button_label="Go"
    )
    assert form.to_payload()["fillButtonLabel"] == "Go"
    assert RequestData.model_validate(form.to_payload()) == form
    extra = RequestDecision.model_validate({"id": "r", "options": [{"id": "a", "colour": "red"}], "note": "open"})
    assert extra.to_payload() == {"id": "r", "options": [{"id": "a", "colour": "red"}], "note": "open"}  # kept


# ------------------------------------------------------------------------------------ refusals

QUOTE: dict[str, Any] = {
    "quote_id": "q",
    "merchant_id": "m",
    "description": "d",
    "payment_options": [],
    "merchant_signature": "s",
}
TOP_UP: dict[str, Any] = json.loads((DIRECTORY / "aitp-01-payments/1.0.0/examples/top_up_response.json").read_text())[
    "top_up_response"
]
REFUSED: list[tuple[str, Callable[[], object]]] = [
    (
        "request_decision type not one of the enum",
        lambda: RequestDecision(id="r", type="product", options=[DecisionOption(id="a")]),
    ),
    ("request_decision offering nothing", lambda: RequestDecision(id="r", options=[])),
    ("request_decision without id", lambda: RequestDecision.model_validate({"options": [{"id": "a"}]})),
    ("option id a number", lambda: DecisionOption(id=1)),
    ("rating above 5", lambda: DecisionOption(id="a", five_star_rating=7)),
    ("reviews_count not an integer", lambda: DecisionOption(id="a", reviews_count=1.5)),
    ("option price in EUR", lambda: PaymentPlan(plan_id="p", amount=1, currency="EUR")),
    ("selected option with a price (closed)", lambda: SelectedOption(id="a", price=3)),
    ("decision choosing nothing", lambda: Decision(options=[])),
    ("form field of an unknown type", lambda: FormField(id="d", type="date")),
    ("form field required 'yes'", lambda: FormField(id="d", required="yes")),
    ("request_data without description", lambda: RequestData.model_validate({"id": "f", "form": {}})),
    ("data value a number", lambda: FieldValue(id="n", value=7)),
    ("quote without merchant_signature", lambda: Quote.model_validate(_without(QUOTE, "merchant_signature"))),
    ("quote with a price of its own (closed)", lambda: Quote(**QUOTE, price=3)),
    ("amount with a comma", lambda: PaymentOption(amount="12,50", currency="USD", payment_methods=[])),
    ("amount as a float", lambda: PaymentOption(amount=12.5, currency="USD", payment_methods=[])),
    ("negative amount", lambda: PaymentOption(amount=Decimal("-1"), currency="USD", payment_methods=[])),
    ("top-up response without amount", lambda: TopUpResponse.model_validate(_without(TOP_UP, "amount"))),
    (
        "payment by credit card",
        lambda: PaymentMethodUsed(type="credit_card", token="t", channel_id="c", currency="USD"),
    ),
    (
        "payment method with a recipient (closed)",
        lambda: PaymentMethodUsed(token="t", channel_id="c", currency="USD", recipient="shop.near"),
    ),
    (
        "confirmation result 'ok'",
        lambda: PaymentConfirmation(
            quote_id="q",
            payment_id="p",
            result="ok",
            timestamp=UNTIL,
            merchant_signature="s",
        ),
    ),
    ("detail value a boolean", lambda: PaymentDetail(label="l", value=True)),
    ("affiliate weight below 1", lambda: Affiliate(id="a", role="other", weight=0)),
    ("affiliate of an unknown role", lambda: Affiliate(id="a", role="reseller")),
]


def _without(payload: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key != name}


@pytest.mark.parametrize("build", [build for _, build in REFUSED], ids=[name for name, _ in REFUSED])
def test_a_wrong_value_is_refused_as_the_model_is_built(build: Callable[[], object]) -> None:
    with pytest.raises(ValidationError):
        build()


def test_the_refused_payloads_are_valid_ones_with_one_thing_wrong() -> None:
    Quote.model_validate(QUOTE)
    TopUpResponse.model_validate(TOP_UP)


# the server's own invalid corpus (tests/capabilities/test_examples.py): the entries wrong inside a modelled payload
CAPABILITY_OF = {
    DECISIONS: "aitp-02-decisions",
    "https://aitp.dev/v1/requests.schema.json": "aitp-02-decisions",
    DATA_REQUESTS: "aitp-03-data-request",
    PAYMENTS: "aitp-01-payments",
}
WRONG_PAYLOADS = [
    (name, CAPABILITY_OF[url], message, next(iter(message.keys() - {"$schema"})))
    for name, url, message, pointer in INVALID
    if url in CAPABILITY_OF and isinstance(message, dict) and len(message.keys() - {"$schema"}) == 1
    and pointer.startswith(f"/{next(iter(message.keys() - {'$schema'}))}")
]  # fmt: skip


def test_the_server_corpus_has_wrong_payloads_of_each_capability() -> None:
    assert {capability for _, capability, _, _ in WRONG_PAYLOADS} == set(MODELLED)
    assert len(WRONG_PAYLOADS) >= 15


@pytest.mark.parametrize(
    ("capability_id", "message", "message_type"),
    [case[1:] for case in WRONG_PAYLOADS],
    ids=[case[0] for case in WRONG_PAYLOADS],
)
def test_what_the_server_refuses_the_model_refuses(
    registry: Registry, capability_id: str, message: dict[str, Any], message_type: str
) -> None:
    assert validate(registry, message) != []
    with pytest.raises(ValidationError):
        MODELS[(capability_id, message_type)].from_message(message)


# ------------------------------------------------------------------------------ through the service

BASE = "http://aitp.test"


@pytest.fixture
async def sale_clients(store: Store) -> AsyncIterator[dict[str, AitpClient]]:
    """user.near and shop.near on the app in this process, on the test's store (SQLite, then MongoDB)."""
    settings = Settings(store_url="unused://", admin_key=ADMIN_KEY, contact_policy="anyone")
    transport = httpx.ASGITransport(app=create_app(settings, store=store))
    async with AitpClient(BASE, ADMIN_KEY, transport=transport) as admin:
        keys = {actor: (await admin.create_key(actor)).key for actor in ("user.near", "shop.near")}
    async with (
        AitpClient(BASE, keys["user.near"], transport=transport) as user,
        AitpClient(BASE, keys["shop.near"], transport=transport) as shop,
    ):
        yield {"user.near": user, "shop.near": shop}


async def test_a_whole_sale_of_built_messages_is_accepted(sale_clients: dict[str, AitpClient]) -> None:
    """Each answer answers its request as the service checks it (options offered, amount quoted, ...)."""
    everything = [DECISIONS, DATA_REQUESTS, PAYMENTS]
    actors = [{"id": actor, "capabilities": everything} for actor in sale_clients]
    thread = await sale_clients["user.near"].create_thread(actors=actors)
    for author, built in guide_sale():
        sent = await sale_clients[author].create_message(thread.id, built.to_message())
        [part] = capability_payloads(sent)
        assert (part.capability, part.type, part.validated) == (built.capability, built.message_type, True)
        assert parse_payload(part) == built


async def test_a_real_server_accepts_a_built_offer(aitp_client: Callable[..., Any]) -> None:
    shop, user = await aitp_client("shop.near"), await aitp_client("user.near")
    await shop.set_contact_policy("anyone")
    thread = await user.create_thread(
        actors=[{"id": actor, "capabilities": [DECISIONS]} for actor in ("user.near", "shop.near")]
    )
    (_, offer), *_ = guide_sale()
    sent = await shop.create_message(thread.id, ["Our socks", offer.to_message()])
    [part] = capability_payloads(sent)
    assert (part.capability, part.version, part.type, part.validated) == (
        "aitp-02-decisions",
        "1.0.0",
        "request_decision",
        True,
    )
    assert parse_payload(part) == offer
