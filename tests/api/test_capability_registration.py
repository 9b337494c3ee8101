"""POST /v1/capabilities: agent developers register capabilities and new versions of them.

A registered version is checked (valid schema, valid examples, free aliases, semver kept within a major),
immutable once published, stored in the store, and usable at once by threads: declared, negotiated and
validated like a shipped one, on this instance and on any other instance sharing the store.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import httpx
import pytest

from aitp.app import create_app
from aitp.config import Settings
from aitp.store import Store
from tests.conftest import ADMIN_KEY, API

ORDERS_URL = "https://aitp.dev/capabilities/acme-orders/v1.0.0/schema.json"


def order_schema(**order_properties: Any) -> dict[str, Any]:
    """acme-orders: one message type, `order`, with an item and a quantity (+ extra properties given)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["$schema", "order"],
        "properties": {
            "$schema": {"type": "string"},
            "order": {
                "type": "object",
                "required": ["item", "quantity"],
                "properties": {
                    "item": {"type": "string", "minLength": 1},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
                    **order_properties,
                },
                "additionalProperties": False,
            },
        },
    }


def order(url: str = ORDERS_URL, **fields: Any) -> dict[str, Any]:
    return {"$schema": url, "order": {"item": "socks", "quantity": 2, **fields}}


def registration(version: str = "1.0.0", **changes: Any) -> dict[str, Any]:
    body = {
        "id": "acme-orders",
        "version": version,
        "title": "Acme orders",
        "description": "An order for the Acme shop",
        "schema": order_schema(),
        "examples": [order()],
    }
    return {**body, **changes}


async def register(api: API, body: dict[str, Any], client: httpx.AsyncClient | None = None) -> httpx.Response:
    return await (client or api.admin).post("/capabilities", json=body)


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["error"]


async def shop_thread(api: API, url: str = ORDERS_URL) -> tuple[httpx.AsyncClient, str]:
    user = await api.actor("user.near")
    await api.key_for("shop.near")
    body = {"actors": [{"id": "user.near", "capabilities": [url]}, {"id": "shop.near", "capabilities": [url]}]}
    thread = await user.post("/threads", json=body)
    assert thread.status_code == 200, thread.text
    return user, thread.json()["id"]


# --- registering and using ---------------------------------------------------------------------


async def test_a_registered_capability_is_listed_served_and_validates_messages(api: API) -> None:
    response = await register(api, registration())
    assert response.status_code == 201, response.text
    capability = response.json()
    assert capability["id"] == "acme-orders" and capability["title"] == "Acme orders"
    assert capability["versions"] == ["1.0.0"] and capability["latest"] == "1.0.0"
    assert capability["schema_urls"] == {"1.0.0": ORDERS_URL}

    listed = (await api.admin.get("/capabilities")).json()["data"]
    assert "acme-orders" in [c["id"] for c in listed]
    schema = await api.client(None).get("/capabilities/acme-orders/1.0.0/schema.json")  # public
    assert schema.status_code == 200 and schema.json() == order_schema()

    user, tid = await shop_thread(api)
    table = (await user.get(f"/threads/{tid}/capabilities")).json()
    assert [(c["id"], c["version"]) for c in table["data"]] == [("acme-orders", "1.0.0")]
    posted = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(order())})
    assert posted.status_code == 200, posted.text
    assert posted.json()["aitp"][0]["capability"] == "acme-orders"
    assert posted.json()["aitp"][0]["type"] == "order"

    refused = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(order(quantity=0))})
    error = error_of(refused, 422)
    assert (error["code"], error["param"]) == ("invalid_capability_message", "content[0].order.quantity")


async def test_an_openapi_document_registers_with_its_root_component(api: API) -> None:
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Acme pings", "version": "1.0.0"},
        "paths": {},
        "components": {
            "schemas": {
                "Protocol": {"anyOf": [{"$ref": "#/components/schemas/Ping"}]},
                "Ping": {
                    "type": "object",
                    "required": ["ping"],
                    "properties": {"$schema": {"type": "string"}, "ping": {"type": "string", "nullable": True}},
                },
            }
        },
    }
    url = "https://aitp.dev/capabilities/acme-pings/v1.0.0/schema.json"
    body = {"id": "acme-pings", "version": "1.0.0", "schema": document, "openapi_root": "Protocol"}
    body["examples"] = [{"$schema": url, "ping": None}]
    response = await register(api, body)
    assert response.status_code == 201, response.text

    user, tid = await shop_thread(api, url)
    posted = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps({"$schema": url, "ping": 3})})
    assert error_of(posted, 422)["param"] == "content[0].ping"


async def test_a_key_with_the_capabilities_write_scope_may_register_and_others_may_not(api: API) -> None:
    plain = await api.actor("dev.acme")
    error = error_of(await register(api, registration(), plain), 403)
    assert error["code"] == "missing_scope"

    scoped = api.client(await api.key_for("dev.acme", scopes=["capabilities:write"]))
    assert (await register(api, registration(), scoped)).status_code == 201
    assert error_of(await register(api, registration(), api.client(None)), 401)["code"] == "missing_api_key"


# --- immutability ------------------------------------------------------------------------------


async def test_published_versions_are_immutable_and_identical_reposts_are_harmless(api: API) -> None:
    assert (await register(api, registration())).status_code == 201
    again = await register(api, registration())
    assert again.status_code == 200 and again.json()["versions"] == ["1.0.0"]

    changed = registration(schema=order_schema(colour={"type": "string"}))
    error = error_of(await register(api, changed), 409)
    assert (error["code"], error["param"]) == ("capability_version_exists", "version")
    other_examples = registration(examples=[order(quantity=5)])
    assert error_of(await register(api, other_examples), 409)["code"] == "capability_version_exists"


async def test_a_shipped_version_cannot_be_overwritten(api: API) -> None:
    body = {"id": "aitp-02-decisions", "version": "1.0.0", "schema": {"type": "object"}}
    assert error_of(await register(api, body), 409)["code"] == "capability_version_exists"


# --- checks on the schema, examples and aliases ------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "status", "code", "param"),
    [
        ({"schema": {"type": "objekt"}}, 422, "invalid_schema", "schema.type"),
        ({"schema": {"properties": {"a": {"minLength": -1}}}}, 422, "invalid_schema", "schema.properties.a.minLength"),
        ({"schema": {"$ref": "#/$defs/missing"}}, 422, "invalid_schema", "schema"),
        ({"examples": [order(), order(quantity="two")]}, 422, "invalid_example", "examples[1].order.quantity"),
        ({"examples": [order(), {"$schema": ORDERS_URL}]}, 422, "invalid_example", "examples[1]"),
        ({"aliases": ["ftp://acme.example/orders.json"]}, 400, "invalid_alias", "aliases[0]"),
        ({"aliases": ["https://aitp.dev/v1/decisions/schema.json"]}, 409, "alias_taken", "aliases[0]"),
        (
            {"aliases": ["https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"]},
            409,
            "alias_taken",
            "aliases[0]",
        ),
        ({"version": "1.0"}, 400, "invalid_value", "version"),
        ({"id": "Acme Orders"}, 400, "invalid_value", "id"),
        ({"schema": None}, 400, "invalid_value", "schema"),
        ({"colour": "red"}, 400, "unknown_parameter", "colour"),
    ],
    ids=lambda value: json.dumps(value)[:60] if isinstance(value, dict) else None,
)
async def test_a_bad_registration_is_refused_naming_the_field(
    api: API, changes: dict[str, Any], status: int, code: str, param: str
) -> None:
    error = error_of(await register(api, registration(**changes)), status)
    assert (error["code"], error["param"]) == (code, param), error
    assert (await api.admin.get("/capabilities/acme-orders")).status_code == 404  # nothing half-registered


async def test_missing_required_fields_are_named(api: API) -> None:
    error = error_of(await register(api, {"id": "acme-orders", "version": "1.0.0"}), 400)
    assert error["param"] == "schema"


class _CountingServer:
    """An HTTP server that counts the requests it receives (to prove nothing was fetched)."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                outer.hits += 1
                body = b'{"type": "string"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def counting_server() -> Iterator[_CountingServer]:
    server = _CountingServer()
    yield server
    server.server.shutdown()


async def test_a_schema_with_a_remote_ref_is_refused_and_nothing_is_fetched(
    api: API, counting_server: _CountingServer
) -> None:
    schema = order_schema(item={"$ref": f"{counting_server.url}/item.json"})
    error = error_of(await register(api, registration(schema=schema)), 422)
    assert error["code"] == "invalid_schema"
    assert "remote $ref" in error["message"]
    assert counting_server.hits == 0


async def test_patterns_run_on_a_linear_time_engine(api: API) -> None:
    """`^(a+)+$` backtracks exponentially in Python's `re`; here the refusal comes back at once."""
    catastrophic = registration(schema=order_schema(note={"type": "string", "pattern": "^(a+)+$"}))
    assert (await register(api, catastrophic)).status_code == 201
    user, tid = await shop_thread(api)
    evil = order(note="a" * 40 + "!")
    error = error_of(await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(evil)}), 422)
    assert error["param"] == "content[0].order.note"

    lookaround = registration("2.0.0", schema=order_schema(note={"type": "string", "pattern": "^(?=a)a+$"}))
    error = error_of(await register(api, lookaround), 422)
    assert error["code"] == "invalid_schema" and "cannot compile" in error["message"]


# --- semver ------------------------------------------------------------------------------------


async def test_a_minor_version_must_accept_what_its_predecessor_accepted(api: API) -> None:
    assert (await register(api, registration())).status_code == 201

    stricter = copy.deepcopy(order_schema(colour={"type": "string", "enum": ["red", "blue"]}))
    stricter["properties"]["order"]["required"].append("colour")
    stricter["properties"]["order"]["properties"]["quantity"]["maximum"] = 10
    error = error_of(await register(api, registration("1.1.0", schema=stricter, examples=[])), 422)
    assert error["code"] == "breaking_change"
    assert error["param"].startswith("schema.properties.order")
    assert "colour" in error["message"] and "maximum" in error["message"]
    assert "new major version (2.0.0)" in error["message"]

    assert (await register(api, registration("2.0.0", schema=stricter, examples=[]))).status_code == 201
    wider = order_schema(colour={"type": "string"})
    response = await register(api, registration("1.1.0", schema=wider))
    assert response.status_code == 201, response.text
    assert response.json()["versions"] == ["1.0.0", "1.1.0", "2.0.0"]


async def test_a_version_slotted_between_two_must_fit_both_neighbours(api: API) -> None:
    assert (await register(api, registration())).status_code == 201
    wider = order_schema(colour={"type": "string"}, size={"type": "string"})
    assert (await register(api, registration("1.2.0", schema=wider))).status_code == 201

    # accepts less than 1.0.0: refused against its predecessor
    narrower = copy.deepcopy(order_schema())
    narrower["properties"]["order"]["properties"]["quantity"]["maximum"] = 5
    assert error_of(await register(api, registration("1.1.0", schema=narrower)), 422)["code"] == "breaking_change"
    # accepts more than 1.2.0 does: refused because 1.2.0 would then break it
    widest = order_schema(colour={"type": "string"}, size={"type": "string"}, gift={"type": "boolean"})
    error = error_of(await register(api, registration("1.1.0", schema=widest)), 422)
    assert (error["code"], error["param"]) == ("breaking_change", "version")
    middle = order_schema(colour={"type": "string"})
    assert (await register(api, registration("1.1.0", schema=middle))).status_code == 201


# --- aliases -----------------------------------------------------------------------------------


async def test_an_alias_names_the_version_it_was_registered_with(api: API) -> None:
    alias = "https://acme.example/schemas/orders.json"
    response = await register(api, registration(aliases=[alias], examples=[order(alias)]))
    assert response.status_code == 201, response.text
    assert response.json()["aliases"] == [{"url": alias, "version": "1.0.0"}]

    user, tid = await shop_thread(api, alias)
    posted = await user.post(f"/threads/{tid}/messages", json={"content": json.dumps(order(alias))})
    assert posted.status_code == 200, posted.text
    assert posted.json()["aitp"][0]["schema"] == alias

    taken = registration("1.1.0", aliases=[alias], examples=[])
    assert error_of(await register(api, taken), 409)["code"] == "alias_taken"


# --- persistence and other instances -----------------------------------------------------------


async def test_another_instance_on_the_same_store_knows_a_registration_at_first_use(api: API, store: Store) -> None:
    assert (await register(api, registration(aliases=["https://acme.example/o.json"]))).status_code == 201

    other = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY), store=store)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=other),
        base_url="http://other.test/v1",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    ) as admin:
        schema = await admin.get("/capabilities/acme-orders/1.0.0/schema.json")
        assert schema.status_code == 200, schema.text
        assert schema.json() == order_schema()
        assert (await admin.get("/capabilities/acme-orders")).json()["aliases"] == [
            {"url": "https://acme.example/o.json", "version": "1.0.0"}
        ]
        # and it refuses to publish a different 1.0.0 there too
        changed = registration(schema=order_schema(colour={"type": "string"}))
        assert error_of(await admin.post("/capabilities", json=changed), 409)["code"] == "capability_version_exists"
