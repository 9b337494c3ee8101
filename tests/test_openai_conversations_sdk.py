"""The official `openai` SDK's `client.conversations`, used unchanged (strict response validation on),
against a real `aitp serve`: a conversation is a thread, its message items are the thread's messages."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import openai
import pytest
from openai.types.conversations import Conversation, ConversationDeletedResource, Message

from aitp.testing import ServerProcess
from tests.test_openai_sdk import mint_key

USER = "user.near"
SHOP = "shop.near"
OUTSIDER = "stranger.near"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"


@pytest.fixture
def sdk(live_server: ServerProcess) -> Iterator[Callable[[str], openai.OpenAI]]:
    clients: list[openai.OpenAI] = []

    def client(actor: str) -> openai.OpenAI:
        made = openai.OpenAI(
            api_key=mint_key(live_server, actor),
            base_url=live_server.base_url + "/v1",
            max_retries=0,
            _strict_response_validation=True,
        )
        clients.append(made)
        return made

    yield client
    for made in clients:
        made.close()


def text_of(item: object) -> str:
    assert isinstance(item, Message)
    return "".join(getattr(part, "text", "") for part in item.content)


def test_a_conversation_through_the_sdk_is_the_same_thread_on_both_faces(
    sdk: Callable[[str], openai.OpenAI], live_server: ServerProcess
) -> None:
    user, shop = sdk(USER), sdk(SHOP)
    actors = [{"id": USER, "capabilities": [DECISIONS]}, {"id": SHOP, "capabilities": [DECISIONS]}]

    created = user.conversations.create(
        items=[{"type": "message", "role": "user", "content": "hello"}, {"role": "user", "content": "anyone?"}],
        metadata={"actors": json.dumps(actors), "topic": "shoes"},
    )
    assert isinstance(created, Conversation) and created.object == "conversation"
    assert created.metadata["topic"] == "shoes"  # type: ignore[index]
    assert [a["id"] for a in json.loads(created.metadata["actors"])] == [USER, SHOP]  # type: ignore[index]

    assert user.conversations.retrieve(created.id).id == created.id
    updated = user.conversations.update(created.id, metadata={"topic": "boots", "actors": created.metadata["actors"]})  # type: ignore[index]
    assert updated.metadata["topic"] == "boots"  # type: ignore[index]

    request = {"$schema": DECISIONS, "request_decision": {"id": "pick", "options": [{"id": "a", "name": "A"}]}}
    added = shop.conversations.items.create(
        created.id,
        items=[
            {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "we have two"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": json.dumps(request)}]},
        ],
    )
    assert [item.role for item in added.data] == ["assistant", "assistant"]  # type: ignore[union-attr]
    assert added.data[1].model_extra["aitp"][0]["type"] == "request_decision"  # type: ignore[index,union-attr]
    reply = user.conversations.items.create(created.id, items=[{"role": "user", "content": "thanks"}])
    assert reply.data[0].role == "user" and reply.data[0].content[0].type == "input_text"  # type: ignore[union-attr]

    texts = ["hello", "anyone?", "we have two", json.dumps(request), "thanks"]
    ascending = list(user.conversations.items.list(created.id, order="asc", limit=2))  # three pages
    assert [text_of(item) for item in ascending] == texts
    descending = list(user.conversations.items.list(created.id, order="desc", limit=3))
    assert [text_of(item) for item in descending] == texts[::-1]
    first_page = user.conversations.items.list(created.id, order="asc", limit=2)
    assert first_page.has_more and first_page.last_id == ascending[1].id

    one = user.conversations.items.retrieve(ascending[2].id, conversation_id=created.id)
    assert text_of(one) == "we have two" and one.role == "assistant"  # type: ignore[union-attr]

    # the Threads face sees the same messages in the same order, as the same objects
    threads = openai.OpenAI(api_key=user.api_key, base_url=user.base_url, max_retries=0)
    with pytest.warns(DeprecationWarning):
        listed = threads.beta.threads.messages.list(created.id, order="asc")
    assert [m.id for m in listed.data] == [item.id for item in ascending]
    assert [m.metadata["actor"] for m in listed.data] == [USER, USER, SHOP, SHOP, USER]  # type: ignore[index]

    with pytest.raises(openai.NotFoundError):
        sdk(OUTSIDER).conversations.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        sdk(OUTSIDER).conversations.items.create(created.id, items=[{"role": "user", "content": "let me in"}])

    after_delete = shop.conversations.items.delete(ascending[2].id, conversation_id=created.id)
    assert isinstance(after_delete, Conversation) and after_delete.id == created.id
    assert len(list(user.conversations.items.list(created.id))) == 4

    gone = user.conversations.delete(created.id)
    assert isinstance(gone, ConversationDeletedResource) and gone.deleted and gone.id == created.id
    with pytest.raises(openai.NotFoundError):
        user.conversations.retrieve(created.id)


def test_a_second_actor_joins_through_the_threads_face_and_posts_items(
    sdk: Callable[[str], openai.OpenAI], live_server: ServerProcess
) -> None:
    user, shop = sdk(USER), sdk(SHOP)
    created = user.conversations.create()
    with pytest.raises(openai.NotFoundError):  # not a member yet
        shop.conversations.items.create(created.id, items=[{"role": "assistant", "content": "hi"}])
    joined = user.post(f"/threads/{created.id}/actors", body={"id": SHOP}, cast_to=object)
    assert joined["id"] == SHOP  # type: ignore[index]

    posted = shop.conversations.items.create(created.id, items=[{"role": "user", "content": "hi"}])
    assert posted.data[0].role == "assistant"  # type: ignore[union-attr]  # derived from the author, as in threads
    assert [a["id"] for a in json.loads(user.conversations.retrieve(created.id).metadata["actors"])] == [USER, SHOP]  # type: ignore[index]
