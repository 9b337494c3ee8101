"""The core refuses with status, code, param and message only; each binding renders that.

- Over HTTP (both OpenAI faces) a refusal is the OpenAI envelope: its `type` is derived from the status, and
  what a refusal adds (`details`, e.g. `unsupported_by`) rides beside the four fields.
- A refusal replayed from an idempotency record (a WebSocket post sent again) is the envelope first sent.
- No core refusal tells a client which URL of which face to call: the core's messages say what, not where.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.version import Version

from aitp.bindings.http.errors import envelope, error_type
from aitp.bindings.http.idempotency import StoredRefusal
from aitp.capabilities.messages import CapabilityNotSupported, CapabilityPart
from aitp.capabilities.registry import CapabilityRef
from aitp.errors import (
    APIError,
    Conflict,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServiceUnavailable,
    Unauthenticated,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "aitp"
OUTSIDE_THE_CORE = ("bindings", "server", "client", "app.py", "cli.py", "cli_identity.py", "command.py")


def test_the_core_error_has_no_face_of_its_own() -> None:
    error = InvalidRequest("Invalid 'x'.", param="x")
    assert (error.status_code, error.code, error.param, error.message) == (400, "invalid_request", "x", "Invalid 'x'.")
    assert not hasattr(error, "type")
    assert not hasattr(error, "envelope")


@pytest.mark.parametrize(
    ("error", "openai_type"),
    [
        (InvalidRequest("x"), "invalid_request_error"),
        (Unauthenticated("x"), "authentication_error"),
        (PermissionDenied("x"), "permission_error"),
        (NotFound("x"), "invalid_request_error"),
        (Conflict("x"), "invalid_request_error"),
        (RateLimited("x", retry_after=3), "rate_limit_error"),
        (ServiceUnavailable("x"), "server_error"),
    ],
)
def test_over_http_the_type_follows_from_the_status(error: APIError, openai_type: str) -> None:
    assert envelope(error) == {
        "error": {"message": "x", "type": openai_type, "param": None, "code": error.code},
    }
    assert error_type(error.status_code) == openai_type


def test_an_unexpected_status_is_typed_by_its_class() -> None:
    assert (error_type(418), error_type(502)) == ("invalid_request_error", "server_error")


def not_supported() -> CapabilityNotSupported:
    ref = CapabilityRef("aitp-01-decisions", Version("1.0.0"))
    part = CapabilityPart(0, "https://example.test/schema.json", {"$schema": "https://example.test/schema.json"})
    return CapabilityNotSupported(
        "content[0]: 'bob' cannot read it.",
        param="content[0].$schema",
        sender="alice",
        part=part,
        ref=ref,
        unsupported_by=["bob"],
    )


def test_what_a_refusal_adds_rides_beside_the_four_fields() -> None:
    assert envelope(not_supported()) == {
        "error": {
            "message": "content[0]: 'bob' cannot read it.",
            "type": "invalid_request_error",
            "param": "content[0].$schema",
            "code": "capability_not_supported",
            "unsupported_by": ["bob"],
        }
    }


def test_a_replayed_refusal_is_the_envelope_first_sent() -> None:
    first = envelope(not_supported())
    replayed = StoredRefusal(422, first)
    assert (replayed.status_code, envelope(replayed)) == (422, first)


def core_modules() -> list[Path]:
    return [
        path
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] not in OUTSIDE_THE_CORE and "pytest_plugin" not in path.name
    ]


def raised_texts(path: Path) -> list[str]:
    """The text of the first argument of every class the module builds (an error's message among them)."""
    texts = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id[:1].isupper():
            for argument in node.args[:1]:
                texts.extend(
                    c.value for c in ast.walk(argument) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
    return texts


def test_no_core_message_names_a_url_of_a_face() -> None:
    named = {
        f"{path.relative_to(SRC)}: {text}"
        for path in core_modules()
        for text in raised_texts(path)
        if "/v1/" in text or text.rstrip().startswith(("POST /", "GET /"))
    }
    assert named == set()
