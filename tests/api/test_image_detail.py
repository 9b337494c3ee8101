"""An image's `detail` is one of its face's values, whichever face wrote it and whichever reads it: the
official SDK, validating strictly, reads a conversation after every variant (issue 27, Conversations fidelity).

Threads (OpenAI's ImageURL/ImageFile) shows auto, low, high; Conversations (Responses' input_image) auto, low,
high, original. Either face takes those four and null (= auto), anything else is 400 naming the field. Stored as
written; "original" reads as "high" on the Threads face; anything stored before details were checked reads as
"auto" on both. Images by URL and by file id alike. (tests/test_openai_js_sdk.py: the JS SDK's reads.)"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from aitp.store import Store
from aitp.store.records import MessageRecord
from tests.conftest import API

# client.beta.threads is deprecated upstream (Assistants API); it still works and is what a Threads client reads with
pytestmark = pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")

URL = "https://example.com/socks.png"


FILE = "file-socks"
# every detail either face takes ("absent": none sent), as the Threads face and the Conversations face read it
VARIANTS = [
    ("absent", "auto", "auto"),
    (None, "auto", "auto"),
    ("auto", "auto", "auto"),
    ("low", "low", "low"),
    ("high", "high", "high"),
    ("original", "high", "original"),
]


def threads_part(detail: Any, by_file: bool = False) -> dict[str, Any]:
    image: dict[str, Any] = {"file_id": FILE} if by_file else {"url": URL}
    if detail != "absent":
        image["detail"] = detail
    kind = "image_file" if by_file else "image_url"
    return {"type": kind, kind: image}


def conversations_part(detail: Any, by_file: bool = False) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "input_image", **({"file_id": FILE} if by_file else {"image_url": URL})}
    if detail != "absent":
        part["detail"] = detail
    return part


async def strict_reads(api: API, key: str, thread_id: str) -> tuple[list[Any], list[Any]]:
    """(Threads details, Conversations details) as the official SDK reads them with strict validation."""
    client = openai.AsyncOpenAI(
        api_key=key,
        base_url="http://aitp.test/v1",
        http_client=httpx.AsyncClient(transport=api._transport),  # noqa: SLF001 (the in-process app)
        _strict_response_validation=True,
        max_retries=0,
    )
    messages = await client.beta.threads.messages.list(thread_id, order="asc")
    threads = [
        part.image_url.detail if part.type == "image_url" else part.image_file.detail
        for m in messages.data
        for part in m.content
        if part.type in ("image_url", "image_file")
    ]
    items = await client.conversations.items.list(thread_id, order="asc")
    conversations = [
        part.detail for item in items.data for part in getattr(item, "content", []) if part.type == "input_image"
    ]
    return threads, conversations


@pytest.mark.parametrize(("written", "threads_reads", "conversations_reads"), VARIANTS)
async def test_every_threads_detail_reads_strictly_on_both_faces(
    api: API, written: Any, threads_reads: str, conversations_reads: str
) -> None:
    key = await api.key_for("ada")
    ada = api.client(key)
    thread = (await ada.post("/threads", json={})).json()
    parts = [threads_part(written), threads_part(written, by_file=True)]
    posted = await ada.post(f"/threads/{thread['id']}/messages", json={"content": parts})
    assert posted.status_code == 200, posted.text
    assert await strict_reads(api, key, thread["id"]) == ([threads_reads] * 2, [conversations_reads] * 2)


@pytest.mark.parametrize(("written", "threads_reads", "conversations_reads"), VARIANTS)
async def test_every_conversations_detail_reads_strictly_on_both_faces(
    api: API, written: Any, threads_reads: str, conversations_reads: str
) -> None:
    key = await api.key_for("ada")
    ada = api.client(key)
    conversation = (await ada.post("/conversations", json={})).json()
    parts = [conversations_part(written), conversations_part(written, by_file=True)]
    item = {"type": "message", "role": "user", "content": parts}
    added = await ada.post(f"/conversations/{conversation['id']}/items", json={"items": [item]})
    assert added.status_code == 200, added.text
    assert await strict_reads(api, key, conversation["id"]) == ([threads_reads] * 2, [conversations_reads] * 2)


@pytest.mark.parametrize("detail", ["bogus", "HIGH", 3, ""])
async def test_a_detail_neither_face_knows_is_refused_naming_the_field(api: API, detail: Any) -> None:
    ada = await api.actor("ada")
    thread = (await ada.post("/threads", json={})).json()
    refused = await ada.post(f"/threads/{thread['id']}/messages", json={"content": ["look", threads_part(detail)]})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "content[1].image_url.detail"
    item = {"type": "message", "role": "user", "content": [conversations_part(detail)]}
    refused = await ada.post(f"/conversations/{thread['id']}/items", json={"items": [item]})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "items[0].content[0].detail"


async def test_original_sent_on_the_threads_face_reads_as_high_there(api: API) -> None:
    key = await api.key_for("ada")
    ada = api.client(key)
    thread = (await ada.post("/threads", json={})).json()
    posted = await ada.post(f"/threads/{thread['id']}/messages", json={"content": [threads_part("original")]})
    assert posted.json()["content"][0]["image_url"]["detail"] == "high"
    assert await strict_reads(api, key, thread["id"]) == (["high"], ["original"])


@pytest.mark.parametrize("stored", [None, "bogus", "original"])
async def test_details_stored_before_they_were_checked_read_safely(api: API, store: Store, stored: Any) -> None:
    key = await api.key_for("ada")
    ada = api.client(key)
    thread = (await ada.post("/threads", json={})).json()
    posted = (await ada.post(f"/threads/{thread['id']}/messages", json={"content": [threads_part("low")]})).json()
    # as an older server wrote it: the detail as the client sent it
    record = await store.get_message(thread["id"], posted["id"])
    assert isinstance(record, MessageRecord)
    record.content = [
        {"type": "image_url", "image_url": {"url": URL, "detail": stored}},
        {"type": "image_file", "image_file": {"file_id": FILE, "detail": stored}},
    ]
    await store.delete_message(thread["id"], posted["id"], _deleted(posted["id"]))
    record.id = posted["id"] + "x"
    await store.append_message(record, _created(record))
    threads, conversations = await strict_reads(api, key, thread["id"])
    assert threads == ["high" if stored == "original" else "auto"] * 2
    assert conversations == ["original" if stored == "original" else "auto"] * 2


def _deleted(message_id: str) -> Any:
    from aitp.events import payloads
    from aitp.store.records import NewEvent

    return NewEvent("thread.message.deleted", payloads.removed_payload(message_id), 0)


def _created(record: MessageRecord) -> Any:
    from aitp.events import payloads
    from aitp.store.records import NewEvent

    return NewEvent("thread.message.created", payloads.message_payload(record), record.created_at)
