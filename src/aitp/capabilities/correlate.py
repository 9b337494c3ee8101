"""Correlation: an answer must answer a real request of this thread, with what was offered.

AITP-02: a `decision` names a `request_decision` from another actor; chosen option ids are among
the offered options or their variants; `radio` and `confirmation` take exactly one option; a
request is answered at most once. AITP-03: a `data` reply names a `request_data`; for inline
forms every required field is present and non-empty and unknown field ids are refused.
Payments (AITP-01 and the pre-2025 model), whose messages carry a `quote_id`: a payment names a
quote of another actor and pays one of its offers; a confirmation (result) names a payment made
by another actor. A quote is paid once and a payment confirmed once: a retry needs a new quote.
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
    """A message type answering `request` (a message type), naming it in `key`; at most once per request."""

    request: str
    key: str
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
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _check_payment(payment: dict[str, Any], quote: dict[str, Any], param: str) -> None:
    """The payment's amount, currency and method type are one of the quote's payment options."""
    method = payment.get("payment_method") or {}
    for option in quote.get("payment_options") or []:
        if option.get("currency") != method.get("currency"):
            continue
        if "amount" in option and _amount(option["amount"]) != _amount(method.get("amount")):
            continue
        if method.get("type") in {m.get("type") for m in option.get("payment_methods") or []}:
            return
    raise Unprocessable(
        f"{param}: {method.get('amount')} {method.get('currency')} by {method.get('type')!r} is not one of the"
        f" payment options of quote {quote.get('quote_id')!r}.",
        param="/payment/payment_method",
        code="invalid_payment",
    )


# Per capability: the message types that are requests, and those that answer one.
REQUESTS: dict[str, dict[str, Request]] = {
    "aitp-02-decisions": {"request_decision": Request("id")},
    "aitp-03-data-request": {"request_data": Request("id")},
    "aitp-01-payments": {"quote": Request("quote_id")},
    "aitp-legacy-payments": {"quote": Request("quote_id")},
}
ANSWERS: dict[str, dict[str, Answer]] = {
    "aitp-02-decisions": {"decision": Answer("request_decision", "request_decision_id", _check_decision)},
    "aitp-03-data-request": {"data": Answer("request_data", "request_data_id", _check_data)},
    "aitp-01-payments": {
        "payment": Answer("quote", "quote_id", _check_payment),
        "payment_confirmation": Answer("payment", "quote_id"),
    },
    "aitp-legacy-payments": {
        "payment_authorization": Answer("quote", "quote_id"),
        "payment_result": Answer("payment_authorization", "quote_id"),
    },
}
ANSWER_TYPES = frozenset(kind for answers in ANSWERS.values() for kind in answers)


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
        request = await store.get_ref(thread_id, answer.request, request_id)
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
        if answer.check is not None:
            answer.check(body, request.body, param)
        refs.append(CapabilityRef(thread_id, kind, request_id, message_id, sender, body))
    return refs


def duplicate_error(error: DuplicateRef) -> Conflict:
    """The 409 for a ref that already exists: an answered request, or a reused request id."""
    if error.kind in ANSWER_TYPES:
        return Conflict(
            f"{error.ref_id!r} already has a {error.kind} in this thread.",
            param=f"/{error.kind}",
            code="already_answered",
        )
    id_key = next((rules[error.kind].id_key for rules in REQUESTS.values() if error.kind in rules), "id")
    return Conflict(
        f"A {error.kind} with id {error.ref_id!r} already exists in this thread.",
        param=f"/{error.kind}/{id_key}",
        code="duplicate_request_id",
    )
