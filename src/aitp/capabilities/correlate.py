"""Correlation: an answer must answer a real request of this thread, with what was offered.

AITP-02: a `decision` names a `request_decision` from another actor; chosen option ids are among
the offered options or their variants; `radio` and `confirmation` take exactly one option; a
request is answered at most once. AITP-03: a `data` reply names a `request_data`; for inline
forms every required field is present and non-empty and unknown field ids are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aitp.capabilities.messages import CapabilityPart
from aitp.errors import Conflict, Unprocessable
from aitp.store.base import CapabilityRef, DuplicateRef, Store

# Capabilities whose messages correlate, and per answer type: (request kind, key of the request id)
CORRELATED = ("aitp-02-decisions", "aitp-03-data-request")
ANSWERS = {"decision": ("request_decision", "request_decision_id"), "data": ("request_data", "request_data_id")}
REQUESTS = ("request_decision", "request_data")
SINGLE_CHOICE = ("radio", "confirmation")


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


async def correlate(
    store: Store, thread_id: str, message_id: str, sender: str, parts: list[tuple[CapabilityPart, str]]
) -> list[CapabilityRef]:
    """Check every answer against its request; return the refs to store with the message."""
    refs = []
    for part, capability_id in parts:
        if capability_id not in CORRELATED:
            continue
        kind, body, param = part.type, part.message.get(part.type or ""), f"content[{part.index}]"
        if not isinstance(body, dict):
            continue
        if kind in REQUESTS and "id" in body:
            refs.append(CapabilityRef(thread_id, kind, str(body["id"]), message_id, sender, body))
        elif kind in ANSWERS:
            request_kind, key = ANSWERS[kind]
            request_id = str(body.get(key))
            request = await store.get_ref(thread_id, request_kind, request_id)
            if request is None:
                raise Unprocessable(
                    f"{param}: no {request_kind} with id {request_id!r} in this thread.",
                    param=f"/{kind}/{key}",
                    code="unknown_request",
                )
            if request.actor == sender:
                raise Unprocessable(
                    f"{param}: '{sender}' cannot answer its own {request_kind}.",
                    param=f"/{kind}/{key}",
                    code="unknown_request",
                )
            (_check_decision if kind == "decision" else _check_data)(body, request.body, param)
            refs.append(CapabilityRef(thread_id, kind, request_id, message_id, sender, body))
    return refs


def duplicate_error(error: DuplicateRef) -> Conflict:
    """The 409 for a ref that already exists: an answered request, or a reused request id."""
    if error.kind in ANSWERS:
        return Conflict(
            f"Request {error.ref_id!r} has already been answered.", param=f"/{error.kind}", code="already_answered"
        )
    return Conflict(
        f"A {error.kind} with id {error.ref_id!r} already exists in this thread.",
        param=f"/{error.kind}/id",
        code="duplicate_request_id",
    )
