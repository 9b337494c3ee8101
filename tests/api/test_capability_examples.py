"""Each capability version's example messages, served from the registry (public, like its schema), so an
agent developer sees the shapes of quotes, payments and confirmations without reading the repository."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.test_capability_registration import order, register, registration
from tests.conftest import API

CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"


async def test_every_shipped_versions_examples_are_served_as_on_disk(api: API) -> None:
    anonymous = api.client(None)
    for capability in (await api.admin.get("/capabilities")).json()["data"]:
        assert sorted(capability["example_urls"]) == sorted(capability["versions"])
        for version, url in capability["example_urls"].items():
            response = await anonymous.get(url.removeprefix("/v1"))
            assert response.status_code == 200, (url, response.text)
            listed = response.json()
            assert (listed["object"], listed["capability"], listed["version"]) == ("list", capability["id"], version)
            directory = CAPABILITIES / capability["id"] / version / "examples"
            on_disk = {p.name: json.loads(p.read_text()) for p in directory.glob("*.json")}
            assert {e["name"]: e["message"] for e in listed["data"]} == on_disk
            for example in listed["data"]:
                assert example["object"] == "capability.example"
                assert example["type"] in example["message"], example


async def test_payment_examples_name_their_message_types(api: API) -> None:
    listed = (await api.client(None).get("/capabilities/aitp-01-payments/1.0.0/examples")).json()["data"]
    assert {"quote", "payment", "payment_confirmation"} <= {e["type"] for e in listed}


async def test_a_registered_versions_examples_are_served(api: API) -> None:
    response = await register(api, registration(examples=[order(), order(quantity=3)]))
    assert response.status_code == 201, response.text
    url = response.json()["example_urls"]["1.0.0"]
    assert url == "/v1/capabilities/acme-orders/1.0.0/examples"
    listed = (await api.client(None).get(url.removeprefix("/v1"))).json()["data"]
    assert [(e["type"], e["message"]) for e in listed] == [("order", order()), ("order", order(quantity=3))]


async def test_examples_of_an_unknown_capability_or_version_are_not_found(api: API) -> None:
    anonymous = api.client(None)
    missing = await anonymous.get("/capabilities/no-such/1.0.0/examples")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "capability_not_found")
    missing = await anonymous.get("/capabilities/aitp-02-decisions/9.9.9/examples")
    assert (missing.status_code, missing.json()["error"]["param"]) == (404, "version")
