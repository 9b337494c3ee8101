"""Messages: content forms, AITP role derivation, authorship, paging by per-thread sequence."""

from __future__ import annotations

import httpx

from tests.conftest import API


async def _thread(api: API) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    """A thread created by root.near (the `user`) with shop.near (an `assistant`) in it."""
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    thread = (await root.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()
    return root, shop, thread["id"]


async def test_message_object_has_every_openai_field(api: API) -> None:
    root, _, thread_id = await _thread(api)
    response = await root.post(f"/threads/{thread_id}/messages", json={"role": "user", "content": "hello"})
    assert response.status_code == 200, response.text
    message = response.json()
    assert message["id"].startswith("msg_")
    assert message["object"] == "thread.message"
    assert message["thread_id"] == thread_id
    assert message["status"] == "completed"
    assert message["completed_at"] == message["created_at"]
    for key in ("incomplete_details", "incomplete_at", "assistant_id", "run_id"):
        assert message[key] is None
    assert message["attachments"] == []
    assert message["content"] == [{"type": "text", "text": {"value": "hello", "annotations": []}}]
    assert message["metadata"] == {"actor": "root.near"}
    assert message["aitp"] is None


async def test_content_as_string_list_of_strings_and_parts(api: API) -> None:
    root, _, thread_id = await _thread(api)
    bodies = [
        "plain",
        ["first", '{"not": "a capability"}'],
        [{"type": "text", "text": "part"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
    ]
    parts = [(await root.post(f"/threads/{thread_id}/messages", json={"content": c})).json()["content"] for c in bodies]
    assert parts[0] == [{"type": "text", "text": {"value": "plain", "annotations": []}}]
    assert [p["text"]["value"] for p in parts[1]] == ["first", '{"not": "a capability"}']
    assert parts[2] == [
        {"type": "text", "text": {"value": "part", "annotations": []}},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "auto"}},
    ]


async def test_bad_content_names_the_part(api: API) -> None:
    root, _, thread_id = await _thread(api)
    cases = [
        ({"content": []}, "content"),
        ({"content": [{"type": "audio"}]}, "content[0].type"),
        ({"content": ["ok", {"type": "text", "text": 5}]}, "content[1].text"),
        ({"content": [3]}, "content[0]"),
        ({}, "content"),
        ({"content": "x", "attachments": [{"tools": []}]}, "attachments[0].file_id"),
        ({"content": "x", "extra": 1}, "extra"),
    ]
    for body, param in cases:
        response = await root.post(f"/threads/{thread_id}/messages", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param, (body, response.json())


async def test_role_is_derived_from_the_author(api: API) -> None:
    """AITP: the thread's creator writes as `user`, every other actor as `assistant`."""
    root, shop, thread_id = await _thread(api)
    by_root = (await root.post(f"/threads/{thread_id}/messages", json={"content": "hi"})).json()
    by_shop = (await shop.post(f"/threads/{thread_id}/messages", json={"content": "hello"})).json()
    assert (by_root["role"], by_root["metadata"]["actor"]) == ("user", "root.near")
    assert (by_shop["role"], by_shop["metadata"]["actor"]) == ("assistant", "shop.near")


async def test_a_sent_role_is_accepted_and_the_derived_one_is_kept(api: API) -> None:
    """Generic OpenAI clients send `role: "user"` whoever they are: any of user/assistant is accepted from
    any author, and the message keeps the role derived from its author."""
    root, shop, thread_id = await _thread(api)
    for client, sent, kept in (
        (root, "assistant", "user"),
        (root, "user", "user"),
        (shop, "user", "assistant"),
        (shop, "assistant", "assistant"),
    ):
        response = await client.post(f"/threads/{thread_id}/messages", json={"role": sent, "content": "x"})
        assert response.status_code == 200, response.text
        assert response.json()["role"] == kept
        stored = (await client.get(f"/threads/{thread_id}/messages/{response.json()['id']}")).json()
        assert stored["role"] == kept


async def test_a_role_other_than_user_or_assistant_is_refused(api: API) -> None:
    root, _, thread_id = await _thread(api)
    response = await root.post(f"/threads/{thread_id}/messages", json={"role": "system", "content": "x"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "role"


async def test_impersonation_is_refused_but_own_actor_is_fine(api: API) -> None:
    root, shop, thread_id = await _thread(api)
    refused = await shop.post(
        f"/threads/{thread_id}/messages", json={"content": "x", "metadata": {"actor": "root.near"}}
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["param"] == "metadata.actor"
    assert refused.json()["error"]["code"] == "actor_impersonation"
    own = await shop.post(f"/threads/{thread_id}/messages", json={"content": "x", "metadata": {"actor": "shop.near"}})
    assert own.status_code == 200


async def test_admin_may_write_as_a_member_but_not_as_a_stranger(api: API) -> None:
    _, _, thread_id = await _thread(api)
    as_shop = await api.admin.post(
        f"/threads/{thread_id}/messages", json={"content": "x", "metadata": {"actor": "shop.near"}}
    )
    assert as_shop.status_code == 200, as_shop.text
    assert as_shop.json()["role"] == "assistant"
    stranger = await api.admin.post(
        f"/threads/{thread_id}/messages", json={"content": "x", "metadata": {"actor": "nobody"}}
    )
    assert stranger.status_code == 400
    assert stranger.json()["error"]["code"] == "actor_not_member"


async def test_listing_pages_by_sequence_in_both_orders(api: API) -> None:
    root, shop, thread_id = await _thread(api)
    ids = []
    for i in range(7):
        client = root if i % 2 == 0 else shop
        ids.append((await client.post(f"/threads/{thread_id}/messages", json={"content": f"m{i}"})).json()["id"])

    async def walk(order: str) -> list[list[str]]:
        pages, after = [], None
        while True:
            params = {"limit": 3, "order": order, **({"after": after} if after else {})}
            page = (await root.get(f"/threads/{thread_id}/messages", params=params)).json()
            pages.append([m["id"] for m in page["data"]])
            assert page["first_id"] == page["data"][0]["id"] and page["last_id"] == page["data"][-1]["id"]
            if not page["has_more"]:
                return pages
            after = page["last_id"]

    assert await walk("asc") == [ids[0:3], ids[3:6], ids[6:7]]
    assert await walk("desc") == [ids[6:3:-1], ids[3:0:-1], ids[0:1]]
    default = (await root.get(f"/threads/{thread_id}/messages")).json()
    assert [m["id"] for m in default["data"]] == list(reversed(ids))  # desc, limit 20
    before = (
        await root.get(f"/threads/{thread_id}/messages", params={"order": "asc", "before": ids[5], "limit": 2})
    ).json()
    assert [m["id"] for m in before["data"]] == ids[3:5] and before["has_more"] is True
    between = (
        await root.get(f"/threads/{thread_id}/messages", params={"order": "asc", "after": ids[1], "before": ids[5]})
    ).json()
    assert [m["id"] for m in between["data"]] == ids[2:5]


async def test_list_parameters_are_checked(api: API) -> None:
    root, _, thread_id = await _thread(api)
    other = (await root.post("/threads", json={"messages": ["elsewhere"]})).json()["id"]
    foreign = (await root.get(f"/threads/{other}/messages")).json()["data"][0]["id"]
    cases = [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"order": "sideways"}, "order"),
    ]
    for params, param in cases:
        response = await root.get(f"/threads/{thread_id}/messages", params=params)
        assert response.status_code == 400, params
        assert response.json()["error"]["param"] == param
    # A cursor must be a message of this thread.
    response = await root.get(f"/threads/{thread_id}/messages", params={"after": foreign})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "after"


async def test_retrieve_modify_delete_a_message(api: API) -> None:
    root, shop, thread_id = await _thread(api)
    message = (await shop.post(f"/threads/{thread_id}/messages", json={"content": "x"})).json()
    url = f"/threads/{thread_id}/messages/{message['id']}"
    assert (await root.get(url)).json() == message
    # Only the author (or an admin) may change or delete it.
    assert (await root.post(url, json={"metadata": {"k": "v"}})).status_code == 403
    assert (await root.delete(url)).status_code == 403
    updated = await shop.post(url, json={"metadata": {"k": "v"}})
    assert updated.json()["metadata"] == {"k": "v", "actor": "shop.near"}
    assert (await shop.post(url, json={"metadata": {"actor": "root.near"}})).status_code == 400
    assert (await shop.post(url, json={})).json() == updated.json()
    deleted = await shop.delete(url)
    assert deleted.json() == {"id": message["id"], "object": "thread.message.deleted", "deleted": True}
    assert (await root.get(url)).status_code == 404
    assert (await shop.delete(url)).status_code == 404


async def test_a_message_is_only_reachable_through_its_own_thread(api: API) -> None:
    root, _, thread_id = await _thread(api)
    other = (await root.post("/threads", json={})).json()["id"]
    message = (await root.post(f"/threads/{thread_id}/messages", json={"content": "x"})).json()
    for method in ("GET", "DELETE"):
        response = await root.request(method, f"/threads/{other}/messages/{message['id']}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "message_not_found"
