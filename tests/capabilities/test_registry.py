"""The capability registry: URL forms and aliases, listing, loading rules, OpenAPI conversion, engine settings."""

from __future__ import annotations

import copy
import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from packaging.version import Version

from aitp.capabilities import registry as registry_module
from aitp.capabilities.registry import (
    CapabilityLoadError,
    CapabilityRef,
    Registry,
    SchemaIssue,
    UnknownCapabilityVersion,
    compile_schema,
    default_directory,
    message_branches,
)
from aitp.capabilities.schema_formats import (
    JSON_SCHEMA_2020_12,
    SchemaFormatError,
    convert_openapi30_schema,
    detect_format,
    find_openapi_root,
    is_openapi,
    to_json_schema,
)

REPO = Path(__file__).resolve().parents[2]
V1 = Version("1.0.0")
DECISIONS = CapabilityRef("aitp-02-decisions", V1)
DATA = CapabilityRef("aitp-03-data-request", V1)
PAYMENTS = CapabilityRef("aitp-01-payments", V1)
LEGACY = CapabilityRef("aitp-legacy-payments", V1)
SHIPPED = [
    "aitp-01-payments",
    "aitp-02-decisions",
    "aitp-03-data-request",
    "aitp-04-near-wallet",
    "aitp-05-evm-wallet",
    "aitp-legacy-payments",
]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.from_directory(default_directory())


def write_capability(
    root: Path,
    capability_id: str,
    schemas: dict[str, dict[str, Any]],
    **meta: Any,
) -> Path:
    """capabilities/<id>/capability.json plus <version>/schema.json for each entry of `schemas`."""
    directory = root / capability_id
    directory.mkdir(parents=True)
    doc = {"id": capability_id, "title": capability_id.title(), "description": "test capability", "aliases": []}
    doc.update(meta)
    (directory / "capability.json").write_text(json.dumps(doc))
    for version, schema in schemas.items():
        (directory / version).mkdir()
        (directory / version / "schema.json").write_text(json.dumps(schema))
    return directory


PING = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "properties": {"$schema": {"type": "string"}, "ping": {"type": "object", "required": ["n"]}},
    "required": ["$schema", "ping"],
}


# ------------------------------------------------------------------------------------------ directory


def test_default_directory_is_the_repo_top_level_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AITP_CAPABILITIES_DIR", raising=False)
    assert default_directory() == REPO / "capabilities"
    assert (default_directory() / "README.md").is_file()


def test_default_directory_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AITP_CAPABILITIES_DIR", str(tmp_path))
    assert default_directory() == tmp_path


def test_shipped_capabilities_listed_sorted(registry: Registry) -> None:
    infos = registry.capabilities()
    assert [info.id for info in infos] == SHIPPED
    for info in infos:
        assert info.title and info.description
        assert info.versions == [V1]
        assert registry.versions(info.id) == [V1]
        assert registry.capability(info.id) is info
    assert registry.capability("aitp-02-decisions").title == "AITP-02: Decisions"  # type: ignore[union-attr]
    assert registry.capability("aitp-99-nope") is None
    assert registry.versions("aitp-99-nope") == []


def test_capability_info_carries_the_aliases_of_capability_json(registry: Registry) -> None:
    meta = json.loads((default_directory() / "aitp-02-decisions" / "capability.json").read_text())
    info = registry.capability("aitp-02-decisions")
    assert info is not None and info.aliases == meta["aliases"]
    assert {"url": "https://aitp.dev/v1/decisions/schema.json", "version": "1.0.0"} in info.aliases


def test_get_returns_converted_schema_source_and_examples(registry: Registry) -> None:
    decisions = registry.get(DECISIONS)
    assert decisions is not None and decisions.ref == DECISIONS
    published = json.loads((default_directory() / "aitp-02-decisions" / "1.0.0" / "schema.json").read_text())
    assert decisions.source == published
    assert decisions.schema["$ref"] == "#/components/schemas/DecisionProtocol"
    assert decisions.schema["$schema"] == JSON_SCHEMA_2020_12
    assert "request_decision_products.json" in decisions.examples
    data = registry.get(DATA)
    assert data is not None and data.schema == data.source  # plain JSON Schema: compiled as published
    assert registry.get(CapabilityRef("aitp-02-decisions", Version("1.3.0"))) is None
    assert registry.get(CapabilityRef("aitp-99-nope", V1)) is None


def test_versions_sort_as_versions_not_strings(tmp_path: Path) -> None:
    write_capability(tmp_path, "x-ping", {"1.10.0": PING, "1.2.0": PING, "2.0.0": PING, "1.0.0": PING})
    registry = Registry.from_directory(tmp_path)
    expected = [Version(v) for v in ("1.0.0", "1.2.0", "1.10.0", "2.0.0")]
    assert registry.versions("x-ping") == expected
    assert registry.capability("x-ping").versions == expected  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------- resolution


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json", DECISIONS),
        ("http://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json", DECISIONS),
        ("https://AITP.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json", DECISIONS),
        ("  https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json#", DECISIONS),
        ("https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json", PAYMENTS),
        (
            "https://aitp.dev/capabilities/aitp-05-evm-wallet/v1.0.0/schema.json",
            CapabilityRef("aitp-05-evm-wallet", V1),
        ),
        # this server's own schema URLs, whatever the base
        ("http://127.0.0.1:8000/v1/capabilities/aitp-02-decisions/1.0.0/schema.json", DECISIONS),
        ("https://threads.example.com/aitp/v1/capabilities/aitp-03-data-request/1.0.0/schema.json", DATA),
        ("/v1/capabilities/aitp-01-payments/1.0.0/schema.json", PAYMENTS),
        # the crates.io form the docs use
        ("https://crates.io/crates/aitp_schema/capabilities/aitp-02-decisions/v1.0.0/schema.json", DECISIONS),
        # hub-era aliases
        ("https://aitp.dev/v1/decisions/schema.json", DECISIONS),
        ("https://aitp.dev/v1/decision/schema.json", DECISIONS),
        ("https://aitp.dev/v1/requests.schema.json", DECISIONS),
        ("https://aitp.dev/v1/data/schema.json", DATA),
        ("https://aitp.dev/v1/payments/schema.json", LEGACY),
        ("https://aitp.dev/v1/payments.schema.json", LEGACY),
        ("https://aitp.dev/v1/payment.schema.json", LEGACY),
        ("http://aitp.dev/v1/payments/schema.json", LEGACY),
        ("https://crates.io/crates/aitp_schema/capabilities/aitp-04-transactions/v1.0.0/schema.json", LEGACY),
        ("https://aitp.dev/capabilities/aitp-04-transactions/v1.0.0/schema.json", LEGACY),
        # the AITP-01 page's examples say v0.1.0 for messages of the published 1.0.0 schema
        ("https://aitp.dev/capabilities/aitp-01-payments/v0.1.0/schema.json", PAYMENTS),
    ],
)
def test_resolve_accepted_forms(registry: Registry, url: str, expected: CapabilityRef) -> None:
    assert registry.resolve(url) == expected


def test_resolve_keeps_an_unregistered_version_of_a_known_capability(registry: Registry) -> None:
    ref = registry.resolve("https://aitp.dev/capabilities/aitp-02-decisions/v1.3.0/schema.json")
    assert ref == CapabilityRef("aitp-02-decisions", Version("1.3.0"))
    assert registry.get(ref) is None
    assert registry.resolve("http://localhost/v1/capabilities/aitp-02-decisions/2.0.0/schema.json") == CapabilityRef(
        "aitp-02-decisions", Version("2.0.0")
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://aitp.dev/capabilities/aitp-99-unknown/v1.0.0/schema.json",
        "https://aitp.dev/v1/unknown/schema.json",
        "https://aitp.dev/v2/decisions/schema.json",
        "https://aitp.dev/capabilities/aitp-02-decisions/v1.0/schema.json",
        "https://aitp.dev/capabilities/aitp-02-decisions/latest/schema.json",
        "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/other.json",
        "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json?x=1",
        "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json#/anyOf/0",
        "https://example.com/v1/decisions/schema.json",
        "ftp://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json",
        "aitp-02-decisions",
        "",
        "not a url at all",
        "https://[::1/v1/capabilities/aitp-02-decisions/1.0.0/schema.json",
    ],
)
def test_resolve_unknown(registry: Registry, url: str) -> None:
    assert registry.resolve(url) is None


def test_resolve_rejects_non_strings(registry: Registry) -> None:
    assert registry.resolve(None) is None  # type: ignore[arg-type]
    assert registry.resolve({"schema": DECISIONS.url}) is None  # type: ignore[arg-type]


def test_ref_url_is_canonical_and_resolves_back(registry: Registry) -> None:
    assert DECISIONS.url == "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
    assert CapabilityRef("x", Version("2.1")).url == "https://aitp.dev/capabilities/x/v2.1.0/schema.json"
    for info in registry.capabilities():
        for version in info.versions:
            ref = CapabilityRef(info.id, version)
            assert registry.resolve(ref.url) == ref


def test_every_alias_resolves_to_its_capability(registry: Registry) -> None:
    for info in registry.capabilities():
        for alias in info.aliases:
            assert registry.resolve(alias["url"]) == CapabilityRef(info.id, Version(alias["version"]))


def test_resolving_follows_capabilities_and_aliases_added_later() -> None:
    # answers are remembered per URL: a URL that named nothing must name what is added afterwards
    registry = Registry()
    url = "https://aitp.dev/capabilities/acme-01-x/v1.0.0/schema.json"
    alias = "https://acme.example/x.json"
    assert registry.resolve(url) is None and registry.resolve(alias) is None
    registry.add_capability("acme-01-x")
    assert registry.resolve(url) == CapabilityRef("acme-01-x", Version("1.0.0"))
    registry.add_alias(alias, CapabilityRef("acme-01-x", Version("1.0.0")))
    assert registry.resolve(alias) == CapabilityRef("acme-01-x", Version("1.0.0"))


def test_every_change_bumps_the_generation_and_derived_declarations_follow() -> None:
    from aitp.services.access import ThreadView
    from aitp.store.base import ActorRecord, ThreadRecord

    url = "https://acme.example/orders.json"
    view = ThreadView(
        ThreadRecord(id="thread_1", created_at=0, creator="a"),
        [ActorRecord(thread_id="thread_1", id="a", capabilities=[{"schema": url}])],
    )
    registry = Registry.from_directory(default_directory())  # its own: this test changes it
    before = registry.generation
    assert view.declarations(registry)[0].unknown == [{"schema": url}]
    assert view.declarations(registry) is view.declarations(registry)  # resolved once per registry state
    registry.add_alias(url, DECISIONS)
    assert registry.generation > before
    assert view.declarations(registry)[0].unknown == []
    assert view.declarations(registry)[0].support["aitp-02-decisions"].majors == {1}


def test_remembered_urls_are_bounded(monkeypatch: pytest.MonkeyPatch, registry: Registry) -> None:
    monkeypatch.setattr(registry_module, "RESOLVED_URLS_KEPT", 10)
    for i in range(25):
        assert registry.resolve(f"https://example.com/{i}.json") is None
    assert registry.resolve(DECISIONS.url) == DECISIONS
    assert len(registry._resolved) <= 10


# ------------------------------------------------------------------------------------------- loading


def test_loading_rejects_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(CapabilityLoadError, match="does not exist"):
        Registry.from_directory(tmp_path / "nope")


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (lambda root: write_capability(root, "x-ping", {"1.0.0": PING}, id="other"), "directory name"),
        (lambda root: write_capability(root, "x-ping", {"v1.0.0": PING}), "X.Y.Z"),
        (lambda root: write_capability(root, "x-ping", {}), "no version directory"),
        (
            lambda root: write_capability(
                root, "x-ping", {"1.0.0": PING}, aliases=[{"url": "https://x.test/ping.json", "version": "2.0.0"}]
            ),
            "unknown version",
        ),
        (
            lambda root: [
                write_capability(
                    root, n, {"1.0.0": PING}, aliases=[{"url": "https://x.test/p.json", "version": "1.0.0"}]
                )
                for n in ("x-a", "x-b")
            ],
            "already",
        ),
        (lambda root: write_capability(root, "x-ping", {"1.0.0": {"type": 12}}), "not a valid JSON Schema"),
        (lambda root: write_capability(root, "x-ping", {"1.0.0": {"$ref": "#/$defs/missing"}}), "cannot compile"),
    ],
)
def test_loading_rejects_bad_data(tmp_path: Path, setup: Any, match: str) -> None:
    setup(tmp_path)
    with pytest.raises(CapabilityLoadError, match=match):
        Registry.from_directory(tmp_path)


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that would serve a perfectly good schema, and the paths anyone requested."""
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            requests.append(self.path)
            body = json.dumps({"type": "object"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/schema+json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


def test_remote_ref_is_refused_at_compile_time_without_fetching(
    tmp_path: Path, schema_server: tuple[str, list[str]]
) -> None:
    base, requests = schema_server
    remote = copy.deepcopy(PING)
    remote["properties"]["ping"] = {"$ref": f"{base}/ping.json"}
    write_capability(tmp_path, "x-remote", {"1.0.0": remote})
    with pytest.raises(CapabilityLoadError, match=f"remote \\$ref '{base}/ping.json' refused"):
        Registry.from_directory(tmp_path)
    with pytest.raises(ValueError, match="refused"):
        compile_schema({"$ref": f"{base}/never.json"})
    with pytest.raises(ValueError, match="refused"):
        compile_schema({"$id": "https://aitp.dev/x/schema.json", "$ref": "other.json"})  # relative, still remote
    # the server is reachable and would have answered: nobody asked
    with urllib.request.urlopen(f"{base}/probe.json", timeout=5) as response:
        assert response.status == 200
    assert requests == ["/probe.json"]


def test_openapi_document_with_a_remote_ref_is_refused_too(tmp_path: Path) -> None:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1.0.0"},
        "components": {"schemas": {"Root": {"$ref": "https://example.com/openapi.json#/components/schemas/X"}}},
    }
    write_capability(tmp_path, "x-remote", {"1.0.0": doc}, openapi_root="Root")
    with pytest.raises(CapabilityLoadError, match="refused"):
        Registry.from_directory(tmp_path)


def test_patterns_use_the_linear_time_regex_engine(tmp_path: Path) -> None:
    # Python's `re` (the metaschema check) accepts lookahead; the linear-time engine does not
    schema = copy.deepcopy(PING)
    schema["properties"]["ping"] = {"type": "string", "pattern": "^(?=a)a+$"}
    write_capability(tmp_path, "x-lookahead", {"1.0.0": schema})
    with pytest.raises(CapabilityLoadError, match="cannot compile"):
        Registry.from_directory(tmp_path)
    validator = compile_schema({"type": "string", "pattern": "^(a|aa)+$"})
    assert not validator.is_valid("a" * 5000 + "!")  # catastrophic for a backtracking engine; instant here


def test_validators_are_compiled_once_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry.from_directory(default_directory())
    first = registry.validator(DECISIONS)
    assert registry.validator(DECISIONS) is first
    calls: list[Any] = []
    original = jsonschema_rs.validator_for
    monkeypatch.setattr(jsonschema_rs, "validator_for", lambda *a, **k: calls.append(a) or original(*a, **k))
    example = registry.get(DECISIONS).examples["request_decision.json"]  # type: ignore[union-attr]
    broken = {"$schema": DECISIONS.url, "request_decision": {"options": []}}
    for _ in range(3):
        assert registry.validate(DECISIONS, example) == []
        assert registry.validate(DECISIONS, broken)
    assert calls == []
    assert registry.validator(DECISIONS) is first
    with pytest.raises(UnknownCapabilityVersion):
        registry.validator(CapabilityRef("aitp-02-decisions", Version("9.0.0")))


# ---------------------------------------------------------------------------------------- validation


def test_validate_reports_pointers_into_the_message(registry: Registry) -> None:
    message = {"$schema": DECISIONS.url, "request_decision": {"id": "r", "options": [{"id": 7}]}}
    assert registry.validate(DECISIONS, message) == [
        SchemaIssue("/request_decision/options/0/id", '7 is not of type "string"')
    ]


def test_validate_limit_and_order(registry: Registry) -> None:
    message = {"$schema": DECISIONS.url, "request_decision": {"options": [{"id": i} for i in range(10)]}}
    every = registry.validate(DECISIONS, message, limit=100)
    assert len(every) == 11  # missing id + ten wrong option ids
    assert registry.validate(DECISIONS, message, limit=3) == every[:3]
    assert registry.validate(DECISIONS, message) == every[:1]  # by default the first issue only: bounded work
    assert registry.validate(DECISIONS, message, limit=0) == every[:1]


def test_validate_message_without_a_message_type(registry: Registry) -> None:
    (issue,) = registry.validate(DECISIONS, {"$schema": DECISIONS.url, "hello": "world"})
    assert issue.pointer == "" and "decision, request_decision" in issue.message
    (issue,) = registry.validate(DECISIONS, ["not", "an", "object"])  # type: ignore[arg-type]
    assert issue.pointer == "" and "JSON object" in issue.message


def test_validate_escapes_pointer_tokens(tmp_path: Path) -> None:
    schema = copy.deepcopy(PING)
    schema["properties"]["ping"] = {"type": "object", "additionalProperties": {"type": "integer"}}
    write_capability(tmp_path, "x-ping", {"1.0.0": schema})
    registry = Registry.from_directory(tmp_path)
    ref = CapabilityRef("x-ping", V1)
    issues = registry.validate(ref, {"$schema": "s", "ping": {"a/b~c": "x"}})
    assert [i.pointer for i in issues] == ["/ping/a~1b~0c"]


def test_validate_unknown_version_raises(registry: Registry) -> None:
    with pytest.raises(UnknownCapabilityVersion):
        registry.validate(CapabilityRef("aitp-02-decisions", Version("1.3.0")), {})


def test_long_issue_messages_are_truncated(registry: Registry) -> None:
    message = {"$schema": DECISIONS.url, "request_decision": {"id": "x" * 5000, "options": "o" * 5000}}
    (issue,) = registry.validate(DECISIONS, message)
    assert issue.pointer == "/request_decision/options" and len(issue.message) <= registry_module.MAX_ISSUE_MESSAGE


def test_message_types_of_a_single_message_schema(tmp_path: Path) -> None:
    write_capability(tmp_path, "x-ping", {"1.0.0": PING})
    registry = Registry.from_directory(tmp_path)
    assert registry.get(CapabilityRef("x-ping", V1)).message_types == ["ping"]  # type: ignore[union-attr]
    assert message_branches(registry.get(CapabilityRef("x-ping", V1)).schema) == {"ping": ""}  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------ OpenAPI formats


def openapi(schemas: dict[str, Any], version: str = "3.0.0") -> dict[str, Any]:
    return {
        "openapi": version,
        "info": {"title": "T", "version": "1.0.0"},
        "paths": {},
        "components": {"schemas": schemas},
    }


def test_detect_format() -> None:
    assert detect_format({"$schema": JSON_SCHEMA_2020_12, "type": "object"}) == "json-schema"
    assert detect_format({"type": "object"}) == "json-schema"
    assert detect_format(openapi({"A": {}})) == "openapi-3.0"
    assert detect_format(openapi({"A": {}}, "3.0.3")) == "openapi-3.0"
    assert detect_format(openapi({"A": {}}, "3.1.0")) == "openapi-3.1"
    assert is_openapi(openapi({"A": {}})) and not is_openapi({"type": "string"})
    with pytest.raises(SchemaFormatError, match="unsupported OpenAPI version"):
        detect_format(openapi({"A": {}}, "2.0"))


def test_nullable_adds_null_to_an_explicit_type() -> None:
    assert convert_openapi30_schema({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert convert_openapi30_schema({"type": ["string", "null"], "nullable": True}) == {"type": ["string", "null"]}
    assert convert_openapi30_schema({"type": "string", "nullable": False}) == {"type": "string"}
    # OpenAPI 3.0.3: without `type` nullable has no effect, and an enum must list null itself
    assert convert_openapi30_schema({"nullable": True, "minLength": 1}) == {"minLength": 1}
    assert convert_openapi30_schema({"type": "string", "enum": ["a"], "nullable": True}) == {
        "type": ["string", "null"],
        "enum": ["a"],
    }


def test_conversion_walks_every_subschema_but_not_property_names() -> None:
    source = {
        "type": "object",
        "properties": {
            "nullable": {"type": "integer", "nullable": True},  # a property *named* nullable
            "list": {"type": "array", "items": {"type": "number", "nullable": True, "example": 3}},
            "choice": {"anyOf": [{"type": "string", "nullable": True}, {"$ref": "#/components/schemas/B"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "boolean", "nullable": True}},
            "ref": {"$ref": "#/components/schemas/B", "description": "ignored by OpenAPI 3.0", "nullable": True},
            "bounded": {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 5,
                "exclusiveMaximum": False,
            },
        },
        "required": ["nullable"],
    }
    original = copy.deepcopy(source)
    converted = convert_openapi30_schema(source)
    assert source == original  # never modified in place
    props = converted["properties"]
    assert props["nullable"] == {"type": ["integer", "null"]}
    assert props["list"]["items"] == {"type": ["number", "null"], "examples": [3]}
    assert props["choice"]["anyOf"] == [{"type": ["string", "null"]}, {"$ref": "#/components/schemas/B"}]
    assert props["extra"]["additionalProperties"] == {"type": ["boolean", "null"]}
    assert props["ref"] == {"$ref": "#/components/schemas/B"}
    assert props["bounded"] == {"type": "number", "exclusiveMinimum": 0, "maximum": 5}
    assert converted["required"] == ["nullable"]


def test_openapi_document_is_wrapped_with_its_components() -> None:
    doc = openapi(
        {
            "Root": {"anyOf": [{"$ref": "#/components/schemas/Ping"}]},
            "Ping": {
                "type": "object",
                "properties": {
                    "ping": {"$ref": "#/components/schemas/Ping/properties/n"},
                    "n": {"type": "integer", "nullable": True},
                },
            },
        }
    )
    schema = to_json_schema(doc, "Root")
    assert schema["$schema"] == JSON_SCHEMA_2020_12
    assert schema["$ref"] == "#/components/schemas/Root"
    assert schema["title"] == "T"
    assert schema["components"]["schemas"]["Ping"]["properties"]["n"] == {"type": ["integer", "null"]}
    assert "openapi" not in schema and "paths" not in schema
    validator = compile_schema(schema)
    assert validator.is_valid({"ping": None, "n": None})
    assert not validator.is_valid({"ping": "x"})
    assert to_json_schema(doc) == schema  # root found: the one schema nothing else refers to


def test_openapi_root_must_exist_or_be_unambiguous() -> None:
    doc = openapi({"A": {"type": "object"}, "B": {"type": "string"}})
    with pytest.raises(SchemaFormatError, match="candidates: A, B"):
        to_json_schema(doc)
    with pytest.raises(SchemaFormatError, match="not one of"):
        to_json_schema(doc, "C")
    assert find_openapi_root(openapi({"Tree": {"items": {"$ref": "#/components/schemas/Tree"}}})) == "Tree"
    with pytest.raises(SchemaFormatError, match="components/schemas"):
        to_json_schema({"openapi": "3.0.0", "components": {}})


def test_openapi_31_schemas_are_only_wrapped() -> None:
    doc = openapi({"Root": {"type": ["string", "null"], "nullable": True}}, "3.1.0")
    assert to_json_schema(doc, "Root")["components"]["schemas"]["Root"] == {
        "type": ["string", "null"],
        "nullable": True,
    }


def test_plain_json_schema_gets_a_default_dialect() -> None:
    assert to_json_schema({"type": "string"}) == {"type": "string", "$schema": JSON_SCHEMA_2020_12}
    with pytest.raises(SchemaFormatError):
        to_json_schema([])  # type: ignore[arg-type]


def test_openapi_capability_with_nullable_validates_null(tmp_path: Path) -> None:
    doc = openapi(
        {
            "Proto": {"anyOf": [{"$ref": "#/components/schemas/Note"}]},
            "Note": {
                "type": "object",
                "properties": {
                    "$schema": {"type": "string"},
                    "note": {
                        "type": "object",
                        "properties": {"text": {"type": "string", "nullable": True}},
                        "required": ["text"],
                        "additionalProperties": False,
                    },
                },
                "required": ["$schema", "note"],
            },
        }
    )
    write_capability(tmp_path, "x-note", {"1.0.0": doc}, openapi_root="Proto")
    registry = Registry.from_directory(tmp_path)
    ref = CapabilityRef("x-note", V1)
    assert registry.get(ref).message_types == ["note"]  # type: ignore[union-attr]
    assert registry.validate(ref, {"$schema": "s", "note": {"text": None}}) == []
    assert registry.validate(ref, {"$schema": "s", "note": {"text": 3}}) == [
        SchemaIssue("/note/text", '3 is not of types "null", "string"')
    ]


def test_shipped_openapi_capabilities_name_their_root(registry: Registry) -> None:
    for ref, root in ((PAYMENTS, "PaymentProtocol"), (DECISIONS, "DecisionProtocol")):
        version = registry.get(ref)
        assert version is not None and is_openapi(version.source)
        assert version.schema["$ref"] == f"#/components/schemas/{root}"
        assert version.schema["components"]["schemas"].keys() == version.source["components"]["schemas"].keys()


# ------------------------------------------------------------------ cost (issue 14, items 1 and 2)


def _counting_compiles(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    original = jsonschema_rs.validator_for
    monkeypatch.setattr(jsonschema_rs, "validator_for", lambda *a, **k: calls.append(a[0]) or original(*a, **k))
    return calls


def test_a_version_compiles_into_two_validators_whatever_its_number_of_message_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root object with 500 optional properties has 500 message types: one full compile per type made
    registering quadratic (700 types: 3 s and 1.2 GB)."""
    wide = {
        "$schema": JSON_SCHEMA_2020_12,
        "type": "object",
        "properties": {f"t{i}": {"type": "object", "properties": {"n": {"type": "integer"}}} for i in range(500)},
    }
    write_capability(tmp_path, "x-wide", {"1.0.0": wide})
    calls = _counting_compiles(monkeypatch)
    registry = Registry.from_directory(tmp_path)
    assert len(calls) == 2
    ref = CapabilityRef("x-wide", V1)
    assert len(registry.get(ref).message_types) == 500  # type: ignore[union-attr]
    # every type is still reported against its own branch
    assert registry.validate(ref, {"$schema": "s", "t499": {"n": "x"}}) == [
        SchemaIssue("/t499/n", '"x" is not of type "integer"')
    ]
    assert len(calls) == 2


class _Counting:
    """A validator whose calls are counted by name."""

    def __init__(self, inner: Any, calls: list[str]) -> None:
        self.inner, self.calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.inner, name)


def test_refusing_a_message_builds_its_first_error_only(registry: Registry) -> None:
    """is_valid decides; then `validate` (which stops at the first error), never `iter_errors` (which builds
    every error, each with a copy of its instance: 30,000 wrong options took 175 ms against 0.2 ms to accept)."""
    compiled = registry._compiled[DECISIONS]
    calls: list[str] = []
    message = {"$schema": DECISIONS.url, "request_decision": {"id": "r", "options": list(range(30_000))}}
    original = (compiled.root, compiled.dispatch)
    compiled.root, compiled.dispatch = _Counting(compiled.root, calls), _Counting(compiled.dispatch, calls)
    try:
        issues = registry.validate(DECISIONS, message)
    finally:
        compiled.root, compiled.dispatch = original
    assert issues == [SchemaIssue("/request_decision/options/0", '0 is not of type "object"')]
    assert calls == ["is_valid", "validate"]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (DECISIONS, {"$schema": DECISIONS.url, "request_decision": {"options": [{"id": 1}, {}]}}),
        (DECISIONS, {"$schema": DECISIONS.url, "request_decision": []}),
        (DECISIONS, {"$schema": DECISIONS.url, "decision": {"options": [{"id": "a", "x": 1}]}}),
        (DATA, {"$schema": DATA.url, "request_data": {"fields": 3}}),
    ],
)
def test_the_first_issue_is_the_first_error_iter_errors_gives(
    registry: Registry, ref: CapabilityRef, message: dict[str, Any]
) -> None:
    first = registry.validate(ref, message)
    assert len(first) == 1 and first == registry.validate(ref, message, limit=1000)[:1]


def test_a_schema_whose_error_reporting_would_explode_does_not_load(tmp_path: Path) -> None:
    recursive = {
        "$schema": JSON_SCHEMA_2020_12,
        "oneOf": [{"type": "object", "properties": {"a": {"$ref": "#"}}}] * 2,
    }
    write_capability(tmp_path, "x-recursive", {"1.0.0": recursive})
    with pytest.raises(CapabilityLoadError, match="checked by more than 1,000 subschemas"):
        Registry.from_directory(tmp_path)
