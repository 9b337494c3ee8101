"""Correlation: an answer must answer a real request of this thread, with what was offered, when its
request's lifecycle allows it.

AITP-02: a `decision` names a `request_decision` from another actor; chosen option ids are among
the offered options or their variants; `radio` and `confirmation` take exactly one option; a
request is answered once (the spec defines no way to change, cancel or expire a decision: a new
question is a new `request_decision`). AITP-03: a `data` reply names a `request_data`, once; for inline
forms every required field is present and non-empty and unknown field ids are refused.

Payments, whose messages carry a `quote_id`, in two capabilities: AITP-01 (`quote`, `payment`,
`payment_confirmation`) and the hub-era model (aitp-04-transactions: `quote`, `payment_authorization`,
`payment_result`). A quote id is one per thread whatever the capability. A payment of either kind names
a quote of another actor and pays one of its offers (amount and currency; for AITP-01 on AITP-01 the
method type too), whichever capability made the quote; a confirmation (result) names a payment made by
another actor. A quote goes through a lifecycle (`QuoteState`): open -> authorized (a payment) ->
pending / paid / failed (a confirmation's `result`); after a failure (a `failure` confirmation, or a
hub-era authorization whose own `result` is `failure`) it may be paid again, and a pending payment gets
its final confirmation later. Nothing moves a paid quote: it is paid once.

Each answer takes a *slot* of its request: a ref keyed by (thread, slot, request id), which the store
keeps unique, so a slot is taken once, atomically, even by concurrent posts. Answers that mean the same
share a slot: every payment of a quote takes its `payment` slot and every confirmation its
`payment_confirmation` slot, whatever capability pays or confirms it. A transition that replaces an
answer (a retry after a failure, a final confirmation after a pending one) releases the refs it
replaces in the same append, each only if it is still the one read (`RefRelease`): of two concurrent
transitions from one state, one wins and the other is 409 `already_answered`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from aitp.capabilities.messages import CapabilityPart
from aitp.errors import Conflict, Unprocessable, param_path
from aitp.store.base import CapabilityRef, DuplicateRef, RefRelease, Store

SINGLE_CHOICE = ("radio", "confirmation")
# How an answer moves its request: ONCE takes the request's slot for good (decisions, data); PAYS and
# CONFIRMS move a quote through its payment lifecycle (QuoteState).
ONCE, PAYS, CONFIRMS = "once", "pays", "confirms"
# A quote's lifecycle states, and the results of payments and confirmations that move it.
OPEN, AUTHORIZED, PENDING, PAID, FAILED = "open", "authorized", "pending", "paid", "failed"
FAILURE, PENDING_RESULT = "failure", "pending"
AnswerCheck = Callable[[dict[str, Any], dict[str, Any], str], None]  # (answer, request, param of the part)


@dataclass(frozen=True)
class Request:
    """A message type others answer; `id_key` holds its id (unique per thread and type)."""

    id_key: str


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
            param=param_path(param, ["decision", "options"]),
            code="invalid_decision",
        )
    offered = set(_option_ids(request.get("options") or []))
    if not offered:
        return  # e.g. a confirmation without options: the UI offers Yes/No itself
    for i, option in enumerate(chosen):
        if str(option.get("id")) not in offered:
            raise Unprocessable(
                f"{param}: option {option.get('id')!r} was not offered by request {request.get('id')!r}.",
                param=param_path(param, ["decision", "options", i, "id"]),
                code="invalid_decision",
            )


def _check_data(data: dict[str, Any], request: dict[str, Any], param: str) -> None:
    fields = (request.get("form") or {}).get("fields")
    if not isinstance(fields, list):
        return  # a json_url form: its fields live elsewhere
    known = {f.get("id") for f in fields}
    given = {f.get("id"): f.get("value") for f in data.get("fields") or []}
    for i, entry in enumerate(data.get("fields") or []):
        if entry.get("id") not in known:
            raise Unprocessable(
                f"{param}: field {entry.get('id')!r} is not in the form of request {request.get('id')!r}.",
                param=param_path(param, ["data", "fields", i, "id"]),
                code="invalid_data",
            )
    for wanted in fields:
        if wanted.get("required") and given.get(wanted.get("id")) in (None, "", []):
            raise Unprocessable(
                f"{param}: required field {wanted.get('id')!r} is missing or empty.",
                param=param_path(param, ["data", "fields"]),
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
    not said in AITP-01 terms), and where in the message those are (`path`, for the refusal)."""

    amount: Decimal | None
    currencies: frozenset[Any]
    method: Any
    path: tuple[str, ...]
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
            param=param_path(param, paid.path),
            code="invalid_payment",
        )


def _check_payment(payment: dict[str, Any], quote: dict[str, Any], param: str) -> None:
    """AITP-01: the payment's amount, currency and method type are one of the quote's offers."""
    method = payment.get("payment_method") or {}
    amount = _amount(method["amount"]) if "amount" in method else None
    shown = f"{method.get('amount')} {method.get('currency')} by {method.get('type')!r}"
    paid = Paid(amount, frozenset([method.get("currency")]), method.get("type"), ("payment", "payment_method"), shown)
    _check_paid(paid, quote, param)


def _check_authorization(authorization: dict[str, Any], quote: dict[str, Any], param: str) -> None:
    """Hub-era: the transfers (`details`, each a positive amount of a token) add up to an offered amount in
    the currency of their token. No transfer pays nothing. A failed authorization moved nothing: its
    transfers are not checked (it pays nothing and frees the quote for another payment)."""
    if authorization.get("result") == FAILURE:
        return
    details = [d for d in authorization.get("details") or [] if isinstance(d, dict)]
    amounts = [_amount(d.get("amount")) for d in details]
    tokens: set[Any] = {d.get("token_type") for d in details}
    total: Decimal | None = None
    if details and all(a is not None and a > 0 for a in amounts):
        total = sum((a for a in amounts if a is not None), Decimal(0))
    currencies: frozenset[Any] = frozenset()
    if len(tokens) == 1:
        (token,) = tokens
        currencies = frozenset({token, PEGGED_TO.get(token, token)})
    paid = "no valid total" if total is None else str(total)
    shown = f"{paid} in {', '.join(sorted(map(str, tokens))) or 'no'} transfers"
    _check_paid(Paid(total, currencies, None, ("payment_authorization", "details"), shown), quote, param)


@dataclass(frozen=True)
class Answer:
    """A message type answering a request of kind `request` (a request type, or the slot of an earlier
    answer), naming it in `key`, in the request's `slot`; `moves` says how (ONCE, PAYS or CONFIRMS)."""

    request: str
    key: str
    slot: str
    check: AnswerCheck | None = None
    moves: str = ONCE


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
        "payment": Answer("quote", "quote_id", "payment", _check_payment, PAYS),
        "payment_confirmation": Answer("payment", "quote_id", "payment_confirmation", None, CONFIRMS),
    },
    "aitp-legacy-payments": {
        "payment_authorization": Answer("quote", "quote_id", "payment", _check_authorization, PAYS),
        "payment_result": Answer("payment", "quote_id", "payment_confirmation", None, CONFIRMS),
    },
}
# Refs stored before hub-era answers shared the AITP-01 slots were kept under their message type: read too.
FORMER_SLOTS = {"payment": ("payment_authorization",), "payment_confirmation": ("payment_result",)}
SLOTS = frozenset(answer.slot for answers in ANSWERS.values() for answer in answers.values())
SLOT_OF = {former: slot for slot, formers in FORMER_SLOTS.items() for former in formers} | {s: s for s in SLOTS}


async def _find(store: Store, thread_id: str, kind: str, ref_id: str) -> CapabilityRef | None:
    for stored_as in (kind, *FORMER_SLOTS.get(kind, ())):
        ref = await store.get_ref(thread_id, stored_as, ref_id)
        if ref is not None:
            return ref
    return None


@dataclass(frozen=True)
class QuoteState:
    """Where a quote's payment is, read from its two slots: the current payment attempt (a `payment` or
    `payment_authorization`) and the last confirmation of it (a `payment_confirmation` or `payment_result`).

    open: no payment. authorized: a payment awaits its confirmation. pending: confirmed as pending, a final
    confirmation follows. paid: confirmed with success (or an unknown result, which is taken as final).
    failed: confirmed with failure, or a hub-era authorization that itself failed; the quote may be paid again.
    """

    payment: CapabilityRef | None
    confirmation: CapabilityRef | None

    @property
    def name(self) -> str:
        if self.confirmation is not None:  # also when its payment's message was deleted: paid stays paid
            result = self.confirmation.body.get("result")
            return FAILED if result == FAILURE else PENDING if result == PENDING_RESULT else PAID
        if self.payment is None:
            return OPEN
        return FAILED if self.payment.body.get("result") == FAILURE else AUTHORIZED

    @staticmethod
    async def read(store: Store, thread_id: str, quote_id: str) -> QuoteState:
        return QuoteState(
            await _find(store, thread_id, "payment", quote_id),
            await _find(store, thread_id, "payment_confirmation", quote_id),
        )


def _release(ref: CapabilityRef | None) -> list[RefRelease]:
    return [] if ref is None else [RefRelease(ref.thread_id, ref.kind, ref.ref_id, ref.message_id)]


def _refuse_payment(state: QuoteState, quote_id: str, param: str) -> Conflict:
    by = state.confirmation or state.payment
    seen = f" (message {by.message_id})" if by is not None else ""
    why = {
        AUTHORIZED: f"quote {quote_id!r} already has a payment awaiting its confirmation{seen}",
        PENDING: f"the payment of quote {quote_id!r} is pending{seen}",
        PAID: f"quote {quote_id!r} is paid{seen}, and a quote is paid once",
    }[state.name]
    again = "" if state.name == PAID else "; it can be paid again only if that payment fails"
    return Conflict(f"{param}: {why}{again}.", param=param, code="already_answered")


def _refuse_confirmation(state: QuoteState, quote_id: str, param: str) -> Conflict:
    by = state.confirmation or state.payment
    seen = f" (message {by.message_id})" if by is not None else ""
    why = {
        FAILED: f"the last payment of quote {quote_id!r} failed{seen}: nothing awaits a confirmation until it is "
        "paid again",
        PAID: f"the payment of quote {quote_id!r} is already confirmed{seen}",
    }[state.name]
    return Conflict(f"{param}: {why}.", param=param, code="already_answered")


@dataclass
class Correlation:
    """What a message's capability parts do to the thread's requests: refs to store, refs they replace
    (`releases`), and the `param` of the part behind each, for a refusal by the store."""

    refs: list[CapabilityRef] = field(default_factory=list)
    releases: list[RefRelease] = field(default_factory=list)
    params: dict[tuple[str, str], str] = field(default_factory=dict)

    def take(self, ref: CapabilityRef, param: str, releases: Sequence[RefRelease] = ()) -> None:
        self.refs.append(ref)
        self.params[(ref.kind, ref.ref_id)] = param
        for release in releases:
            self.releases.append(release)
            self.params[(release.kind, release.ref_id)] = param

    def extend(self, other: Correlation) -> None:
        self.refs += other.refs
        self.releases += other.releases
        self.params |= other.params

    def conflict(self, error: DuplicateRef) -> Conflict:
        """The 409 for a ref the store refused: a request answered (or moved on) meanwhile, or a reused id."""
        param = self.params.get((error.kind, error.ref_id))
        if error.kind in SLOT_OF:
            return Conflict(
                f"{error.ref_id!r} already has a {SLOT_OF[error.kind]} in this thread (another answer was accepted "
                "first: read the thread to see where its request stands).",
                param=param,
                code="already_answered",
            )
        id_key = next((rules[error.kind].id_key for rules in REQUESTS.values() if error.kind in rules), "id")
        return Conflict(
            f"A {error.kind} with id {error.ref_id!r} already exists in this thread.",
            param=param_path(param, [error.kind, id_key]) if param else None,
            code="duplicate_request_id",
        )


async def correlate(
    store: Store,
    thread_id: str,
    message_id: str,
    sender: str,
    parts: list[tuple[CapabilityPart, str]],
    where: str = "content",
) -> Correlation:
    """Check every answer against its request and where that request stands; return what to store. `where`
    is the content's place in the request body, for `param`."""
    done = Correlation()
    for part, capability_id in parts:
        kind, body, param = part.type or "", part.message.get(part.type or ""), f"{where}[{part.index}]"
        if not isinstance(body, dict):
            continue
        request_rule = REQUESTS.get(capability_id, {}).get(kind)
        if request_rule is not None and request_rule.id_key in body:
            done.take(CapabilityRef(thread_id, kind, str(body[request_rule.id_key]), message_id, sender, body), param)
        answer = ANSWERS.get(capability_id, {}).get(kind)
        if answer is None:
            continue
        key_param = param_path(param, [kind, answer.key])
        if body.get(answer.key) is None:
            raise Unprocessable(
                f"{key_param} is missing: a {kind} must name the {answer.request} it answers (the service "
                "correlates every answer with its request).",
                param=key_param,
                code="unknown_request",
            )
        request_id = str(body[answer.key])
        request = await _find(store, thread_id, answer.request, request_id)
        if request is None:
            raise Unprocessable(
                f"{key_param}: no {answer.request} with id {request_id!r} in this thread.",
                param=key_param,
                code="unknown_request",
            )
        if request.actor == sender:
            raise Unprocessable(
                f"{key_param}: '{sender}' cannot answer its own {answer.request}.",
                param=key_param,
                code="unknown_request",
            )
        kind_param = param_path(param, [kind])
        releases: list[RefRelease] = []
        # Where the request stands is read here (naming it in a refusal); the store's unique refs and
        # checked releases decide atomically when answers race.
        if answer.moves == ONCE:
            if await _find(store, thread_id, answer.slot, request_id) is not None:
                raise Conflict(
                    f"{kind_param}: {request_id!r} already has a {answer.slot} in this thread.",
                    param=kind_param,
                    code="already_answered",
                )
        else:
            state = await QuoteState.read(store, thread_id, request_id)
            if answer.moves == PAYS:
                if state.name not in (OPEN, FAILED):
                    raise _refuse_payment(state, request_id, kind_param)
                releases = _release(state.payment) + _release(state.confirmation)
            else:
                if state.name not in (AUTHORIZED, PENDING):
                    raise _refuse_confirmation(state, request_id, kind_param)
                releases = _release(state.confirmation)
        if answer.check is not None:
            answer.check(body, request.body, param)
        done.take(CapabilityRef(thread_id, answer.slot, request_id, message_id, sender, body), kind_param, releases)
    return done
