"""Schemathesis against the service's own OpenAPI document, on a real `aitp serve` process.

Every documented operation gets generated requests, valid and invalid ones, sent with the admin key; half
of them aim their path ids at real objects (a thread with a member and a message, a key, a capability) so
they reach the rules behind the 404s. Every answer must be documented: no 5xx, a documented status code,
the documented content type and headers, a body that matches the documented schema; and a request that
breaks the documented schema must be refused.

Not checked: that every schema-valid request is accepted. The document cannot say everything the
service enforces (who is a member of a thread, which role an actor writes as, what a capability message
must contain), so such a request may rightly get a 400 or 422.

CI runs a bounded number of examples per operation, derandomized. For a long local run with fresh random
examples: `AITP_FUZZ_EXAMPLES=1000 .venv/bin/python -m pytest tests/test_openapi_fuzz.py` (see docs/development.md).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from jsonschema import Draft202012Validator
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from aitp.app import create_app
from aitp.config import Settings
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

EXAMPLES = int(os.environ.get("AITP_FUZZ_EXAMPLES", "0")) or None
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    unsupported_method,
    allow_header_conformance,
]
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("fuzz")
    # No rate limit: the fuzzer sends far more than one key's fair share, and a 429 would end its exploring.
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_RATE_LIMIT": "0"}
    process = start_server(f"sqlite:///{directory / 'fuzz.db'}", directory / "serve.log", env)
    try:
        yield process
    finally:
        process.stop()
        assert "unhandled error" not in process.output(), process.output()


class RealObjects:
    """Objects for the fuzzer to aim at: one set made up front, and a fresh set for each DELETE."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.client = httpx.Client(base_url=f"{server.base_url}/v1", headers=AUTH)
        self.ids = self.create()

    def create(self) -> dict[str, str]:
        """Path parameter name → the id of a real object."""
        thread = self.client.post(
            "/threads", json={"actors": [{"id": "shop", "capabilities": [DECISIONS]}], "messages": ["Red or blue?"]}
        ).json()
        message = self.client.get(f"/threads/{thread['id']}/messages").json()["data"][0]
        key = self.client.post("/keys", json={"actor": "shop"}).json()
        return {
            "thread_id": thread["id"],
            "message_id": message["id"],
            "actor_id": "shop",
            "key_id": key["id"],
            "capability_id": "aitp-02-decisions",
            "version": "1.0.0",
        }

    def aim(self, case: Case) -> None:
        """Point the path ids of half the cases at real objects (which half follows from the case, so a
        failing example replays the same); never where the path was generated to be invalid."""
        if not case.path_parameters or (case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)):
            return
        if zlib.crc32(repr(sorted(case.path_parameters.items())).encode()) % 2:
            return
        ids = self.create() if case.method.upper() == "DELETE" else self.ids
        for name in case.path_parameters:
            if name in ids:
                case.path_parameters[name] = ids[name]


@pytest.fixture(scope="module")
def real_objects(server: ServerProcess) -> Iterator[RealObjects]:
    objects = RealObjects(server)
    yield objects
    objects.client.close()


# The document the server process serves: built from the same routes and models without opening a store
# (`test_the_server_serves_this_document` checks). Loaded at import because schemathesis's lazy
# `from_fixture` does not work with pytest 9 (it sets `request.node._nodeid`, gone from pytest).
DOCUMENT = create_app(Settings(store_url="sqlite:///never-opened.db")).openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES or 10,
    derandomize=EXAMPLES is None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_every_answer_is_documented(case: Case, real_objects: RealObjects) -> None:
    real_objects.aim(case)
    # A case generated to break the documented headers (the bearer key) is sent as generated: it must get a 401.
    breaks_headers = case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)
    headers = None if breaks_headers else AUTH
    case.call_and_validate(base_url=real_objects.server.base_url, headers=headers, checks=CHECKS)


def test_the_fuzzer_aims_at_real_objects(real_objects: RealObjects) -> None:
    """The ids aimed at are real, so the aimed half of the cases gets past the 404s."""
    ids = real_objects.ids
    assert real_objects.client.get(f"/threads/{ids['thread_id']}/messages/{ids['message_id']}").status_code == 200
    assert real_objects.client.get(f"/capabilities/{ids['capability_id']}/{ids['version']}/schema.json").is_success


def test_the_server_serves_this_document(real_objects: RealObjects) -> None:
    assert httpx.get(f"{real_objects.server.base_url}/openapi.json").json() == DOCUMENT


# What the document says a request may be, against what the server answers it: each body below is sent to the
# server, and the document must call it valid exactly when the server accepts it (issue 28: generated clients
# sent metadata values that are not strings, items without `role`, declarations and avatars the server refuses).
def body_schema(method: str, path: str) -> Draft202012Validator:
    """A validator of the JSON body the document gives `method path`, its `$ref`s resolved in the document."""
    pointer = "/".join(("#/paths", path.replace("~", "~0").replace("/", "~1"), method.lower()))
    pointer += "/requestBody/content/application~1json/schema"
    return Draft202012Validator({**DOCUMENT, "$ref": pointer})


CAPABILITY_URL = DECISIONS
BODIES: list[tuple[str, str, dict[str, object], bool]] = [
    # (method, path, body, accepted)
    ("POST", "/v1/threads", {"metadata": {"topic": "shoes"}}, True),
    ("POST", "/v1/threads", {"metadata": {"topic": 1}}, False),
    ("POST", "/v1/threads", {"metadata": {"topic": ["a"]}}, False),
    ("POST", "/v1/threads", {"metadata": {"actors": [{"id": "shop"}]}}, True),
    ("POST", "/v1/threads", {"metadata": {"": "x"}}, False),
    ("POST", "/v1/threads/{thread_id}", {"metadata": {"topic": "shoes"}}, True),
    ("POST", "/v1/threads/{thread_id}", {"metadata": {"topic": True}}, False),
    ("POST", "/v1/threads/{thread_id}/messages", {"content": "hi", "metadata": {"to": ["shop"]}}, True),
    ("POST", "/v1/threads/{thread_id}/messages", {"content": "hi", "metadata": {"n": 2}}, False),
    ("POST", "/v1/threads/{thread_id}/messages/{message_id}", {"metadata": {"seen": "yes"}}, True),
    ("POST", "/v1/threads/{thread_id}/messages/{message_id}", {"metadata": {"seen": {"a": 1}}}, False),
    ("POST", "/v1/conversations", {"metadata": {"topic": "shoes"}}, True),
    ("POST", "/v1/conversations", {"metadata": {"topic": 3}}, False),
    ("POST", "/v1/conversations/{conversation_id}", {"metadata": {"topic": "boots"}}, True),
    ("POST", "/v1/conversations/{conversation_id}", {"metadata": {"topic": None}}, False),
    ("POST", "/v1/conversations/{conversation_id}/items", {"items": [{"role": "user", "content": "hi"}]}, True),
    ("POST", "/v1/conversations/{conversation_id}/items", {"items": [{"content": "hi"}]}, False),
    ("POST", "/v1/conversations/{conversation_id}/items", {"items": [{"role": "robot", "content": "hi"}]}, False),
    ("POST", "/v1/conversations/{conversation_id}/items", {"items": [{"role": "user"}]}, False),
    ("POST", "/v1/conversations/{conversation_id}/items", {"items": [{"role": "user", "content": []}]}, False),
    *(
        ("POST", "/v1/threads/{thread_id}/actors", {"id": "shop", "capabilities": [declaration]}, True)
        for declaration in (
            CAPABILITY_URL,
            {"schema": CAPABILITY_URL},
            {"$schema": CAPABILITY_URL},
            {"capability": "aitp-02-decisions", "versions": ">=1.0.0"},
        )
    ),
    *(
        ("POST", "/v1/threads/{thread_id}/actors", {"id": "shop", "capabilities": [declaration]}, False)
        for declaration in (
            "",
            {},
            {"url": CAPABILITY_URL},
            {"schema": 1},
            {"capability": "aitp-02-decisions", "versions": ">=1", "extra": 1},
            {"capability": "", "versions": ">=1"},
            ["x"],
        )
    ),
    *(
        ("PUT", "/v1/actors/me/profile", {"avatar_url": avatar}, True)
        for avatar in ("https://example.com/a.png", "HTTP://example.com/a.png", "", "  ")
    ),
    *(
        ("PUT", "/v1/actors/me/profile", {"avatar_url": avatar}, False)
        for avatar in ("ftp://example.com/a.png", "javascript:alert(1)", "example.com/a.png", "https://", "data:x")
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "accepted"), BODIES)
def test_the_document_says_which_bodies_the_server_accepts(
    method: str, path: str, body: dict[str, object], accepted: bool, real_objects: RealObjects
) -> None:
    client, ids = real_objects.client, real_objects.ids
    if "_id}" in path:  # a thread of its own (a conversation too), its creator the admin
        thread = client.post("/threads", json={"actors": [{"id": "shop"}], "messages": ["Red or blue?"]}).json()
        ids = {**ids, "thread_id": thread["id"], "conversation_id": thread["id"]}
        ids["message_id"] = client.get(f"/threads/{thread['id']}/messages").json()["data"][0]["id"]
    answer = client.request(method, path.removeprefix("/v1").format(**ids), json=body)
    assert answer.is_success is accepted, answer.text
    assert body_schema(method, path).is_valid(body) is accepted
    if not accepted:
        assert answer.status_code == 400, answer.text  # refused naming the field, as before: only the document changed
