"""The per-thread event log: every mutation, strictly increasing seq, written with the change."""

from __future__ import annotations

from tests.conftest import API


async def test_mixed_mutations_produce_a_contiguous_ordered_log(api: API) -> None:
    root = await api.actor("root.near")
    shop = await api.actor("shop.near")
    thread = (await root.post("/threads", json={"messages": ["hi"]})).json()
    tid = thread["id"]
    await root.post(f"/threads/{tid}/actors", json={"id": "shop.near"})
    message = (await shop.post(f"/threads/{tid}/messages", json={"content": "hello"})).json()
    await shop.post(f"/threads/{tid}/messages/{message['id']}", json={"metadata": {"k": "v"}})
    await root.post(f"/threads/{tid}", json={"metadata": {"topic": "socks"}})
    await shop.post(f"/threads/{tid}/actors", json={"id": "shop.near", "capabilities": ["https://x/schema.json"]})
    await shop.delete(f"/threads/{tid}/messages/{message['id']}")
    await shop.delete(f"/threads/{tid}/actors/shop.near")

    log = (await root.get(f"/threads/{tid}/events")).json()
    assert [e["type"] for e in log["data"]] == [
        "thread.created",
        "thread.message.created",
        "thread.actor.joined",
        "thread.message.created",
        "thread.message.updated",
        "thread.updated",
        "thread.actor.updated",
        # the negotiation view lists the unknown declaration, then drops it when shop leaves
        "thread.capabilities.updated",
        "thread.message.deleted",
        "thread.actor.left",
        "thread.capabilities.updated",
    ]
    assert [e["seq"] for e in log["data"]] == list(range(1, 12))
    assert log["last_seq"] == 11 and log["has_more"] is False
    assert all(e["thread_id"] == tid and isinstance(e["created_at"], int) for e in log["data"])
    # Each event carries the full object it produced.
    assert log["data"][0]["data"] == thread
    assert log["data"][3]["data"] == message
    assert log["data"][4]["data"]["metadata"] == {"k": "v", "actor": "shop.near"}
    assert log["data"][5]["data"]["metadata"]["topic"] == "socks"
    assert log["data"][7]["data"]["unknown"] == [
        {"actor": "shop.near", "declaration": {"schema": "https://x/schema.json"}}
    ]
    assert log["data"][8]["data"] == {"id": message["id"], "object": "thread.message.deleted", "deleted": True}
    assert log["data"][10]["data"]["unknown"] == []


async def test_events_resume_after_a_cursor_in_pages(api: API) -> None:
    root = await api.actor("root.near")
    tid = (await root.post("/threads", json={})).json()["id"]
    for i in range(5):
        await root.post(f"/threads/{tid}/messages", json={"content": str(i)})
    page = (await root.get(f"/threads/{tid}/events", params={"after": 2, "limit": 2})).json()
    assert [e["seq"] for e in page["data"]] == [3, 4] and page["has_more"] is True and page["last_seq"] == 4
    rest = (await root.get(f"/threads/{tid}/events", params={"after": page["last_seq"]})).json()
    assert [e["seq"] for e in rest["data"]] == [5, 6] and rest["has_more"] is False
    empty = (await root.get(f"/threads/{tid}/events", params={"after": 6})).json()
    assert empty["data"] == [] and empty["last_seq"] == 6
    bad = await root.get(f"/threads/{tid}/events", params={"after": -1})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "after"


async def test_refused_writes_leave_no_event(api: API) -> None:
    root = await api.actor("root.near")
    tid = (await root.post("/threads", json={})).json()["id"]
    await root.post(f"/threads/{tid}/messages", json={"content": "x", "role": "system"})
    await root.post(f"/threads/{tid}/messages", json={"content": []})
    assert [e["type"] for e in (await root.get(f"/threads/{tid}/events")).json()["data"]] == ["thread.created"]
