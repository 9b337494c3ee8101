"""A JSON-RPC request read once, before anything acts on it: what the SDK's dispatcher would answer wrong.

- a Content-Type other than `application/json` (parameters such as charset allowed), or none: HTTP 415,
  as the A2A spec requires JSON-RPC requests to be `application/json` (the other faces refuse such a body
  too, with a 400: it is not the object they take), in JSON-RPC's shape, -32600 with id null and
  `data.param` "Content-Type", so a JSON-RPC client can still read it;
- a body that is not JSON (invalid UTF-8, a UTF-16/32 byte order mark, nesting past orjson's 1024 levels,
  NaN, an integer beyond 64 bits): -32700 Parse error, id null. The SDK read these with Python's `json`:
  invalid UTF-8, a UTF-16 body and deep nesting were -32603 with a traceback in the log, the rest were
  read; a UTF-8 byte order mark is ignored, as on the Threads face (RFC 8259 lets parsers ignore it);
- JSON that is not a request object: a batch (an array) -32600 "Batch requests are not supported", as the
  SDK says of the batches it can read; any other value -32600 (JSON-RPC 2.0: valid JSON, not a Request);
- a notification (a valid request without an `id` member): not executed and not answered (JSON-RPC 2.0,
  "The Server MUST NOT reply to a Notification"): HTTP 204, no body. The SDK's dispatcher ran it and
  answered with id null; a request with `"id": null` is not a notification and is still answered;
- params over a bound (`limits`): -32602 naming the field, before protobuf parses them;
- an ill-formed request object (no `method`, an `id` that is an object, a member JSON-RPC has not): the SDK's
  dispatcher answers it (-32600, its words), and its traceback for it is dropped from the log
  (`ClientMistakes`).

What passes is left in the request as its parsed JSON (`Request.json()` returns it), so SendMessage's
path, the params check and the dispatcher read this parse and no other. None of these refusals is logged:
the access log has the request, and a hostile client cannot fill the log.
"""

from __future__ import annotations

import codecs
import gc
import logging
from typing import Any

import orjson
from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.errors import InvalidRequestError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from aitp.bindings.a2a import limits
from aitp.bindings.a2a.errors import a2a_error
from aitp.config import Settings
from aitp.errors import InvalidRequest

FIELDS = frozenset({"jsonrpc", "method", "params", "id"})  # a JSON-RPC 2.0 request's members


def declares_json(content_type: str | None) -> bool:
    """`application/json`, with any parameters (charset)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


def request_id(body: Any) -> str | int | None:
    """The id to answer with: the request's when it is one JSON-RPC allows (a string or an integer)."""
    found = body.get("id") if type(body) is dict else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def is_notification(body: dict[str, Any]) -> bool:
    """A well-formed request without an `id` member (an ill-formed one is answered: its error, id null)."""
    return (
        "id" not in body
        and body.keys() <= FIELDS
        and body.get("jsonrpc") == "2.0"
        and type(body.get("method")) is str
        and type(body.get("params", {})) in (dict, list)
    )


# The SDK's dispatcher logs a request object it cannot read (no `method`, an `id` that is an object, a member
# JSON-RPC does not have) with `logger.exception`: ~1.7 KB of traceback at ERROR for a client's 30-byte mistake,
# which it then answers -32600 and logs again as one WARNING line. Only that ERROR record is dropped. Its words
# are the SDK's (a2a-sdk <2): tests/bindings/test_a2a_limits.py fails if they change and the traceback returns.
SDK_DISPATCHER_LOG = "a2a.server.routes.jsonrpc_dispatcher"
SDK_BASE_REQUEST_FAILURE = "Failed to validate base JSON-RPC request"


class ClientMistakes(logging.Filter):
    """Drops the SDK dispatcher's traceback for a client's ill-formed request object."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != SDK_BASE_REQUEST_FAILURE


def quiet_sdk_dispatcher() -> None:
    """Install `ClientMistakes` on the SDK dispatcher's logger (once, however many apps are made)."""
    logger = logging.getLogger(SDK_DISPATCHER_LOG)
    if not any(isinstance(f, ClientMistakes) for f in logger.filters):
        logger.addFilter(ClientMistakes())


def _error(request_id: str | int | None, error: Any, status_code: int = 200) -> Response:
    return JSONResponse(build_error_response(request_id, error), status_code=status_code)


async def read(request: Request, settings: Settings) -> Response | None:
    """The answer to a request refused or not to be answered; None when it is to be served (its parsed JSON
    is then what `request.json()` returns)."""
    raw = await request.body()  # first: a body over the limit is a 413 (`aitp.bindings.http.context`), any type
    if not declares_json(request.headers.get("content-type")):
        error = InvalidRequestError(
            message="A2A JSON-RPC requests must be sent as Content-Type: application/json.",
            data={"param": "Content-Type"},
        )
        return _error(None, error, 415)
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        body = _parse(raw)
    except orjson.JSONDecodeError as exc:
        return _error(None, JSONParseError(message=f"Parse error: {_reason(raw, exc)}."))
    if type(body) is not dict:
        message = "Batch requests are not supported" if type(body) is list else "A JSON-RPC request is an object"
        return _error(None, InvalidRequestError(message=message))
    if is_notification(body):
        return Response(status_code=204)
    try:
        limits.check_params(body.get("method"), body.get("params"), settings)
    except InvalidRequest as refusal:
        return _error(request_id(body), a2a_error(refusal))
    request._json = body  # Starlette's cache of `json()`: every reader after this sees this parse
    return None


def _parse(raw: bytes) -> Any:
    """orjson's parse, without the cyclic collector's passes meanwhile: a body of tens of thousands of small
    objects (parts) otherwise set off hundreds of them, some over the whole heap, and took 2-4 times as long
    (bench/a2a_hostile.py). The objects are looked at once, by the next collection."""
    if not gc.isenabled():
        return orjson.loads(raw)
    gc.disable()
    try:
        return orjson.loads(raw)
    finally:
        gc.enable()


def _reason(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why the body is not JSON, in a few words (orjson's message, without the body)."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)):  # (UTF-32 LE's: UTF-16 LE's)
        return "the body must be UTF-8 (it starts with a UTF-16 or UTF-32 byte order mark)"
    if exc.msg == "depth limit exceeded":
        return "nested too deeply"
    return f"{exc.msg[:120]} at character {exc.pos}"
