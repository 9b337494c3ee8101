"""Typed capability messages: the shipped capabilities' URLs, and pydantic models of their messages.

    from aitp.client import Decision, DecisionOption, OptionQuote, Quote, RequestDecision, SelectedOption

    socks = DecisionOption(id="red", name="Red socks", quote=OptionQuote.one_time(
        Decimal("12.50"), quote_id="p-red", payee_id="shop.near", valid_until="2030-01-01T00:00:00Z"))
    await incoming.reply(RequestDecision(id="socks-1", type="products", options=[socks]).to_message())
    # {"$schema": DECISIONS, "request_decision": {"id": "socks-1", "type": "products", "options": [...]}}

    request = RequestDecision.model_validate(incoming.payload)  # a received payload (Incoming.payload), typed
    cheapest = min((option for option in request.options if option.price is not None), key=lambda o: o.price)
    choice = Decision(request_decision_id=request.id, options=[SelectedOption(id=cheapest.id)])
    await incoming.reply(choice.to_message())

The models follow the schemas under capabilities/ (tests/client/test_capability_models.py checks them against
those): the same field names, required fields, enums (`Literal`) and bounds; other properties are kept where
the schema allows them (`additionalProperties`) and refused where it does not. A value the server would refuse
raises pydantic's `ValidationError` as the model is built. Strings, numbers and booleans are strict (no `7`
for `"7"`, no `"yes"` for `True`), since the server's validator is.

One price shape: an option of a `request_decision` is priced as the decisions schema defines it, by an
`OptionQuote` with one one-time payment plan in USD (`OptionQuote.one_time`); a payments `quote` by its
`payment_options`. Both read as a `Decimal`, `option.price`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from aitp.client._payloads import CapabilityPayload

# The canonical `$schema` URL of each shipped capability (capabilities/README.md, "Schema URLs")
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
DATA_REQUESTS = "https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json"
NEAR_WALLET = "https://aitp.dev/capabilities/aitp-04-near-wallet/v1.0.0/schema.json"
EVM_WALLET = "https://aitp.dev/capabilities/aitp-05-evm-wallet/v1.0.0/schema.json"
LEGACY_PAYMENTS = "https://aitp.dev/capabilities/aitp-legacy-payments/v1.0.0/schema.json"


def _amount_text(value: Any) -> Any:
    # payments amounts are decimal strings, so that no float rounds them: a Decimal or an int is written as
    # one; a float is left to be refused
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _json_number(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value  # the decisions schema's prices are numbers


def _time_text(value: Any) -> Any:
    # AITP payloads write times in UTC to the second (as `Incoming.timestamp()` does); a naive datetime is UTC
    if isinstance(value, datetime):
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


Amount = Annotated[str, StringConstraints(pattern=r"^\d+(\.\d+)?$"), BeforeValidator(_amount_text)]
Number = Annotated[int | float, BeforeValidator(_json_number)]  # an int stays an int on the wire
Timestamp = Annotated[str, BeforeValidator(_time_text)]  # a date-time string; a datetime is converted
Role = Literal["personal_assistant", "discovery", "service", "other"]


class _Object(BaseModel):
    model_config = ConfigDict(strict=True, populate_by_name=True)


class _Open(_Object):
    """An object whose schema allows other properties: they are kept, and sent again."""

    model_config = ConfigDict(extra="allow")


class _Closed(_Object):
    """An object whose schema allows no other properties (`additionalProperties: false`)."""

    model_config = ConfigDict(extra="forbid")


class CapabilityMessage(_Object):
    """A capability message's payload, the object under its type; `to_message()` is the message to post."""

    capability: ClassVar[str]  # its capability's id, e.g. aitp-02-decisions
    schema_url: ClassVar[str]  # that capability's canonical `$schema`
    message_type: ClassVar[str]  # the message's key besides `$schema`, e.g. request_decision

    def to_payload(self) -> dict[str, Any]:
        """The payload as JSON values, fields left None omitted (the schemas have no nulls)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_message(self, schema: str | None = None) -> dict[str, Any]:
        """The capability message to post (`incoming.reply(...)`, `create_message`): `{"$schema": url, type:
        payload}`; `schema` is another URL of the same capability if the thread's actors declared that one.
        (Not `message()`: `payment_confirmation` has a field of that name.)"""
        return {"$schema": schema or self.schema_url, self.message_type: self.to_payload()}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> Self:
        """The model of a whole capability message (`$schema` and all), e.g. a shipped example."""
        return cls.model_validate(message[cls.message_type])


# ------------------------------------------------------------------------- aitp-02-decisions


class PaymentPlan(_Open):
    """One way to pay an option's `OptionQuote`: a one-time amount in USD (a JSON number)."""

    plan_id: str
    plan_type: Literal["one-time"] = "one-time"
    amount: Number
    currency: Literal["USD"] = "USD"


class OptionQuote(_Open):
    """An option's price, as the decisions schema has it (its `Quote`): not the payments capability's `Quote`."""

    type: Literal["Quote"] = "Quote"
    quote_id: str
    payee_id: str
    payment_plans: list[PaymentPlan]
    valid_until: Timestamp

    @classmethod
    def one_time(
        cls, amount: Decimal | int | float, *, quote_id: str, payee_id: str, valid_until: str | datetime
    ) -> Self:
        """A price of `amount` USD paid once (its plan's id is `quote_id`)."""
        # (ignores: the fields' validators take a Decimal and a datetime; a model's __init__ types know only the
        # fields' own types)
        plan = PaymentPlan(plan_id=quote_id, amount=amount)  # type: ignore[arg-type]
        return cls(
            quote_id=quote_id,
            payee_id=payee_id,
            payment_plans=[plan],
            valid_until=valid_until,  # type: ignore[arg-type]
        )


class OptionVariant(_Open):
    """A variant of an option (a colour, a size), priced as an option is."""

    id: str
    name: str | None = None
    short_variant_name: str | None = None
    image_url: str | None = None
    description: str | None = None
    quote: OptionQuote | None = None
    reviews_count: int | None = None
    five_star_rating: Number | None = Field(None, ge=0, le=5)
    url: str | None = None

    @property
    def price(self) -> Decimal | None:
        """The amount of its quote's first payment plan (USD), None when it has none."""
        if self.quote is None or not self.quote.payment_plans:
            return None
        return Decimal(str(self.quote.payment_plans[0].amount))  # str: the float's shortest exact form


class DecisionOption(OptionVariant):
    """An option of a `request_decision` (a product, when its type is `products`)."""

    variants: list[OptionVariant] | None = None


class RequestDecision(CapabilityMessage, _Open):
    """`request_decision`: asks another actor to choose among `options` (answered by a `Decision`)."""

    capability: ClassVar[str] = "aitp-02-decisions"
    schema_url: ClassVar[str] = DECISIONS
    message_type: ClassVar[str] = "request_decision"

    id: str
    title: str | None = None
    description: str | None = None
    type: Literal["products", "checkbox", "radio", "confirmation"] | None = None  # omitted: radio
    options: Annotated[list[DecisionOption], Field(min_length=1)]


class SelectedOption(_Closed):
    """An option chosen in a `Decision`."""

    id: str
    name: str | None = None
    quantity: Number | None = None


class Decision(CapabilityMessage, _Open):
    """`decision`: the options chosen in answer to the `request_decision` `request_decision_id`."""

    capability: ClassVar[str] = "aitp-02-decisions"
    schema_url: ClassVar[str] = DECISIONS
    message_type: ClassVar[str] = "decision"

    request_decision_id: str | None = None
    options: Annotated[list[SelectedOption], Field(min_length=1)]


# ---------------------------------------------------------------------- aitp-03-data-request


class FormField(_Open):
    """A field of a `request_data` form."""

    id: str
    label: str | None = None
    description: str | None = None
    default_value: str | None = None
    type: Literal["text", "number", "email", "textarea", "select", "combobox", "tel"] | None = None  # omitted: text
    options: list[str] | None = None  # the choices of a select or combobox
    required: bool | None = None  # omitted: False
    autocomplete: str | None = None


class Form(_Open):
    """A `request_data` form: its `fields`, or a `json_url` where they are."""

    fields: Annotated[list[FormField], Field(min_length=1)] | None = None
    json_url: str | None = None


class RequestData(CapabilityMessage, _Open):
    """`request_data`: asks another actor to fill in a form (answered by `Data`)."""

    capability: ClassVar[str] = "aitp-03-data-request"
    schema_url: ClassVar[str] = DATA_REQUESTS
    message_type: ClassVar[str] = "request_data"

    id: str
    title: str | None = None
    description: str
    fill_button_label: str | None = Field(None, alias="fillButtonLabel")
    form: Form


class FieldValue(_Open):
    """A filled-in field of a `Data` answer."""

    id: str
    label: str | None = None
    value: str | None = None


class Data(CapabilityMessage, _Open):
    """`data`: the fields filled in, in answer to the `request_data` `request_data_id`."""

    capability: ClassVar[str] = "aitp-03-data-request"
    schema_url: ClassVar[str] = DATA_REQUESTS
    message_type: ClassVar[str] = "data"

    request_data_id: str | None = None
    fields: Annotated[list[FieldValue], Field(min_length=1)]


# -------------------------------------------------------------------------- aitp-01-payments
# Every object of this schema is closed: an unknown property is refused.


class PaymentMethod(_Closed):
    """How a `PaymentOption` may be paid: a NEAR payment channel in `token` to `recipient`."""

    type: Literal["near_payment_channel"] = "near_payment_channel"
    token: str
    recipient: str


class PaymentOption(_Closed):
    """An amount a `Quote` may be paid with (a decimal string), and the methods to pay it."""

    amount: Amount | None = None
    currency: str
    payment_methods: list[PaymentMethod]

    @property
    def price(self) -> Decimal | None:
        """`amount` as a `Decimal`, None when the option names none."""
        return None if self.amount is None else Decimal(self.amount)


class Affiliate(_Closed):
    """An affiliate sharing a quote's revenue."""

    id: str
    role: Role
    weight: int | None = Field(None, ge=1)


class RevenueShare(_Closed):
    """The share of a quote's revenue for its affiliates, in basis points."""

    affiliate_share_bps: int
    affiliates: list[Affiliate] | None = None


class Quote(CapabilityMessage, _Closed):
    """`quote`: what a merchant asks to be paid (answered by a `Payment`)."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "quote"

    quote_id: str
    merchant_id: str
    description: str
    expiration: Timestamp | None = None
    next_recipient: str | None = None
    payment_options: list[PaymentOption]
    revenue_share: RevenueShare | None = None
    merchant_signature: str


class QuoteWrapper(_Closed):
    """An agent that passed a `WrappedQuote` on, adding itself (and affiliates) to its revenue share."""

    affiliate_id: str
    role: Role
    added_affiliates: list[Affiliate] | None = None
    next_recipient: str
    timestamp: Timestamp
    signature: str


class WrappedQuote(CapabilityMessage, _Closed):
    """`wrapped_quote`: a merchant's quote passed along a chain of agents."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "wrapped_quote"

    original_quote: Quote
    wrappers: list[QuoteWrapper]


class PaymentMethodUsed(_Closed):
    """How a `Payment` was made: the channel it went through, and the amount and currency paid."""

    type: Literal["near_payment_channel"] = "near_payment_channel"
    token: str
    channel_id: str
    amount: Amount | None = None
    currency: str


class Payment(CapabilityMessage, _Closed):
    """`payment`: the payer paid the `Quote` `quote_id` (answered by a `PaymentConfirmation`)."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "payment"

    quote_id: str
    payment_method: PaymentMethodUsed
    payer_id: str
    timestamp: Timestamp
    payer_signature: str


class PaymentDetail(_Closed):
    """A line of a `PaymentConfirmation` (an order number, a period)."""

    label: str
    value: str | int | float
    url: str | None = None


class PaymentConfirmation(CapabilityMessage, _Closed):
    """`payment_confirmation`: the merchant's word on a `Payment` of its quote `quote_id`."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "payment_confirmation"

    quote_id: str
    payment_id: str
    result: Literal["success", "failure", "pending"]
    timestamp: Timestamp
    message: str | None = None
    details: list[PaymentDetail] | None = None
    merchant_signature: str


class TopUpRequest(CapabilityMessage, _Closed):
    """`top_up_request`: a merchant asks for more funds in a payment channel."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "top_up_request"

    channel_id: str
    amount: Amount | None = None
    currency: str
    reason: str | None = None
    merchant_id: str
    timestamp: Timestamp
    merchant_signature: str


class TopUpResponse(CapabilityMessage, _Closed):
    """`top_up_response`: the payer added funds to a payment channel."""

    capability: ClassVar[str] = "aitp-01-payments"
    schema_url: ClassVar[str] = PAYMENTS
    message_type: ClassVar[str] = "top_up_response"

    channel_id: str
    amount: Amount
    currency: str
    new_balance: Amount | None = None
    payer_id: str
    timestamp: Timestamp
    payer_signature: str


MODELS: dict[tuple[str, str], type[CapabilityMessage]] = {
    (model.capability, model.message_type): model
    for model in (
        RequestDecision,
        Decision,
        RequestData,
        Data,
        Quote,
        WrappedQuote,
        Payment,
        PaymentConfirmation,
        TopUpRequest,
        TopUpResponse,
    )
}


def parse_payload(part: CapabilityPayload) -> CapabilityMessage | None:
    """A capability message received (`Incoming.part`, `capability_payloads(message)[i]`) as its model, e.g. a
    `Quote`; None for one no model here reads (a wallet message, another major version)."""
    model = MODELS.get((part.capability or "", part.type or ""))
    if model is None or part.version is None or part.version.split(".")[0] != "1":
        return None
    return model.model_validate(part.payload)
