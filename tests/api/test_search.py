"""`GET /v1/threads/search`: a customer finds its conversations by the words of their messages (issue 31, item 5),
each with the message that matched and a plain-text excerpt around the words; only its own threads; a query
that is empty, too long or has too many words is refused naming `q`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from aitp.bindings.openai_threads.models.search import ThreadSearchResults
from tests.conftest import API

PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
RESULTS = TypeAdapter(ThreadSearchResults)
CAPABILITIES = Path(__file__).resolve().parents[2] / "capabilities"


async def thread_with(shop: httpx.AsyncClient, customer: str, *texts: str) -> str:
    actors = [{"id": "socks.near", "capabilities": [PAYMENTS]}, {"id": customer, "capabilities": [PAYMENTS]}]
    response = await shop.post("/threads", json={"actors": actors, "messages": list(texts)})
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


async def searched(client: httpx.AsyncClient, q: str, **params: Any) -> dict[str, Any]:
    response = await client.get("/threads/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    RESULTS.validate_python(body)  # the documented shape
    return body


async def test_a_customer_finds_its_threads_by_any_words_of_their_messages(api: API) -> None:
    ada, shop = await api.actor("ada.near"), await api.actor("socks.near")
    await api.known("ada.near")
    socks = await thread_with(shop, "ada.near", "Welcome to Sunny Socks!")
    long_ago = "We ship everywhere. " * 20 + "Your **merino** socks are in [the parcel](https://x.example/track)."
    posted = await shop.post(f"/threads/{socks}/messages", json={"content": long_ago})
    hats = await thread_with(shop, "ada.near", "Merino hats arrive on Monday")
    await thread_with(shop, "ada.near", "Cotton only")

    body = await searched(ada, "MERINO")

    assert [(item["object"], item["thread"]["id"]) for item in body["data"]] == [
        ("thread.search_result", hats),
        ("thread.search_result", socks),
    ]
    assert body["has_more"] is False
    assert body["data"][0]["thread"] == (await ada.get(f"/threads/{hats}")).json()  # the whole thread object
    match = body["data"][1]["message"]
    assert (match["id"], match["actor"]) == (posted.json()["id"], "socks.near")
    assert match["created_at"] == posted.json()["created_at"]
    # the words around the first match, as the customer reads the message: no Markdown, no link address
    assert match["snippet"].startswith("…")
    assert match["snippet"].endswith("Your merino socks are in the parcel.")
    assert len(match["snippet"]) <= 170
    # all the words, whole words, in any order
    assert [item["thread"]["id"] for item in (await searched(ada, "socks merino"))["data"]] == [socks]
    assert (await searched(ada, "meri"))["data"] == []


async def test_only_the_callers_threads_are_searched(api: API) -> None:
    ada, bob, shop = await api.actor("ada.near"), await api.actor("bob.near"), await api.actor("socks.near")
    mine = await thread_with(shop, "ada.near", "your order of red socks")
    theirs = await thread_with(shop, "bob.near", "your order of red socks")

    assert [item["thread"]["id"] for item in (await searched(ada, "red socks"))["data"]] == [mine]
    assert [item["thread"]["id"] for item in (await searched(bob, "red socks"))["data"]] == [theirs]
    assert [item["thread"]["id"] for item in (await searched(shop, "red socks"))["data"]] == [theirs, mine]
    # an admin, as it lists every thread, searches every thread
    assert [item["thread"]["id"] for item in (await searched(api.admin, "red socks"))["data"]] == [theirs, mine]


async def test_a_quote_is_found_by_its_description(api: API) -> None:
    ada, shop = await api.actor("ada.near"), await api.actor("socks.near")
    thread = await thread_with(shop, "ada.near")
    quote = json.loads((CAPABILITIES / "aitp-01-payments" / "1.0.0" / "examples" / "quote.json").read_text())
    quote["quote"].update(merchant_id="socks.near", description="Three pairs of alpaca socks")
    response = await shop.post(f"/threads/{thread}/messages", json={"content": json.dumps(quote)})
    assert response.status_code == 200, response.text

    [item] = (await searched(ada, "alpaca"))["data"]

    assert item["message"]["snippet"] == "Three pairs of alpaca socks"
    assert (await searched(ada, "merchant"))["data"] == []  # a field's name is no word of the message


async def test_limit_and_has_more(api: API) -> None:
    ada, shop = await api.actor("ada.near"), await api.actor("socks.near")
    threads = [await thread_with(shop, "ada.near", f"parcel {i} left the warehouse") for i in range(3)]

    body = await searched(ada, "parcel warehouse", limit=2)

    assert [item["thread"]["id"] for item in body["data"]] == threads[::-1][:2]
    assert body["has_more"] is True


@pytest.mark.parametrize(
    ("params", "param", "code"),
    [
        ({}, "q", "missing_required_parameter"),
        ({"q": ""}, "q", "invalid_search_query"),
        ({"q": " ?! … "}, "q", "invalid_search_query"),
        ({"q": "socks " * 40}, "q", "string_too_long"),
        ({"q": "one two three four five six seven eight nine"}, "q", "too_many_terms"),
        ({"q": "socks", "limit": 0}, "limit", None),
        ({"q": "socks", "limit": 51}, "limit", None),
        ({"q": "socks", "limit": "many"}, "limit", None),
    ],
)
async def test_a_bad_search_is_refused_naming_the_parameter(
    api: API, params: dict[str, Any], param: str, code: str | None
) -> None:
    ada = await api.actor("ada.near")

    response = await ada.get("/threads/search", params=params)

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code


async def test_a_search_needs_a_key(api: API) -> None:
    response = await api.client(None).get("/threads/search", params={"q": "socks"})
    assert response.status_code == 401


async def test_the_search_path_is_no_thread_id(api: API) -> None:
    ada = await api.actor("ada.near")
    response = await ada.post("/threads/search", json={})
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == "GET"
    thread = (await ada.post("/threads", json={})).json()["id"]
    assert (await ada.get(f"/threads/{thread}")).status_code == 200  # ids still name threads


async def test_a_word_the_index_splits_differently_finds_nothing_rather_than_failing(api: API) -> None:
    # New Tai Lue letters with a vowel sign: one word to the service's pattern, two tokens to FTS5's tokenizer
    ada, shop = await api.actor("ada.near"), await api.actor("socks.near")
    await api.known("ada.near")
    await thread_with(shop, "ada.near", "ᦀᦰᦁ and socks")

    body = await searched(ada, "ᦀᦰᦁ")  # 200, not a 500 from the index (SQLite finds nothing; MongoDB may find it)

    assert len(body["data"]) <= 1
    assert [item["message"]["snippet"] for item in (await searched(ada, "socks"))["data"]] == ["ᦀᦰᦁ and socks"]
