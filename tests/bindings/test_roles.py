"""A message's role is derived from its author (the thread's creator, and the actors it marks as persons, speak
as `user`; every other actor as `assistant`), whatever the client claimed: by default a claimed role that
differs is replaced, and the Conversations face says so (`AITP-Role-Replaced`); with AITP_STRICT_ROLES it is
refused, 400 `role_mismatch` naming the role (`items[i].role` on Conversations, `role` on Threads), on both
faces (issue 27)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from aitp.config import Settings
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY, API

REPLACED = "AITP-Role-Replaced"
ACTORS = json.dumps([{"id": "ada.near"}, {"id": "shop.near"}])


def item(role: str, text: str = "hello") -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


async def conversation(api: API) -> tuple[httpx.AsyncClient, httpx.AsyncClient, str]:
    """ada.near's conversation (ada speaks as user), shop.near a member (it speaks as assistant)."""
    ada, shop = await api.actor("ada.near"), await api.actor("shop.near")
    created = await ada.post("/conversations", json={"metadata": {"actors": ACTORS}})
    assert created.status_code == 200, created.text
    return ada, shop, created.json()["id"]


async def roles_kept(client: httpx.AsyncClient, conversation_id: str) -> list[str]:
    listed = await client.get(f"/conversations/{conversation_id}/items", params={"order": "asc"})
    assert listed.status_code == 200, listed.text
    return [kept["role"] for kept in listed.json()["data"]]


def refusal(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "role_mismatch"
    return error


async def test_by_default_a_claimed_role_is_replaced_and_the_response_says_so(api: API) -> None:
    ada, shop, conversation_id = await conversation(api)
    items = [item("user"), item("assistant"), item("system"), item("developer")]
    added = await ada.post(f"/conversations/{conversation_id}/items", json={"items": items})
    assert added.status_code == 200, added.text
    assert [kept["role"] for kept in added.json()["data"]] == ["user"] * 4
    assert added.headers[REPLACED] == (
        '"items[1]";sent=assistant;role=user, "items[2]";sent=system;role=user, "items[3]";sent=developer;role=user'
    )

    answered = await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("user")]})
    assert answered.status_code == 200, answered.text
    assert answered.json()["data"][0]["role"] == "assistant"
    assert answered.headers[REPLACED] == '"items[0]";sent=user;role=assistant'

    kept_as_sent = await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("assistant")]})
    assert kept_as_sent.status_code == 200, kept_as_sent.text
    assert REPLACED not in kept_as_sent.headers
    assert await roles_kept(ada, conversation_id) == ["user"] * 4 + ["assistant"] * 2

    # the Threads face replaces too; its response's `role` shows the role kept
    posted = await ada.post(f"/threads/{conversation_id}/messages", json={"role": "assistant", "content": "hi"})
    assert posted.status_code == 200, posted.text
    assert posted.json()["role"] == "user"


async def test_a_new_conversations_first_items_say_so_too(api: API) -> None:
    ada = await api.actor("ada.near")
    created = await ada.post("/conversations", json={"items": [item("assistant"), item("user")]})
    assert created.status_code == 200, created.text
    assert created.headers[REPLACED] == '"items[0]";sent=assistant;role=user'
    assert await roles_kept(ada, created.json()["id"]) == ["user", "user"]

    plain = await ada.post("/conversations", json={"items": [item("user")]})
    assert plain.status_code == 200, plain.text
    assert REPLACED not in plain.headers


async def test_strict_roles_refuse_a_role_the_author_does_not_speak_as_on_both_faces(api: API) -> None:
    api.settings_override(strict_roles=True)
    ada, shop, conversation_id = await conversation(api)

    items = [item("user"), item("assistant")]
    error = refusal(await ada.post(f"/conversations/{conversation_id}/items", json={"items": items}))
    assert error["param"] == "items[1].role"
    assert "'ada.near' speaks as 'user'" in error["message"] and "creator" in error["message"]
    error = refusal(await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("user")]}))
    assert error["param"] == "items[0].role"
    assert "'shop.near' speaks as 'assistant'" in error["message"]
    for role in ("system", "developer"):
        error = refusal(await ada.post(f"/conversations/{conversation_id}/items", json={"items": [item(role)]}))
        assert error["param"] == "items[0].role"
        assert "not a role an aitp author speaks as" in error["message"]

    first = await ada.post("/conversations", json={"items": [item("user"), item("developer")]})
    assert refusal(first)["param"] == "items[1].role"

    error = refusal(await ada.post(f"/threads/{conversation_id}/messages", json={"role": "assistant", "content": "x"}))
    assert error["param"] == "role"
    error = refusal(await shop.post(f"/threads/{conversation_id}/messages", json={"role": "user", "content": "x"}))
    assert error["param"] == "role"
    assert "'shop.near' speaks as 'assistant'" in error["message"]

    assert await roles_kept(ada, conversation_id) == []  # nothing refused was stored, nothing of a refused batch
    assert [t["id"] for t in (await ada.get("/threads")).json()["data"]] == [conversation_id]


async def test_strict_roles_let_each_author_speak_as_it_does(api: API) -> None:
    api.settings_override(strict_roles=True)
    ada, shop, conversation_id = await conversation(api)
    added = await ada.post(f"/conversations/{conversation_id}/items", json={"items": [item("user")]})
    assert added.status_code == 200, added.text
    assert REPLACED not in added.headers
    answered = await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("assistant")]})
    assert answered.status_code == 200, answered.text

    for client, role in ((ada, "user"), (shop, "assistant")):
        posted = await client.post(f"/threads/{conversation_id}/messages", json={"role": role, "content": "hi"})
        assert posted.status_code == 200, posted.text
    unclaimed = await shop.post(f"/threads/{conversation_id}/messages", json={"content": "no role claimed"})
    assert unclaimed.status_code == 200, unclaimed.text
    created = await ada.post("/conversations", json={"items": [item("user")]})
    assert created.status_code == 200, created.text
    assert await roles_kept(ada, conversation_id) == ["user", "assistant", "user", "assistant", "assistant"]


async def test_an_actor_the_creator_marks_as_a_person_speaks_as_user(api: API) -> None:
    api.settings_override(strict_roles=True)
    ada, shop, conversation_id = await conversation(api)
    marked = await ada.post(f"/threads/{conversation_id}", json={"turns": {"persons": ["shop.near"]}})
    assert marked.status_code == 200, marked.text
    error = refusal(await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("assistant")]}))
    assert "'shop.near' speaks as 'user'" in error["message"]
    added = await shop.post(f"/conversations/{conversation_id}/items", json={"items": [item("user")]})
    assert added.status_code == 200, added.text
    assert added.json()["data"][0]["role"] == "user"


@pytest.mark.parametrize(
    ("value", "strict"), [(None, False), ("", False), ("false", False), ("true", True), ("1", True)]
)
def test_the_strict_mode_is_a_setting(value: str | None, strict: bool) -> None:
    env = {} if value is None else {"AITP_STRICT_ROLES": value}
    assert Settings.from_env(env).strict_roles is strict


def test_a_misspelt_strict_mode_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="AITP_STRICT_ROLES"):
        Settings.from_env({"AITP_STRICT_ROLES": "ture"})


def test_a_server_started_with_strict_roles_refuses(serve_store: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = serve_store(f"sqlite:///{tmp_path / 'strict.db'}", AITP_ADMIN_KEY=ADMIN_KEY, AITP_STRICT_ROLES="true")
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    key = httpx.post(f"{server.base_url}/v1/keys", json={"actor": "ada"}, headers=admin).json()["key"]
    with httpx.Client(base_url=server.base_url + "/v1", headers={"Authorization": f"Bearer {key}"}) as ada:
        refused = ada.post("/conversations", json={"items": [item("assistant")]})
        assert refusal(refused)["param"] == "items[0].role"
        assert ada.post("/conversations", json={"items": [item("user")]}).status_code == 200
