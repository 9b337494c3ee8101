"""Correlation: an answer must answer a real request of this thread, with what was offered.

AITP-02: a `decision` names a `request_decision` from another actor; chosen option ids are among
the offered options or their variants; `radio` and `confirmation` take exactly one option; a
request is answered at most once. AITP-03: a `data` reply names a `request_data`; for inline
forms every required field is present and non-empty and unknown field ids are refused.

Payments, whose messages carry a `quote_id`, in two capabilities: AITP-01 (`quote`, `payment`,
`payment_confirmation`) and the hub-era model (aitp-04-transactions: `quote`, `payment_authorization`,
`payment_result`). A quote id is one per thread whatever the capability. A payment of either kind names
a quote of another actor and pays one of its offers (amount and currency; for AITP-01 on AITP-01 the
method type too), whichever capability made the quote; a confirmation (result) names a payment made by
another actor.

Each answer takes a *slot* of its request: a ref keyed by (thread, slot, request id), which the store
keeps unique, so a slot is taken once, atomically, even by concurrent posts. Answers that mean the same
share a slot: every payment of a quote takes its `payment` slot and every confirmation its
`payment_confirmation` slot, so a quote is paid once and confirmed once, whatever capability pays or
confirms it (a retry needs a new quote). A payment lifecycle (a failed payment freeing its quote) would
give the slot's ref a state and let a transition replace it, without changing how answers find slots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from aitp.capabilities.messages import CapabilityPart
from aitp.errors import Conflict, Unprocessable
from aitp.store.base import CapabilityRef, DuplicateRef, Store

SINGLE_CHOICE = ("radio", "confirmation")
AnswerCheck = Callable[[dict[str, Any], dict[str, Any], str], None]  # (answer, request, param)


@dataclass(frozen=True)
class Request:
    """A message type others answer; `id_key` holds its id (unique per thread and type)."""

    id_key: str


@dataclass(frozen=True)
class Answer:
    """A message type answering a request of kind `request` (a request type, or the slot of an earlier
    answer), naming it in `key`; it takes the request's `slot`, once."""

    request: str
    key: str
    slot: str
    check: AnswerCheck | None = None


def _option_ids(options: list[dict[str, Any]]) -> Iterator[str]:
    for option in options:
        if "id" in option:
            yield str(option["id"])
        yield from _option_ids(option.get("variants") or [])


def _check_decision(decision: dict[str, Any], request: dict[str, Any], param: str) -> None:
    chosen = decision.get("options") or []
    kind = request.get("type", "radio")
    if kind in SINGLE_CHOICE and len(chosen) != 1:
        raise Unprocessable(
            f"{param}: a '{kind}' decision takes exactly one option, got {len(chosen)}.",
            param="/decision/options",
            code="invalid_decision",
        )
    offered = set(_option_ids(request.get("options") or []))
    if not offered:
        return  # e.g. a confirmation without options: the UI offers Yes/No itself
    for i, option in enumerate(chosen):
        if str(option.get("id")) not in offered:
            raise Unprocessable(
                f"{param}: option {option.get('id')!r} was not offered by request {request.get('id')!r}.",
                param=f"/decision/options/{i}/id",
                code="invalid_decision",
            )


def _check_data(data: dict[str, Any], request: dict[str, Any], param: str) -> None:
    fields = (request.get("form") or {}).get("fields")
    if not isinstance(fields, list):
        return  # a json_url form: its fields live elsewhere
    known = {f.get("id") for f in fields}
    given = {f.get("id"): f.get("value") for f in data.get("fields") or []}
    for i, field in enumerate(data.get("fields") or []):
        if field.get("id") not in known:
            raise Unprocessable(
                f"{param}: field {field.get('id')!r} is not in the form of request {request.get('id')!r}.",
                param=f"/data/fields/{i}/id",
                code="invalid_data",
            )
    for field in fields:
        if field.get("required") and given.get(field.get("id")) in (None, "", []):
            raise Unprocessable(
                f"{param}: required field {field.get('id')!r} is missing or empty.",
                param="/data/fields",
                code="invalid_data",
            )


def _amount(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


@dataclass(frozen=True)
class Offer:
    """One way a quote may be paid: `amount` (None: any), `currency`, and the method types (None: not said)."""

    amount: Decimal | None
    currency: Any
    methods: frozenset[Any] | None


@dataclass(frozen=True)
class Paid:
    """What a payment pays: `amount` (None: not said), the currencies it counts in, its method type (None:
    not said in AITP-01 terms), and where in the message those are (`param`, for the refusal)."""

    amount: Decimal | None
    currencies: frozenset[Any]
    method: Any
    param: str
    shown: str


# A hub-era transfer names a token; the hub's quotes were in the currency the token is pegged to.
PEGGED_TO = {"USDC": "USD"}


def _offers(quote: dict[str, Any]) -> list[Offer]:
    """A quote's offers: hub-era `payment_plans` (required there; AITP-01's quote admits no such property),
    else AITP-01 `payment_options`. An offer whose amount is not a number matches nothing."""
    offers = []
    if "payment_plans" in quote:
        for plan in quote.get("payment_plans") or []:
            amount = _amount(plan.get("amount"))
            if amount is not None:
                offers.append(Offer(amount, plan.get("currency"), None))
        return offers
    for option in quote.get("payment_options") or []:
        amount = _amount(option["amount"]) if "amount" in option else None
        if "amount" in option and amount is None:
            continue
        methods = frozenset(m.get("type") for m in option.get("payment_methods") or [])
        offers.append(Offer(amount, option.get("currency"), methods))
    return offers


def _pays(paid: Paid, offer: Offer) -> bool:
    if offer.currency not in paid.currencies:
        return False
    if offer.amount is not None and paid.amount != offer.amount:
        return False
    return offer.methods is None or paid.method is None or paid.method in offer.methods


def _check_paid(paid: Paid, quote: dict[str, Any], param: str) -> None:
    if not any(_pays(paid, offer) for offer in _offers(quote)):
        raise Unprocessable(
            f"{param}: {paid.shown} is not one of the payment options of quote {quote.get('quote_id')!r}.",
            param=paid.param,
            code="invalid_payment",
        )


def _check_payment(payment: dict[str, Any], quote: dict[str, Any], param: str) -> None:
    """AITP-01: the payment's amount, currency and method type are one of the quote's offers."""
    method = payment.get("payment_method") or {}
    amount = _amount(method["amount"]) if "amount" in method else None
    shown = f"{method.get('amount')} {method.get('currency')} by {method.get('type')!r}"
    paid = Paid(amount, frozenset([method.get("currency")]), method.get("type"), "/payment/payment_method", shown)
    _check_paid(paid, quote, param)


def _check_authorization(authorization: dict[str, Any], quote: dict[str, Any], param: str) -> None:
    """Hub-era: the transfers (`details`, each a positive amount of a token) add up to an offered amount in
    the currency of their token. No transfer pays nothing."""
    details = [d for d in authorization.get("details") or [] if isinstance(d, dict)]
    amounts = [_amount(d.get("amount")) for d in details]
    tokens = {d.get("token_type") for d in details}
    total: Decimal | None = None
    if details and all(a is not None and a > 0 for a in amounts):
        total = sum((a for a in amounts if a is not None), Decimal(0))
    currencies: frozenset[Any] = frozenset()
    if len(tokens) == 1:
        (token,) = tokens
        currencies = frozenset({token, PEGGED_TO.get(token, token)})
    paid = "no valid total" if total is None else str(total)
    shown = f"{paid} in {', '.join(sorted(map(str, tokens))) or 'no'} transfers"
    _check_paid(Paid(total, currencies, None, "/payment_authorization/details", shown), quote, param)


# Per capability: the message types that are requests, and those that answer one.
REQUESTS: dict[str, dict[str, Request]] = {
    "aitp-02-decisions": {"request_decision": Request("id")},
    "aitp-03-data-request": {"request_data": Request("id")},
    "aitp-01-payments": {"quote": Request("quote_id")},
    "aitp-legacy-payments": {"quote": Request("quote_id")},
}
ANSWERS: dict[str, dict[str, Answer]] = {
    "aitp-02-decisions": {"decision": Answer("request_decision", "request_decision_id", "decision", _check_decision)},
    "aitp-03-data-request": {"data": Answer("request_data", "request_data_id", "data", _check_data)},
    "aitp-01-payments": {
        "payment": Answer("quote", "quote_id", "payment", _check_payment),
        "payment_confirmation": Answer("payment", "quote_id", "payment_confirmation"),
    },
    "aitp-legacy-payments": {
        "payment_authorization": Answer("quote", "quote_id", "payment", _check_authorization),
        "payment_result": Answer("payment", "quote_id", "payment_confirmation"),
    },
}
SLOTS = frozenset(answer.slot for answers in ANSWERS.values() for answer in answers.values())
# Refs stored before hub-era answers shared the AITP-01 slots were kept under their message type: read too.
FORMER_SLOTS = {"payment": ("payment_authorization",), "payment_confirmation": ("payment_result",)}


async def _find(store: Store, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
    for stored_as in (kind, *FORMER_SLOTS.get(kind, ())):
        ref = await store.get_ref(thread_id, stored_as, ref_id)
        if ref is not None:
            return ref
    return None


async def correlate(
    store: Store, thread_id: str, message_id: str, sender: str, parts: list[tuple[CapabilityPart, str]]
) -> list[CapabilityRef]:
    """Check every answer against its request; return the refs to store with the message."""
    refs = []
    for part, capability_id in parts:
        kind, body, param = part.type or "", part.message.get(part.type or ""), f"content[{part.index}]"
        if not isinstance(body, dict):
            continue
        request_rule = REQUESTS.get(capability_id, {}).get(kind)
        if request_rule is not None and request_rule.id_key in body:
            refs.append(CapabilityRef(thread_id, kind, str(body[request_rule.id_key]), message_id, sender, body))
        answer = ANSWERS.get(capability_id, {}).get(kind)
        if answer is None:
            continue
        request_id = str(body.get(answer.key))
        request = await _find(store, thread_id, answer.request, request_id)
        if request is None:
            raise Unprocessable(
                f"{param}: no {answer.request} with id {request_id!r} in this thread.",
                param=f"/{kind}/{answer.key}",
                code="unknown_request",
            )
        if request.actor == sender:
            raise Unprocessable(
                f"{param}: '{sender}' cannot answer its own {answer.request}.",
                param=f"/{kind}/{answer.key}",
                code="unknown_request",
            )
        # Taken already? The store's unique ref decides atomically; reading first names the message type
        # in the refusal (and finds slots taken under their former names).
        if await _find(store, thread_id, answer.slot, request_id) is not None:
            raise already_answered(request_id, answer.slot, f"/{kind}")
        if answer.check is not None:
            answer.check(body, request.body, param)
        refs.append(CapabilityRef(thread_id, answer.slot, request_id, message_id, sender, body))
    return refs


def already_answered(request_id: str, slot: str, param: str) -> Conflict:
    return Conflict(f"{request_id!r} already has a {slot} in this thread.", param=param, code="already_answered")


def duplicate_error(error: DuplicateRef) -> Conflict:
    """The 409 for a ref that already exists: an answered request, or a reused request id."""
    if error.kind in SLOTS:
        return already_answered(error.ref_id, error.kind, f"/{error.kind}")
    id_key = next((rules[error.kind].id_key for rules in REQUESTS.values() if error.kind in rules), "id")
    return Conflict(
        f"A {error.kind} with id {error.ref_id!r} already exists in this thread.",
        param=f"/{error.kind}/{id_key}",
        code="duplicate_request_id",
    )
