"""`aitp.client.AitpClient` end to end: the in-process app on every store backend, and a real server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from aitp.app import create_app
from aitp.client import (
    Actor,
    ActorInput,
    AitpClient,
    AitpError,
    AitpPart,
    ApiKey,
    BadRequest,
    Capability,
    CapabilityExampleList,
    CapabilityPayload,
    Conflict,
    CreatedApiKey,
    DeletedObject,
    Identity,
    ListPage,
    Message,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RangeDeclaration,
    RateLimited,
    SchemaDeclaration,
    ServerError,
    TextPart,
    Thread,
    Unauthenticated,
    Unprocessable,
    capability_payloads,
    plain_text,
)
from aitp.config import Settings
from aitp.store import Store
from aitp.testing import ServerProcess, free_port
from tests.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[2]
BASE = "http://aitp.test"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS_RANGE = {"capability": "aitp-02-decisions", "versions": ">=1.0.0,<3"}
AGENT = "hub.near.ai/travel-agent/0.1.0"  # actor ids may hold slashes

Connect = Callable[[str], Awaitable[AitpClient]]
Known = Callable[..., Awaitable[None]]


def example(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "capabilities/aitp-02-decisions/1.0.0/examples" / name).read_text())


def text(message: Message, part: int = 0) -> str:
    content = message.content[part]
    assert isinstance(content, TextPart)
    return content.text.value


@pytest.fixture
def transport(store: Store) -> httpx.ASGITransport:
    """The app in this process on the test's store (SQLite, then MongoDB); anyone may contact the actors it makes
    (the contact policies: tests/api/test_identities.py)."""
    settings = Settings(store_url="unused://", admin_key=ADMIN_KEY, contact_policy="anyone")
    return httpx.ASGITransport(app=create_app(settings, store=store))


@pytest.fixture
async def admin(transport: httpx.ASGITransport) -> AsyncIterator[AitpClient]:
    async with AitpClient(BASE, ADMIN_KEY, transport=transport) as client:
        yield client


@pytest.fixture
async def connect(transport: httpx.ASGITransport, admin: AitpClient) -> AsyncIterator[Connect]:
    """`await connect("shop.near")`: a client with a fresh key acting as that actor."""
    async with AsyncExitStack() as stack:

        async def as_actor(actor: str) -> AitpClient:
            key = await admin.create_key(actor)
            return await stack.enter_async_context(AitpClient(BASE, key.key, transport=transport))

        yield as_actor


@pytest.fixture
def known(transport: httpx.ASGITransport) -> Known:
    """`await known("shop.near")`: the admin makes actors known to the server (local actors anyone may contact),
    without keys: a thread may name only actors the server knows."""

    async def make(*actors: str) -> None:
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(transport=transport, base_url=BASE + "/v1", headers=headers) as http:
            for actor in actors:
                response = await http.put(f"/actors/{actor}/contact_policy", json={"policy": "anyone"})
                assert response.status_code == 200, response.text

    return make


async def shop_thread(connect: Connect) -> tuple[AitpClient, AitpClient, str]:
    """user.near opens a thread with shop.near; both read aitp-02-decisions."""
    user = await connect("user.near")
    shop = await connect("shop.near")
    thread = await user.create_thread(actors=[{"id": "user.near", "capabilities": [DECISIONS]}, "shop.near"])
    await shop.put_actor(thread.id, "shop.near", capabilities=[DECISIONS])
    return user, shop, thread.id


# ------------------------------------------------------------------------------------------ threads


async def test_create_thread_with_actors_and_capability_declarations(connect: Connect, known: Known) -> None:
    user = await connect("user.near")
    await known("shop.near", "pay.near")
    thread = await user.create_thread(
        actors=[
            {"id": "user.near", "capabilities": [DECISIONS]},
            ActorInput(id="shop.near", client_id="shop-app", capabilities=[{"schema": DECISIONS}, PAYMENTS]),
            {"id": "pay.near", "capabilities": [DECISIONS_RANGE]},
        ],
        messages=["I would like to buy some socks"],
        metadata={"topic": "socks"},
    )
    assert isinstance(thread, Thread) and thread.id.startswith("thread_")
    assert [(a.id, a.role) for a in thread.actors] == [
        ("user.near", "user"),
        ("shop.near", "assistant"),
        ("pay.near", "assistant"),
    ]
    # Whatever form a declaration was sent in, it comes back as a schema URL or a range.
    assert thread.actors[1].capabilities == [SchemaDeclaration(schema=DECISIONS), SchemaDeclaration(schema=PAYMENTS)]
    assert thread.actors[1].client_id == "shop-app"
    assert thread.actors[2].capabilities == [RangeDeclaration(**DECISIONS_RANGE)]
    # AITP-T01 readers find the actors in metadata too.
    assert thread.metadata["topic"] == "socks"
    assert [a["id"] for a in json.loads(thread.metadata["actors"])] == ["user.near", "shop.near", "pay.near"]
    assert await user.get_thread(thread.id) == thread
    (first,) = (await user.list_messages(thread.id)).data
    assert (text(first), first.role, first.metadata["actor"]) == ("I would like to buy some socks", "user", "user.near")


async def test_the_creator_joins_even_when_not_listed(connect: Connect, known: Known) -> None:
    user = await connect("user.near")
    await known("shop.near")
    thread = await user.create_thread(actors=["shop.near"])
    assert [a.id for a in thread.actors] == ["user.near", "shop.near"]
    assert thread.parent_id is None
    child = await user.create_thread(parent_id=thread.id)
    assert child.parent_id == thread.id and child.metadata["parent_id"] == thread.id


async def test_update_thread_metadata_and_delete(connect: Connect) -> None:
    user = await connect("user.near")
    shop = await connect("shop.near")
    thread = await user.create_thread(actors=["shop.near"], metadata={"topic": "socks"})
    updated = await user.update_thread(thread.id, metadata={"topic": "shoes", "size": "42"})
    assert {k: v for k, v in updated.metadata.items() if k != "actors"} == {"topic": "shoes", "size": "42"}
    assert (await shop.get_thread(thread.id)).metadata == updated.metadata
    with pytest.raises(PermissionDenied):
        await shop.delete_thread(thread.id)
    assert await user.delete_thread(thread.id) == DeletedObject(id=thread.id, object="thread.deleted")
    with pytest.raises(NotFound) as missing:
        await user.get_thread(thread.id)
    assert (missing.value.code, missing.value.param) == ("thread_not_found", "thread_id")


async def test_the_creator_sets_turns_and_an_agent_past_them_gets_rate_limited(connect: Connect) -> None:
    user = await connect("user.near")
    shop = await connect("shop.near")
    thread = await user.create_thread(actors=["shop.near"])
    updated = await user.update_thread(thread.id, turns={"budget": 1})
    assert (updated.turns.budget, updated.turns.paused) == (1, False)
    with pytest.raises(PermissionDenied) as denied:
        await shop.update_thread(thread.id, turns={"budget": 5})
    assert denied.value.code == "not_thread_creator"
    await shop.create_message(thread.id, "one")
    with pytest.raises(RateLimited) as paused:
        await shop.create_message(thread.id, "two")
    assert paused.value.code == "turn_budget_exhausted"
    assert (await shop.get_thread(thread.id)).turns.paused is True


# ----------------------------------------------------------------------------------------- messages


async def test_text_and_capability_messages(connect: Connect) -> None:
    user, shop, tid = await shop_thread(connect)
    plain = await shop.create_message(tid, "Pick a number, please.")
    assert (text(plain), plain.role, plain.metadata["actor"], plain.aitp) == (
        "Pick a number, please.",
        "assistant",
        "shop.near",
        None,
    )
    # A mapping with `$schema` goes out as one JSON text part; strings around it stay text.
    request = example("request_decision.json")
    asked = await shop.create_message(tid, ["Here you go:", request], metadata={"step": "ask"})
    assert asked.aitp == [
        None,
        AitpPart(
            capability="aitp-02-decisions",
            version="1.0.0",
            type="request_decision",
            validated=True,
            schema=request["$schema"],
        ),
    ]
    assert json.loads(text(asked, 1)) == request
    assert asked.metadata == {"step": "ask", "actor": "shop.near"}
    assert await user.get_message(tid, asked.id) == asked
    # The user answers with a decision naming the request and one of its options.
    choice = {"request_decision_id": request["request_decision"]["id"], "options": [{"id": "7"}]}
    answer = await user.create_message(tid, {"$schema": DECISIONS, "decision": choice})
    assert answer.role == "user" and answer.aitp is not None and answer.aitp[0] is not None
    assert answer.aitp[0].type == "decision"
    with pytest.raises(Conflict) as again:
        await user.create_message(tid, {"$schema": DECISIONS, "decision": choice})
    assert again.value.code == "already_answered"


async def test_capability_payloads_read_what_the_server_validated(connect: Connect) -> None:
    user, shop, tid = await shop_thread(connect)
    request = example("request_decision.json")
    asked = await shop.create_message(tid, ["Here you go:", request, "Take your time."])

    [part] = capability_payloads(asked)
    assert part == CapabilityPayload(
        capability="aitp-02-decisions",
        version="1.0.0",
        type="request_decision",
        payload=request["request_decision"],
        document=request,
        schema=request["$schema"],
        validated=True,
        index=1,
    )
    assert plain_text(asked) == "Here you go: Take your time."
    plain = await user.create_message(tid, "Seven.")
    assert (capability_payloads(plain), plain_text(plain)) == ([], "Seven.")


async def test_me_says_who_the_key_acts_as_and_where_its_inbox_is(admin: AitpClient, connect: Connect) -> None:
    user = await connect("user.near")
    before = await user.me()
    assert isinstance(before, Identity)
    assert (before.id, before.admin, before.scopes) == ("user.near", False, [])
    await user.create_thread(messages=["hello"])
    assert (await user.me()).inbox_cursor > before.inbox_cursor
    assert ((await admin.me()).id, (await admin.me()).admin) == ("admin", True)


async def test_openai_content_parts_pass_through(connect: Connect) -> None:
    user = await connect("user.near")
    thread = await user.create_thread()
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/socks.png"}}]
    message = await user.create_message(thread.id, parts)
    assert text(message) == "look"
    assert message.content[1].model_dump() == {
        "type": "image_url",
        "image_url": {"url": "https://x/socks.png", "detail": "auto"},
    }


async def test_update_and_delete_a_message(connect: Connect) -> None:
    user, shop, tid = await shop_thread(connect)
    message = await shop.create_message(tid, "hello")
    updated = await shop.update_message(tid, message.id, metadata={"mood": "cheerful"})
    assert updated.metadata == {"mood": "cheerful", "actor": "shop.near"}
    with pytest.raises(PermissionDenied):
        await user.delete_message(tid, message.id)  # only its author (or an admin)
    assert await shop.delete_message(tid, message.id) == DeletedObject(id=message.id, object="thread.message.deleted")
    with pytest.raises(NotFound) as missing:
        await shop.get_message(tid, message.id)
    assert (missing.value.code, missing.value.param) == ("message_not_found", "message_id")


async def test_list_messages_in_pages_and_iterate_over_all_of_them(connect: Connect) -> None:
    user = await connect("user.near")
    tid = (await user.create_thread()).id
    for i in range(7):
        await user.create_message(tid, str(i))

    first = await user.list_messages(tid, limit=3, order="asc")
    assert isinstance(first, ListPage)
    assert [text(m) for m in first.data] == ["0", "1", "2"] and first.has_more
    assert (first.first_id, first.last_id) == (first.data[0].id, first.data[-1].id)
    second = await user.list_messages(tid, limit=3, order="asc", after=first.last_id)
    assert [text(m) for m in second.data] == ["3", "4", "5"] and second.has_more
    back = await user.list_messages(tid, limit=3, order="asc", before=second.first_id)
    assert [text(m) for m in back.data] == ["0", "1", "2"]
    newest = await user.list_messages(tid, limit=2)  # the server's default order: newest first
    assert [text(m) for m in newest.data] == ["6", "5"]

    assert [text(m) async for m in user.iter_messages(tid, order="asc", page_size=2)] == [str(i) for i in range(7)]
    assert [text(m) async for m in user.iter_messages(tid, page_size=3)] == [str(i) for i in reversed(range(7))]
    resumed = [text(m) async for m in user.iter_messages(tid, order="asc", after=first.last_id, page_size=2)]
    assert resumed == ["3", "4", "5", "6"]


async def test_list_and_iterate_threads(admin: AitpClient, connect: Connect) -> None:
    user = await connect("user.near")
    other = await connect("other.near")
    mine = [(await user.create_thread()).id for _ in range(5)]
    await other.create_thread()
    page = await user.list_threads(limit=2)
    assert [t.id for t in page.data] == mine[::-1][:2] and page.has_more
    assert [t.id async for t in user.iter_threads(page_size=2)] == mine[::-1]
    assert [t.id async for t in user.iter_threads(order="asc", page_size=4)] == mine
    assert len([t async for t in admin.iter_threads(page_size=2)]) == 6  # an admin sees every thread


# ------------------------------------------------------------------------------------------- actors


async def test_actors_join_update_and_leave(connect: Connect, known: Known) -> None:
    user = await connect("user.near")
    shop = await connect("shop.near")
    await known(AGENT)
    tid = (await user.create_thread()).id
    with pytest.raises(NotFound):
        await shop.get_thread(tid)  # not a member: the thread does not exist for it

    joined = await user.put_actor(tid, "shop.near", capabilities=[DECISIONS], client_id="shop-app")
    assert isinstance(joined, Actor)
    assert (joined.role, joined.client_id, joined.capabilities) == (
        "assistant",
        "shop-app",
        [SchemaDeclaration(schema=DECISIONS)],
    )
    updated = await shop.put_actor(tid, "shop.near", capabilities=[DECISIONS_RANGE])
    assert updated.capabilities == [RangeDeclaration(**DECISIONS_RANGE)] and updated.joined_at == joined.joined_at
    with pytest.raises(PermissionDenied) as refused:
        await user.put_actor(tid, "shop.near")  # only an actor itself changes its declarations
    assert refused.value.param == "id"

    await user.put_actor(tid, AGENT)
    assert [a.id for a in await shop.list_actors(tid)] == ["user.near", "shop.near", AGENT]
    assert await user.remove_actor(tid, AGENT) == DeletedObject(id=AGENT, object="thread.actor.deleted")
    assert await shop.remove_actor(tid, "shop.near") == DeletedObject(id="shop.near", object="thread.actor.deleted")
    with pytest.raises(NotFound):
        await shop.list_actors(tid)  # it left
    with pytest.raises(NotFound) as gone:
        await user.remove_actor(tid, "shop.near")
    assert (gone.value.code, gone.value.param) == ("actor_not_found", "actor_id")
    assert [a.id for a in await user.list_actors(tid)] == ["user.near"]


# ------------------------------------------------------------------------------------- capabilities


async def test_thread_capabilities_view(connect: Connect, known: Known) -> None:
    user = await connect("user.near")
    await known("shop.near")
    thread = await user.create_thread(
        actors=[
            {"id": "user.near", "capabilities": [DECISIONS_RANGE, PAYMENTS]},
            {"id": "shop.near", "capabilities": [DECISIONS, "https://x/y.json"]},
        ]
    )
    view = await user.get_thread_capabilities(thread.id)
    assert view.thread_id == thread.id
    by_id = {row.id: row for row in view.data}
    assert by_id["aitp-02-decisions"].version == "1.0.0"
    assert by_id["aitp-02-decisions"].supported_by == ["user.near", "shop.near"]
    assert by_id["aitp-01-payments"].version is None
    assert by_id["aitp-01-payments"].unsupported_by == ["shop.near"]
    assert [(u.actor, u.declaration) for u in view.unknown] == [("shop.near", {"schema": "https://x/y.json"})]


async def test_capability_registry(admin: AitpClient, connect: Connect) -> None:
    user = await connect("user.near")
    listed = await user.list_capabilities()
    assert {"aitp-01-payments", "aitp-02-decisions"} <= {c.id for c in listed}
    decisions = await user.get_capability("aitp-02-decisions")
    assert isinstance(decisions, Capability)
    assert decisions.latest == "1.0.0" and decisions.schema_urls["1.0.0"] == DECISIONS
    published = json.loads((ROOT / "capabilities/aitp-02-decisions/1.0.0/schema.json").read_text())
    assert await user.get_capability_schema("aitp-02-decisions", "1.0.0") == published
    with pytest.raises(NotFound) as missing:
        await user.get_capability("nope")
    assert missing.value.code == "capability_not_found"
    examples = await user.get_capability_examples("aitp-01-payments", "1.0.0")
    assert isinstance(examples, CapabilityExampleList) and (examples.capability, examples.version) == (
        "aitp-01-payments",
        "1.0.0",
    )
    shipped = ROOT / "capabilities/aitp-01-payments/1.0.0/examples/quote.json"
    quote = next(e for e in examples.data if e.type == "quote")
    assert quote.message == json.loads(shipped.read_text())


ORDERS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["$schema", "order"],
    "properties": {
        "$schema": {"type": "string"},
        "order": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}},
    },
}


async def test_register_a_capability_and_use_it(admin: AitpClient, connect: Connect) -> None:
    example_order = {"$schema": "https://aitp.dev/capabilities/acme-orders/v1.0.0/schema.json", "order": {"sku": "x"}}
    registered = await admin.register_capability(
        "acme-orders", "1.0.0", ORDERS_SCHEMA, examples=[example_order], title="Orders", description="Acme orders"
    )
    assert (registered.id, registered.versions, registered.title) == ("acme-orders", ["1.0.0"], "Orders")
    url = registered.schema_urls["1.0.0"]
    # Identical content again is a no-op; other content under a published version is refused.
    again = await admin.register_capability(
        "acme-orders", "1.0.0", ORDERS_SCHEMA, examples=[example_order], title="Orders", description="Acme orders"
    )
    assert again == registered
    with pytest.raises(Conflict) as changed:
        await admin.register_capability("acme-orders", "1.0.0", {**ORDERS_SCHEMA, "required": ["$schema"]})
    assert changed.value.code == "capability_version_exists"
    user = await connect("user.near")
    with pytest.raises(PermissionDenied):
        await user.register_capability("acme-other", "1.0.0", ORDERS_SCHEMA)  # no capabilities:write scope

    thread = await user.create_thread(actors=[{"id": "user.near", "capabilities": [url]}])
    sent = await user.create_message(thread.id, {"$schema": url, "order": {"sku": "socks-42"}})
    assert sent.aitp is not None and sent.aitp[0] is not None and sent.aitp[0].capability == "acme-orders"
    with pytest.raises(Unprocessable) as invalid:
        await user.create_message(thread.id, {"$schema": url, "order": {}})
    assert invalid.value.code == "invalid_capability_message" and invalid.value.param == "content[0].order"


# ------------------------------------------------------------------------------------------- events


async def test_events_list_resume_and_iterate(connect: Connect) -> None:
    user, shop, tid = await shop_thread(connect)
    message = await shop.create_message(tid, "hi")
    await user.update_thread(tid, metadata={"topic": "socks"})

    log = await user.list_events(tid)
    assert [e.type for e in log.data] == [
        "thread.created",
        "thread.actor.updated",
        "thread.capabilities.updated",
        "thread.message.created",
        "thread.updated",
    ]
    assert [e.seq for e in log.data] == [1, 2, 3, 4, 5] and log.last_seq == 5 and not log.has_more
    assert log.data[3].data["id"] == message.id and Message.model_validate(log.data[3].data) == message

    page = await user.list_events(tid, after=1, limit=2)
    assert [e.seq for e in page.data] == [2, 3] and page.has_more and page.last_seq == 3
    assert [e.seq async for e in user.iter_events(tid, page_size=2)] == [1, 2, 3, 4, 5]
    assert [e.seq async for e in user.iter_events(tid, after=3, page_size=1)] == [4, 5]
    assert (await user.list_events(tid, after=5)).data == []


# --------------------------------------------------------------------------------------------- keys


async def test_keys_admin(admin: AitpClient, transport: httpx.ASGITransport) -> None:
    created = await admin.create_key("shop.near", scopes=["capabilities:write"])
    assert isinstance(created, CreatedApiKey)
    assert created.key.startswith("aitp_") and created.prefix == created.key[:9]
    assert (created.actor, created.admin, created.scopes) == ("shop.near", False, ["capabilities:write"])
    listed = {k.id: k for k in await admin.list_keys()}
    assert type(listed[created.id]) is ApiKey and listed[created.id].prefix == created.prefix  # no secret

    async with AitpClient(BASE, created.key, transport=transport) as shop:
        await shop.create_thread()
        with pytest.raises(PermissionDenied) as not_admin:
            await shop.create_key("anyone")
        assert not_admin.value.code == "admin_required"
        assert await admin.revoke_key(created.id) == DeletedObject(id=created.id, object="api_key.deleted")
        with pytest.raises(Unauthenticated):
            await shop.list_threads()
    with pytest.raises(NotFound) as gone:
        await admin.revoke_key(created.id)
    assert gone.value.code == "key_not_found"


# ------------------------------------------------------------------------------------------- errors


async def test_refusals_raise_the_error_of_their_status_with_the_envelope(
    connect: Connect, transport: httpx.ASGITransport
) -> None:
    user, shop, tid = await shop_thread(connect)

    with pytest.raises(NotFound) as missing:
        await user.get_thread("thread_nope")
    error = missing.value
    assert isinstance(error, AitpError)
    assert (error.status, error.type, error.code, error.param) == (
        404,
        "invalid_request_error",
        "thread_not_found",
        "thread_id",
    )
    assert error.message == "No thread found with id 'thread_nope'."
    assert str(error) == "404 thread_not_found: No thread found with id 'thread_nope'. (param: thread_id)"

    bad = {"$schema": DECISIONS, "request_decision": {"id": "r1", "options": [{"name": "no id"}]}}
    with pytest.raises(Unprocessable) as invalid:
        await shop.create_message(tid, bad)
    assert (invalid.value.status, invalid.value.code) == (422, "invalid_capability_message")
    assert invalid.value.param is not None and invalid.value.param.startswith("content[0].request_decision.options[0]")

    with pytest.raises(BadRequest) as out_of_range:
        await user.list_messages(tid, limit=0)
    assert (out_of_range.value.status, out_of_range.value.param) == (400, "limit")

    async with AitpClient(BASE, "aitp_wrong", transport=transport) as stranger:
        with pytest.raises(Unauthenticated) as unknown_key:
            await stranger.list_threads()
    assert (unknown_key.value.status, unknown_key.value.type, unknown_key.value.code) == (
        401,
        "authentication_error",
        "invalid_api_key",
    )


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, BadRequest),
        (401, Unauthenticated),
        (403, PermissionDenied),
        (404, NotFound),
        (405, AitpError),
        (409, Conflict),
        (413, PayloadTooLarge),
        (422, Unprocessable),
        (429, RateLimited),
        (500, ServerError),
        (503, ServerError),
    ],
)
async def test_each_status_maps_to_its_error_class(status: int, error: type[AitpError]) -> None:
    envelope = {"error": {"message": "nope", "type": "some_error", "param": "x", "code": "some_code"}}
    stub = httpx.MockTransport(lambda request: httpx.Response(status, json=envelope))
    async with AitpClient(BASE, "k", transport=stub) as client:
        with pytest.raises(AitpError) as raised:
            await client.list_threads()
    assert type(raised.value) is error
    assert (raised.value.status, raised.value.message, raised.value.code, raised.value.param) == (
        status,
        "nope",
        "some_code",
        "x",
    )


async def test_a_body_that_is_not_the_envelope_still_maps_by_status() -> None:
    stub = httpx.MockTransport(lambda request: httpx.Response(502, text="<html>Bad Gateway</html>"))
    async with AitpClient(BASE, "k", transport=stub) as client:
        with pytest.raises(ServerError) as raised:
            await client.get_thread("t")
    assert (raised.value.status, raised.value.code, raised.value.message) == (502, None, "<html>Bad Gateway</html>")


async def test_network_failures_stay_httpx_errors() -> None:
    async with AitpClient(f"http://127.0.0.1:{free_port()}", "k", timeout=5) as client:
        with pytest.raises(httpx.ConnectError):
            await client.list_threads()


# ---------------------------------------------------------------------------------- request shapes


async def test_requests_as_sent() -> None:
    sent: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(404, json={"error": {"message": "m", "type": "t", "param": None, "code": None}})

    stub = httpx.MockTransport(reply)
    # The server's root and its /v1 URL name the same API.
    for base in ("http://aitp.test", "http://aitp.test/v1/"):
        async with AitpClient(base, "aitp_k", transport=stub) as client:
            with pytest.raises(NotFound):
                await client.list_messages("thread_1", limit=5)
    assert [str(r.url) for r in sent] == ["http://aitp.test/v1/threads/thread_1/messages?limit=5"] * 2
    assert sent[0].headers["authorization"] == "Bearer aitp_k"

    sent.clear()
    async with AitpClient(BASE, "aitp_k", transport=stub) as client:
        capability = {"$schema": DECISIONS, "decision": {"options": [{"id": "é"}]}}
        for content in ("hi", capability, ["a", capability, {"type": "image_url", "image_url": {"url": "u"}}]):
            with pytest.raises(NotFound):
                await client.create_message("thread_1", content)
        with pytest.raises(NotFound):
            await client.remove_actor("thread_1", AGENT)
    bodies = [json.loads(r.content) for r in sent[:3]]
    as_text = {"type": "text", "text": json.dumps(capability, ensure_ascii=False, separators=(",", ":"))}
    assert bodies == [
        {"content": "hi"},  # options left unset are not sent
        {"content": [as_text]},
        {"content": ["a", as_text, {"type": "image_url", "image_url": {"url": "u"}}]},
    ]
    assert sent[3].url.raw_path == b"/v1/threads/thread_1/actors/hub.near.ai%2Ftravel-agent%2F0.1.0"


# ---------------------------------------------------------------------------------- a real server


async def test_against_a_real_server(live_server: ServerProcess) -> None:
    async with AsyncExitStack() as stack:
        admin = await stack.enter_async_context(AitpClient(live_server.base_url + "/v1", ADMIN_KEY))
        assert (await admin.health())["status"] == "ok"
        user = await stack.enter_async_context(
            AitpClient(live_server.base_url, (await admin.create_key("user.near")).key)
        )
        shop = await stack.enter_async_context(AitpClient(live_server.base_url, (await admin.create_key(AGENT)).key))
        await shop.set_contact_policy("anyone")  # a business: its customers need not be verified to reach it

        thread = await user.create_thread(
            actors=[{"id": "user.near", "capabilities": [DECISIONS]}, {"id": AGENT, "capabilities": [DECISIONS]}],
            messages=["I would like to buy some socks"],
        )
        request = example("request_decision_products.json")
        offer = await shop.create_message(thread.id, ["Here you go:", request])
        assert offer.aitp is not None and offer.aitp[1] is not None and offer.aitp[1].type == "request_decision"
        for i in range(3):
            await user.create_message(thread.id, f"question {i}")
        texts = [text(m) async for m in shop.iter_messages(thread.id, order="asc", page_size=2)]
        assert texts == ["I would like to buy some socks", "Here you go:", "question 0", "question 1", "question 2"]
        assert [e.seq async for e in user.iter_events(thread.id, page_size=3)] == list(range(1, 7))

        # An actor id with slashes survives the trip through a real HTTP server's path handling.
        assert await shop.remove_actor(thread.id, AGENT) == DeletedObject(id=AGENT, object="thread.actor.deleted")
        with pytest.raises(NotFound) as gone:
            await shop.get_thread(thread.id)
        assert gone.value.code == "thread_not_found"
        async with AitpClient(live_server.base_url, "aitp_wrong") as stranger:
            with pytest.raises(Unauthenticated):
                await stranger.get_thread(thread.id)
