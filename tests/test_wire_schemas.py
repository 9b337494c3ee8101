"""The JSON Schemas in `schemas/` are current, and real responses of the service conform to them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from aitp.bindings.openai_threads import wire_schemas
from tests.conftest import API

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS_DIR / f"{name}.schema.json").read_text())
    return Draft202012Validator(schema)


def assert_valid(name: str, body: Any) -> None:
    """Fail with every violation (path and reason) if `body` does not conform to schemas/<name>.schema.json."""
    errors = sorted(validator(name).iter_errors(body), key=lambda e: list(e.absolute_path))
    problems = "\n".join(f"  at {e.json_path}: {e.message}" for e in errors)
    assert not errors, f"response does not validate against {name}.schema.json:\n{problems}\nbody: {body}"


def body_of(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


# --------------------------------------------------------------------------- drift


def test_checked_in_schemas_equal_the_models() -> None:
    """schemas/*.schema.json are exactly what `aitp.bindings.openai_threads.wire_schemas.build()` produces."""
    built = wire_schemas.build()
    on_disk = {p.name for p in SCHEMAS_DIR.glob("*.schema.json")}
    hint = "the wire models changed: run `aitp schemas export` and commit schemas/"

    assert sorted(set(built) - on_disk) == [], f"missing from schemas/; {hint}"
    assert sorted(on_disk - set(built)) == [], f"stale files in schemas/ (no model); {hint}"
    outdated = [name for name, document in built.items() if json.loads((SCHEMAS_DIR / name).read_text()) != document]
    assert outdated == [], f"out of date: {outdated}; {hint}"
    reformatted = [
        name for name, document in built.items() if (SCHEMAS_DIR / name).read_text() != wire_schemas.render(document)
    ]
    assert reformatted == [], f"same content but not in the exported format: {reformatted}; {hint}"


@pytest.mark.parametrize("name", sorted(wire_schemas.build()))
def test_every_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    """Each document is itself valid JSON Schema 2020-12 with its own `$id`."""
    document = json.loads((SCHEMAS_DIR / name).read_text())
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["$id"] == wire_schemas.BASE_URL + name


# --------------------------------------------------------------------------- real responses


async def test_thread_and_message_responses_validate(api: API) -> None:
    """Threads (created, retrieved, modified, listed) and messages in every content form conform."""
    user = await api.actor("user.near")
    shop = await api.actor("shop.near")

    created = body_of(
        await user.post(
            "/threads",
            json={
                "actors": [
                    {"id": "user.near"},
                    {"id": "shop.near", "client_id": "shop/1", "capabilities": [PAYMENTS, {"$schema": DECISIONS}]},
                ],
                "messages": ["hello", {"role": "user", "content": ["size 43", "blue"]}],
                "metadata": {"topic": "shoes"},
            },
        )
    )
    assert_valid("thread", created)
    thread_id = created["id"]
    assert_valid("thread", body_of(await shop.get(f"/threads/{thread_id}")))
    assert_valid("thread", body_of(await user.post(f"/threads/{thread_id}", json={"metadata": {"topic": "boots"}})))
    assert_valid("thread", body_of(await user.post(f"/threads/{thread_id}")))  # empty body: AITP-T01 retrieve

    posted = [
        body_of(await user.post(f"/threads/{thread_id}/messages", json={"role": "user", "content": "a string"})),
        body_of(await user.post(f"/threads/{thread_id}/messages", json={"content": ["a", "list", "of strings"]})),
        body_of(
            await shop.post(
                f"/threads/{thread_id}/messages",
                json={
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "parts"},
                        {"type": "image_url", "image_url": {"url": "https://shop.example/a.png", "detail": "low"}},
                        {"type": "image_file", "image_file": {"file_id": "file_abc"}},
                    ],
                    "attachments": [{"file_id": "file_abc", "tools": [{"type": "file_search"}]}],
                    "metadata": {"offer": "o-1"},
                },
            )
        ),
    ]
    for message in posted:
        assert_valid("message", message)
    assert [part["type"] for part in posted[2]["content"]] == ["text", "image_url", "image_file"]

    assert_valid("message", body_of(await shop.get(f"/threads/{thread_id}/messages/{posted[2]['id']}")))
    assert_valid(
        "message",
        body_of(
            await shop.post(f"/threads/{thread_id}/messages/{posted[2]['id']}", json={"metadata": {"offer": "o-2"}})
        ),
    )

    pagings: list[dict[str, str | int]] = [{}, {"order": "asc", "limit": 2}, {"after": posted[0]["id"], "limit": 1}]
    for params in pagings:
        page = body_of(await user.get(f"/threads/{thread_id}/messages", params=params))
        assert_valid("message-list", page)
    assert len(body_of(await user.get(f"/threads/{thread_id}/messages"))["data"]) == 5

    assert_valid("thread-list", body_of(await user.get("/threads")))
    assert_valid("thread-list", body_of(await api.admin.get("/threads", params={"limit": 1, "order": "asc"})))
    assert_valid("thread-list", body_of(await (await api.actor("nobody.near")).get("/threads")))  # empty page


async def test_actor_event_key_and_deletion_responses_validate(api: API) -> None:
    """Actor lists, the event log (and each event's object), API keys and deletion receipts conform."""
    user = await api.actor("user.near")
    await api.known("shop.near")
    thread_id = body_of(await user.post("/threads", json={"messages": ["hi"]}))["id"]
    joined = body_of(
        await user.post(f"/threads/{thread_id}/actors", json={"id": "shop.near", "capabilities": [PAYMENTS]})
    )
    assert_valid("actor", joined)
    shop = await api.actor("shop.near")
    assert_valid(
        "actor",
        body_of(
            await shop.post(
                f"/threads/{thread_id}/actors", json={"id": "shop.near", "capabilities": [{"schema": DECISIONS}]}
            )
        ),
    )
    assert_valid("actor-list", body_of(await shop.get(f"/threads/{thread_id}/actors")))

    message = body_of(await shop.post(f"/threads/{thread_id}/messages", json={"content": "offer"}))
    body_of(await shop.post(f"/threads/{thread_id}/messages/{message['id']}", json={"metadata": {"k": "v"}}))
    thread = body_of(await user.post(f"/threads/{thread_id}", json={"metadata": {"stage": "offer"}}))
    deleted_message = body_of(await shop.delete(f"/threads/{thread_id}/messages/{message['id']}"))
    assert_valid("deleted-object", deleted_message)
    left = body_of(await shop.delete(f"/threads/{thread_id}/actors/shop.near"))
    assert_valid("deleted-object", left)

    events = body_of(await user.get(f"/threads/{thread_id}/events"))
    assert_valid("event-list", events)
    assert_valid("event-list", body_of(await user.get(f"/threads/{thread_id}/events", params={"after": 2, "limit": 2})))
    # Each event carries the object its mutation produced, in that object's own wire shape.
    object_schema = {
        "thread.created": "thread",
        "thread.updated": "thread",
        "thread.message.created": "message",
        "thread.message.updated": "message",
        "thread.message.deleted": "deleted-object",
        "thread.actor.joined": "actor",
        "thread.actor.updated": "actor",
        "thread.actor.left": "deleted-object",
        "thread.capabilities.updated": "thread-capabilities",
    }
    assert [e["type"] for e in events["data"]] == [
        "thread.created",
        "thread.message.created",
        "thread.actor.joined",
        "thread.capabilities.updated",
        "thread.actor.updated",
        "thread.capabilities.updated",
        "thread.message.created",
        "thread.message.updated",
        "thread.updated",
        "thread.message.deleted",
        "thread.actor.left",
        "thread.capabilities.updated",
    ]
    for event in events["data"]:
        assert_valid("event", event)
        assert_valid(object_schema[event["type"]], event["data"])
    assert events["data"][8]["data"] == thread

    created_key = body_of(await api.admin.post("/keys", json={"actor": "ops", "scopes": ["capabilities:write"]}))
    assert_valid("created-api-key", created_key)
    for key in body_of(await api.admin.get("/keys"))["data"]:
        assert_valid("api-key", key)
    assert_valid("deleted-object", body_of(await api.admin.delete(f"/keys/{created_key['id']}")))

    assert_valid("deleted-object", body_of(await user.delete(f"/threads/{thread_id}")))


async def test_error_responses_validate(api: API) -> None:
    """Every kind of failure answers with the OpenAI error envelope."""
    user = await api.actor("user.near")
    thread_id = body_of(await user.post("/threads"))["id"]
    stranger = await api.actor("stranger.near")

    messages = f"/threads/{thread_id}/messages"
    failures = [
        (await stranger.get(f"/threads/{thread_id}"), 404, "thread_not_found"),
        (await user.get(f"{messages}/msg_nope"), 404, "message_not_found"),
        (await user.post(messages, json={}), 400, "missing_required_parameter"),
        (await user.post(messages, json={"content": "x", "bogus": 1}), 400, "unknown_parameter"),
        (await user.post(messages, json={"content": "x", "role": "system"}), 400, "invalid_value"),
        (await user.post(messages, json={"content": []}), 400, "invalid_request"),
        (
            await user.post(messages, content=b"{not json", headers={"content-type": "application/json"}),
            400,
            "invalid_json",
        ),
        (await user.post(messages, json={"content": "x", "metadata": {"actor": "other"}}), 403, "actor_impersonation"),
        (await user.get("/keys"), 403, "admin_required"),
        (await api.client("aitp_wrong").get("/threads"), 401, "invalid_api_key"),
        (await api.client(None).get("/threads"), 401, "missing_api_key"),
        (await user.get("/no/such/route"), 404, "unknown_url"),
    ]
    for response, status, code in failures:
        body = body_of(response, status)
        assert_valid("error", body)
        assert body["error"]["code"] == code, body


async def test_capability_range_declarations_validate(api: API) -> None:
    """A `{"capability", "versions"}` declaration, which the service accepts and returns as given,
    must be allowed by the actor/thread schemas too."""
    user = await api.actor("user.near")
    await api.known("shop.near")
    declaration = {"capability": "aitp-02-decisions", "versions": ">=1.0.0,<2"}
    thread = body_of(
        await user.post(
            "/threads",
            json={
                "actors": [{"id": "user.near"}, {"id": "shop.near", "capabilities": [PAYMENTS, declaration]}],
            },
        )
    )
    assert thread["actors"][1]["capabilities"] == [{"schema": PAYMENTS}, declaration]

    assert_valid("thread", thread)
    assert_valid("actor-list", body_of(await user.get(f"/threads/{thread['id']}/actors")))
    assert_valid("event-list", body_of(await user.get(f"/threads/{thread['id']}/events")))
    assert_valid("capability-declaration", declaration)
