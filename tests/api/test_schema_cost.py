"""Issue 14, items 1 and 2: what a registered schema may cost the server, through the HTTP surface.

- Registering compiles a schema into two validators, whatever its number of message types (it was one full
  copy of the document per type: a root object with N optional properties cost N^2).
- Compiling is tried first in a child process under a CPU-time and memory budget; over it, 422
  `schema_too_complex` and the server never compiles it itself.
- A schema that lets one message node be checked by too many subschemas (a `oneOf` recursing into itself:
  error reporting doubled per nesting level) is refused at registration, 422 `schema_too_complex`.
- A stored version that cannot be loaded is logged and set aside: the server starts and serves the others.
- An invalid message is refused with its first error only (is_valid decides; one error is built).

No timing thresholds: counts of compiled validators, refusal codes and what is (not) registered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import jsonschema_rs
import pytest

from aitp.app import create_app
from aitp.config import Settings
from aitp.services import registration
from aitp.store import Store
from aitp.store.capabilities import CapabilityVersionRecord
from tests.api.test_capability_registration import error_of, register, shop_thread
from tests.conftest import ADMIN_KEY, API

JSON_SCHEMA = "https://json-schema.org/draft/2020-12/schema"
WIDE_URL = "https://aitp.dev/capabilities/acme-wide/v1.0.0/schema.json"

RECURSIVE_ONE_OF = {
    "$schema": JSON_SCHEMA,
    "oneOf": [
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
    ],
}


def wide_schema(properties: int) -> dict[str, Any]:
    """A root object with `properties` optional properties: that many message types (p0, p1, ...)."""
    return {
        "$schema": JSON_SCHEMA,
        "type": "object",
        "properties": {f"p{i}": {"type": "object", "properties": {"x": {"type": "string"}}} for i in range(properties)},
    }


def capability(capability_id: str, schema: dict[str, Any], version: str = "1.0.0") -> dict[str, Any]:
    return {"id": capability_id, "version": version, "title": capability_id, "description": "cost", "schema": schema}


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every validator this process compiles from here on (the trial child's compiles are not counted)."""
    calls: list[Any] = []
    original = jsonschema_rs.validator_for
    monkeypatch.setattr(jsonschema_rs, "validator_for", lambda *a, **k: calls.append(a[0]) or original(*a, **k))
    return calls


# --- item 1: compile cost -----------------------------------------------------------------------


async def test_a_schema_with_many_message_types_compiles_two_validators(api: API, compiled: list[Any]) -> None:
    response = await register(api, capability("acme-wide", wide_schema(300)))
    assert response.status_code == 201, response.text
    assert len(compiled) == 2  # the whole schema, and one dispatch validator for all 300 types (was 301)

    user, tid = await shop_thread(api, WIDE_URL)
    posted = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps({"$schema": WIDE_URL, "p7": {}})})
    assert posted.status_code == 200, posted.text
    assert posted.json()["aitp"][0]["type"] == "p7"
    wrong = {"$schema": WIDE_URL, "p7": {"x": 5}}
    error = error_of(await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(wrong)}), 422)
    assert (error["code"], error["param"]) == (
        "invalid_capability_message",
        "content[0].p7.x",
    )  # against its own branch
    assert len(compiled) == 2  # validating compiles nothing


async def test_a_compile_over_the_time_budget_is_refused(api: API) -> None:
    # any compile is over this; the schema is one that takes tens of ms (the CPU clock may tick by 10 ms)
    api.settings_override(max_schema_compile_seconds=1e-9)
    error = error_of(await register(api, capability("acme-wide", wide_schema(2000))), 422)
    assert (error["code"], error["param"]) == ("schema_too_complex", "schema")
    assert "CPU time" in error["message"]
    assert (await api.admin.get("/capabilities/acme-wide")).status_code == 404


async def test_a_compile_over_the_memory_budget_is_refused_before_the_server_compiles_it(
    api: API, compiled: list[Any]
) -> None:
    """Ten 20-byte patterns whose regex programs take ~10 MB each: the child hits the limit, not the server."""
    api.settings_override(max_schema_compile_bytes=32 << 20)
    properties = {f"n{i}": {"type": "string", "pattern": f"(\\w{{100}}){{600}}x{i}"} for i in range(10)}
    schema = {"$schema": JSON_SCHEMA, "type": "object", "properties": properties}
    error = error_of(await register(api, capability("acme-regex", schema)), 422)
    assert (error["code"], error["param"]) == ("schema_too_complex", "schema")
    assert "memory" in error["message"]
    assert compiled == []  # never compiled in the server's own process
    assert (await api.admin.get("/capabilities/acme-regex")).status_code == 404


def _record(capability_id: str, version: str, schema: dict[str, Any]) -> CapabilityVersionRecord:
    return CapabilityVersionRecord(
        id=capability_id,
        version=version,
        schema=schema,
        examples=[],
        aliases=[],
        title=capability_id,
        description="stored",
        openapi_root=None,
        created_at=0,
        created_by="admin",
    )


async def test_a_stored_version_that_cannot_be_loaded_never_stops_the_server(
    store: Store, compiled: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Stored by an older or laxer server: too complex now, not even a version. The rest serves."""
    for record in (
        _record("acme-wide", "1.0.0", wide_schema(700)),
        _record("x-recursive", "1.0.0", RECURSIVE_ONE_OF),
        _record("x-malformed", "banana", {"type": "object"}),
    ):
        await store.capabilities.register(record)

    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)
    shipped = len(compiled)
    with caplog.at_level(logging.ERROR, logger="aitp.services.registration"):
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://restarted.test/v1",
                headers={"Authorization": f"Bearer {ADMIN_KEY}"},
            ) as admin,
        ):
            assert (await admin.get("/capabilities/acme-wide")).status_code == 200
            assert (await admin.get("/capabilities/x-recursive")).status_code == 404
            assert len(compiled) - shipped == 2  # the 700-type schema: two validators at start-up too
            # set aside once: syncing with the store again does not try (and compile) it again
            assert await registration.sync_registry(app.state.runtime) == 0
            assert (await admin.get("/capabilities/x-recursive")).status_code == 404
            assert len(compiled) - shipped == 2
            set_aside = app.state.runtime.registry.set_aside_versions()
            assert [str(ref) for ref in set_aside] == ["x-recursive v1.0.0"]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "x-recursive" in logged and "set aside" in logged and "banana" in logged


# --- item 2: refusing a message -----------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        RECURSIVE_ONE_OF,
        {  # the same with allOf: reporting the first error alone doubles per level
            "$schema": JSON_SCHEMA,
            "allOf": [
                {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"type": "string"}}},
                {"type": "object", "properties": {"a": {"$ref": "#"}}},
            ],
        },
        {  # no recursion: a chain of anyOf pairs, 2^12 checks of one value
            "$schema": JSON_SCHEMA,
            "$ref": "#/$defs/d0",
            "$defs": {
                **{
                    f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                    for i in range(12)
                },
                "d12": {"type": "string"},
            },
        },
    ],
    ids=["oneOf-recursion", "allOf-recursion", "anyOf-chain"],
)
async def test_a_schema_whose_error_reporting_would_explode_is_refused(api: API, schema: dict[str, Any]) -> None:
    error = error_of(await register(api, capability("x-hostile", schema)), 422)
    assert error["code"] == "schema_too_complex"
    assert error["param"].startswith("schema")
    assert "subschemas" in error["message"]
    assert (await api.admin.get("/capabilities/x-hostile")).status_code == 404


async def test_ordinary_recursive_schemas_are_accepted_and_refuse_a_deep_message_at_its_first_error(api: API) -> None:
    """Any JSON value but booleans, as a tree: recursion without multiplication is fine."""
    url = "https://aitp.dev/capabilities/acme-tree/v1.0.0/schema.json"
    schema = {
        "$schema": JSON_SCHEMA,
        "type": "object",
        "required": ["$schema", "tree"],
        "properties": {"$schema": {"type": "string"}, "tree": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "anyOf": [
                    {"type": ["string", "number", "null"]},
                    {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/node"}},
                ]
            }
        },
    }
    assert (await register(api, capability("acme-tree", schema))).status_code == 201
    user, tid = await shop_thread(api, url)
    deep: Any = {"leaf": [1, "two", None]}
    for _ in range(13):
        deep = {"a": [deep]}  # nested 29 levels (the limit is 32)
    posted = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps({"$schema": url, "tree": deep})})
    assert posted.status_code == 200, posted.text
    deep["a"][0]["a"][0]["a"] = [True]  # the one value this tree refuses
    refused = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps({"$schema": url, "tree": deep})})
    assert (error_of(refused, 422)["code"], error_of(refused, 422)["param"]) == (
        "invalid_capability_message",
        "content[0].tree",
    )


async def test_an_invalid_message_is_refused_with_its_first_error_only(api: API) -> None:
    """2,000 wrong options: one error is built and reported (all of them were built, five reported)."""
    decisions = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
    user, tid = await shop_thread(api, decisions)
    message = {"$schema": decisions, "request_decision": {"id": "r1", "options": list(range(2000))}}
    error = error_of(await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(message)}), 422)
    assert (error["code"], error["param"]) == ("invalid_capability_message", "content[0].request_decision.options[0]")
    assert error["message"].count("content[0].request_decision.options[") == 1  # one issue listed
