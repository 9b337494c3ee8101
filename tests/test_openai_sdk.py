"""The official `openai` Python SDK, used unchanged, against a real `aitp serve` process.

Every call goes through `client.beta.threads` with only `api_key` and `base_url` set: this is what an
existing Assistants v2 client sees when pointed at aitp. AITP actors travel in `metadata.actors` as
a JSON string (the AITP-T01 wire form), since the SDK has no `actors` parameter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import httpx
import openai
import pytest
from openai.types.beta import Thread, ThreadDeleted
from openai.types.beta.threads import ImageURLContentBlock, Message, MessageDeleted, TextContentBlock

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY

# client.beta.threads is deprecated upstream (Assistants API); it still works and is what we test.
pytestmark = pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")

USER = "user.near"
SHOP = "shop.near"
OUTSIDER = "stranger.near"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"

ACTORS = [
    {"id": USER},
    {
        "id": SHOP,
        "client_id": "shop-agent/1.0",
        "capabilities": [PAYMENTS, {"$schema": DECISIONS}, {"capability": "aitp-03-wallet", "versions": ">=1.0.0,<2"}],
    },
]
# How the server stores and returns the shop's declarations (every URL form becomes {"schema": url}).
Role = Literal["user", "assistant"]
Order = Literal["asc", "desc"]

SHOP_CAPABILITIES = [
    {"schema": PAYMENTS},
    {"schema": DECISIONS},
    {"capability": "aitp-03-wallet", "versions": ">=1.0.0,<2"},
]


def mint_key(server: ServerProcess, actor: str) -> str:
    """An actor key, created over HTTP with the admin key (the SDK has no key API)."""
    response = httpx.post(
        f"{server.base_url}/v1/keys", json={"actor": actor}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert response.status_code == 200, response.text
    return response.json()["key"]


@pytest.fixture
def sdk(live_server: ServerProcess) -> Iterator[Callable[[str], openai.OpenAI]]:
    """`sdk(actor)` → an unmodified `openai.OpenAI` client authenticated as that actor."""
    clients: list[openai.OpenAI] = []

    def client(actor: str) -> openai.OpenAI:
        # max_retries=0: an error status must surface at once, not be retried.
        made = openai.OpenAI(api_key=mint_key(live_server, actor), base_url=live_server.base_url + "/v1", max_retries=0)
        clients.append(made)
        return made

    yield client
    for made in clients:
        made.close()


@dataclass
class Conversation:
    user: openai.OpenAI
    shop: openai.OpenAI
    thread: Thread


@pytest.fixture
def conversation(sdk: Callable[[str], openai.OpenAI]) -> Conversation:
    """A thread created by the user agent with the shop (a business agent with capabilities) in it."""
    user, shop = sdk(USER), sdk(SHOP)  # the shop's key makes it known: a thread may name only known actors
    thread = user.beta.threads.create(metadata={"actors": json.dumps(ACTORS), "topic": "shoes"})
    return Conversation(user=user, shop=shop, thread=thread)


def texts(message: Message) -> list[str]:
    return [part.text.value for part in message.content if isinstance(part, TextContentBlock)]


# --------------------------------------------------------------------------- threads


def test_thread_created_with_metadata_actors_is_a_typed_thread_carrying_actors(conversation: Conversation) -> None:
    """The SDK parses the reply as `Thread`; the AITP `actors` field arrives as an extra attribute."""
    thread = conversation.thread

    assert isinstance(thread, Thread)
    assert thread.id.startswith("thread_")
    assert thread.object == "thread"
    assert isinstance(thread.created_at, int) and thread.created_at > 0
    assert thread.tool_resources is None
    assert thread.metadata is not None and thread.metadata["topic"] == "shoes"
    # metadata.actors stays a JSON string (OpenAI metadata values are strings), now normalised.
    assert json.loads(thread.metadata["actors"]) == [
        {"id": USER, "capabilities": []},
        {"id": SHOP, "client_id": "shop-agent/1.0", "capabilities": SHOP_CAPABILITIES},
    ]

    assert thread.model_extra is not None
    actors = thread.model_extra["actors"]
    assert actors == thread.actors  # type: ignore[attr-defined]  # extra fields are attributes too
    assert [(a["id"], a["role"], a["client_id"]) for a in actors] == [
        (USER, "user", None),
        (SHOP, "assistant", "shop-agent/1.0"),
    ]
    assert all(a["object"] == "thread.actor" and a["joined_at"] == thread.created_at for a in actors)
    assert actors[0]["capabilities"] == []
    assert actors[1]["capabilities"] == SHOP_CAPABILITIES
    assert thread.model_extra["parent_id"] is None


def test_thread_retrieve_returns_the_created_thread(conversation: Conversation) -> None:
    """Both members read the same thread back, extras included."""
    for client in (conversation.user, conversation.shop):
        retrieved = client.beta.threads.retrieve(conversation.thread.id)
        assert isinstance(retrieved, Thread)
        assert retrieved.model_dump() == conversation.thread.model_dump()


def test_thread_update_replaces_user_metadata_and_keeps_actors(conversation: Conversation) -> None:
    """`threads.update(metadata=...)` replaces user metadata; the server-managed `actors` key stays."""
    thread = conversation.thread
    updated = conversation.user.beta.threads.update(thread.id, metadata={"topic": "boots", "budget": "120"})

    assert thread.metadata is not None and thread.model_extra is not None
    assert updated.metadata is not None and updated.model_extra is not None
    assert isinstance(updated, Thread)
    assert updated.id == thread.id
    assert updated.metadata == {"topic": "boots", "budget": "120", "actors": thread.metadata["actors"]}
    assert updated.model_extra["actors"] == thread.model_extra["actors"]
    assert conversation.shop.beta.threads.retrieve(thread.id).model_dump() == updated.model_dump()

    # Sending back the metadata just read (actors included) is fine; editing `actors` there is not.
    assert conversation.user.beta.threads.update(thread.id, metadata=updated.metadata).metadata == updated.metadata
    with pytest.raises(openai.BadRequestError) as caught:
        conversation.user.beta.threads.update(thread.id, metadata={**updated.metadata, "actors": "[]"})
    assert caught.value.param == "metadata.actors"


def test_thread_created_with_initial_messages_and_tool_resources(sdk: Callable[[str], openai.OpenAI]) -> None:
    """`threads.create(messages=[...])` stores the messages in order as the creator's; tool_resources round-trip."""
    user = sdk(USER)
    sdk(SHOP)  # its key makes the shop known: a thread may name only known actors
    thread = user.beta.threads.create(
        messages=[
            {"role": "user", "content": "first", "metadata": {"n": "1"}},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ],
        metadata={"actors": json.dumps(ACTORS)},
        tool_resources={"code_interpreter": {"file_ids": ["file_1"]}},
    )
    assert thread.tool_resources is not None and thread.tool_resources.code_interpreter is not None
    assert thread.tool_resources.code_interpreter.file_ids == ["file_1"]

    messages = list(user.beta.threads.messages.list(thread.id, order="asc"))
    assert [texts(m) for m in messages] == [["first"], ["second"]]
    assert [m.metadata for m in messages] == [{"n": "1", "actor": USER}, {"actor": USER}]
    assert {m.role for m in messages} == {"user"}

    # the creator's initial messages are the creator's, whatever role they were sent with
    seeded = user.beta.threads.create(messages=[{"role": "assistant", "content": "said by the creator"}])
    assert [m.role for m in user.beta.threads.messages.list(seeded.id)] == ["user"]
    with pytest.raises(openai.BadRequestError) as caught:
        user.beta.threads.create(messages=[{"role": "system", "content": "no such role"}])  # type: ignore[typeddict-item]
    assert caught.value.param == "messages[0].role"


# --------------------------------------------------------------------------- messages


def test_user_posts_string_list_of_strings_and_text_parts(conversation: Conversation) -> None:
    """The creator writes as `user`; every accepted content form comes back as typed text blocks."""
    user, thread_id = conversation.user, conversation.thread.id

    as_string = user.beta.threads.messages.create(thread_id, role="user", content="I need running shoes")
    # A list of strings is an AITP form outside the SDK's types; the SDK sends it through as is.
    as_strings = user.beta.threads.messages.create(thread_id, role="user", content=["size 43", "blue"])  # type: ignore[list-item]
    as_parts = user.beta.threads.messages.create(
        thread_id,
        role="user",
        content=[{"type": "text", "text": "under 120 EUR"}, {"type": "text", "text": "fast delivery"}],
        metadata={"channel": "chat"},
    )

    for message in (as_string, as_strings, as_parts):
        assert isinstance(message, Message)
        assert message.id.startswith("msg_")
        assert message.object == "thread.message"
        assert message.thread_id == thread_id
        assert message.role == "user"
        assert message.status == "completed"
        assert message.completed_at == message.created_at
        assert message.assistant_id is None and message.run_id is None
        assert message.attachments == []
        assert all(isinstance(part, TextContentBlock) and part.text.annotations == [] for part in message.content)
    assert texts(as_string) == ["I need running shoes"]
    assert texts(as_strings) == ["size 43", "blue"]
    assert texts(as_parts) == ["under 120 EUR", "fast delivery"]
    assert as_string.metadata == {"actor": USER}
    assert as_parts.metadata == {"channel": "chat", "actor": USER}


def test_business_agent_posts_as_assistant_with_text_and_image_parts(conversation: Conversation) -> None:
    """A non-creator member writes with role="assistant"; image parts are typed too."""
    message = conversation.shop.beta.threads.messages.create(
        conversation.thread.id,
        role="assistant",
        content=[
            {"type": "text", "text": "Here is our best match"},
            {"type": "image_url", "image_url": {"url": "https://shop.example/shoe.png"}},
        ],
    )

    assert message.role == "assistant"
    assert message.metadata == {"actor": SHOP}
    text, image = message.content
    assert isinstance(text, TextContentBlock) and text.text.value == "Here is our best match"
    assert isinstance(image, ImageURLContentBlock)
    assert image.image_url.url == "https://shop.example/shoe.png"
    assert image.image_url.detail == "auto"

    listed = conversation.user.beta.threads.messages.list(conversation.thread.id)
    assert [m.model_dump() for m in listed.data] == [message.model_dump()]


def test_message_list_pages_through_three_pages_in_both_orders(conversation: Conversation) -> None:
    """limit=2 over six messages: three pages by `after`, exact ids and `has_more`, asc and desc,
    and the SDK's auto-pagination yields the same sequence."""
    user, shop, thread_id = conversation.user, conversation.shop, conversation.thread.id
    ids = []
    for i in range(6):
        role: Role = "user" if i % 2 == 0 else "assistant"
        client = user if role == "user" else shop
        ids.append(client.beta.threads.messages.create(thread_id, role=role, content=f"message {i}").id)

    orders: list[tuple[Order, list[str]]] = [("asc", ids), ("desc", ids[::-1])]
    for order, expected in orders:
        pages = []
        after: str | openai.Omit = openai.omit
        for _ in range(3):
            page = user.beta.threads.messages.list(thread_id, limit=2, order=order, after=after)
            pages.append(([m.id for m in page.data], page.has_more))
            after = page.data[-1].id
        assert pages == [(expected[0:2], True), (expected[2:4], True), (expected[4:6], False)], order

        first = shop.beta.threads.messages.list(thread_id, limit=2, order=order)
        assert [m.id for m in first] == expected  # iterating a page auto-paginates
        assert [([m.id for m in p.data], p.has_more) for p in first.iter_pages()] == pages

    # `before` gives the page nearest the cursor, still in the requested order.
    page = user.beta.threads.messages.list(thread_id, limit=2, order="asc", before=ids[4])
    assert [m.id for m in page.data] == ids[2:4]
    assert page.has_more is True


def test_message_retrieve_update_and_delete(conversation: Conversation) -> None:
    """The author retrieves, updates metadata of and deletes its message; then it is gone."""
    shop, user, thread_id = conversation.shop, conversation.user, conversation.thread.id
    kept = user.beta.threads.messages.create(thread_id, role="user", content="hello")
    posted = shop.beta.threads.messages.create(thread_id, role="assistant", content="welcome")

    retrieved = user.beta.threads.messages.retrieve(posted.id, thread_id=thread_id)
    assert isinstance(retrieved, Message)
    assert retrieved.model_dump() == posted.model_dump()

    updated = shop.beta.threads.messages.update(posted.id, thread_id=thread_id, metadata={"offer": "o-17"})
    assert updated.id == posted.id
    assert updated.metadata == {"offer": "o-17", "actor": SHOP}
    assert texts(updated) == ["welcome"]
    assert user.beta.threads.messages.retrieve(posted.id, thread_id=thread_id).metadata == updated.metadata

    with pytest.raises(openai.PermissionDeniedError):
        user.beta.threads.messages.update(posted.id, thread_id=thread_id, metadata={"offer": "hijacked"})
    with pytest.raises(openai.PermissionDeniedError):
        user.beta.threads.messages.delete(posted.id, thread_id=thread_id)

    deleted = shop.beta.threads.messages.delete(posted.id, thread_id=thread_id)
    assert isinstance(deleted, MessageDeleted)
    assert (deleted.id, deleted.object, deleted.deleted) == (posted.id, "thread.message.deleted", True)

    with pytest.raises(openai.NotFoundError) as missing:
        user.beta.threads.messages.retrieve(posted.id, thread_id=thread_id)
    assert missing.value.code == "message_not_found"
    assert [m.id for m in user.beta.threads.messages.list(thread_id)] == [kept.id]


# --------------------------------------------------------------------------- errors


def test_actor_outside_the_thread_gets_not_found(
    conversation: Conversation, sdk: Callable[[str], openai.OpenAI]
) -> None:
    """A valid key that is not a member sees 404 everywhere, as if the thread did not exist."""
    stranger = sdk(OUTSIDER)
    thread_id = conversation.thread.id
    message = conversation.user.beta.threads.messages.create(thread_id, role="user", content="private")

    attempts = {
        "retrieve thread": lambda: stranger.beta.threads.retrieve(thread_id),
        "update thread": lambda: stranger.beta.threads.update(thread_id, metadata={"topic": "mine"}),
        "delete thread": lambda: stranger.beta.threads.delete(thread_id),
        "list messages": lambda: stranger.beta.threads.messages.list(thread_id),
        "retrieve message": lambda: stranger.beta.threads.messages.retrieve(message.id, thread_id=thread_id),
        "post user": lambda: stranger.beta.threads.messages.create(thread_id, role="user", content="hi"),
        "post assistant": lambda: stranger.beta.threads.messages.create(thread_id, role="assistant", content="hi"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(openai.NotFoundError) as caught:
            attempt()
        assert caught.value.status_code == 404, name
        assert caught.value.code == "thread_not_found", name
        assert caught.value.type == "invalid_request_error", name

    assert [m.id for m in conversation.user.beta.threads.messages.list(thread_id)] == [message.id]
    assert (conversation.user.beta.threads.retrieve(thread_id).metadata or {})["topic"] == "shoes"


def test_any_sent_role_is_accepted_and_the_derived_role_is_kept(conversation: Conversation) -> None:
    """The SDK requires a role and generic tools always send "user": the service accepts it from anyone and
    keeps the role derived from the author (creator → user, anyone else → assistant)."""
    thread_id = conversation.thread.id
    attempts: list[tuple[openai.OpenAI, Role, str]] = [
        (conversation.shop, "user", "assistant"),
        (conversation.user, "assistant", "user"),
    ]
    for client, sent, derived in attempts:
        message = client.beta.threads.messages.create(thread_id, role=sent, content="hi")
        assert message.role == derived

    listed = conversation.user.beta.threads.messages.list(thread_id, order="asc")
    assert [m.role for m in listed] == ["assistant", "user"]


def test_impersonating_another_actor_via_metadata_actor_is_permission_denied(conversation: Conversation) -> None:
    """A non-admin key can only write as its own actor; naming another in metadata.actor is 403."""
    thread_id = conversation.thread.id
    attempts: list[tuple[openai.OpenAI, Role, str]] = [
        (conversation.user, "user", SHOP),
        (conversation.shop, "assistant", USER),
    ]
    for client, role, victim in attempts:
        with pytest.raises(openai.PermissionDeniedError) as caught:
            client.beta.threads.messages.create(thread_id, role=role, content="fake", metadata={"actor": victim})
        assert caught.value.status_code == 403
        assert caught.value.code == "actor_impersonation"
        assert caught.value.param == "metadata.actor"

    # Naming oneself is allowed and changes nothing.
    own = conversation.shop.beta.threads.messages.create(
        thread_id, role="assistant", content="real", metadata={"actor": SHOP}
    )
    assert own.metadata == {"actor": SHOP}
    assert [m.id for m in conversation.user.beta.threads.messages.list(thread_id)] == [own.id]


def test_creator_deletes_the_thread_and_then_it_is_not_found(conversation: Conversation) -> None:
    """Only the creator may delete; afterwards every member gets NotFoundError."""
    user, shop, thread_id = conversation.user, conversation.shop, conversation.thread.id
    user.beta.threads.messages.create(thread_id, role="user", content="bye")

    with pytest.raises(openai.PermissionDeniedError):
        shop.beta.threads.delete(thread_id)

    deleted = user.beta.threads.delete(thread_id)
    assert isinstance(deleted, ThreadDeleted)
    assert (deleted.id, deleted.object, deleted.deleted) == (thread_id, "thread.deleted", True)

    for client in (user, shop):
        with pytest.raises(openai.NotFoundError):
            client.beta.threads.retrieve(thread_id)
        with pytest.raises(openai.NotFoundError):
            client.beta.threads.messages.list(thread_id)
    with pytest.raises(openai.NotFoundError):
        user.beta.threads.messages.create(thread_id, role="user", content="anyone?")
    with pytest.raises(openai.NotFoundError):
        user.beta.threads.delete(thread_id)


def test_unknown_api_key_is_an_authentication_error(live_server: ServerProcess) -> None:
    """A key the server never issued gets 401 → `openai.AuthenticationError` before anything else."""
    client = openai.OpenAI(api_key="aitp_not_a_real_key", base_url=live_server.base_url + "/v1", max_retries=0)
    with client:
        with pytest.raises(openai.AuthenticationError) as caught:
            client.beta.threads.create()
        assert caught.value.status_code == 401
        assert caught.value.code == "invalid_api_key"
        assert caught.value.type == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            client.beta.threads.retrieve("thread_whatever")
        with pytest.raises(openai.AuthenticationError):
            client.beta.threads.messages.list("thread_whatever")
