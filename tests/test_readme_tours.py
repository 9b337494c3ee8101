"""The README's quick tours run as written against a real `aitp serve`: the curl tour with bash, the
`openai` SDK tour with this interpreter. Every step must succeed (the curl tour fails on any refusal)
and leave the thread the tour describes."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import httpx
import pytest

from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY
from tests.support.docs import ROOT, actor_keys, command, marked_blocks

TOURS = marked_blocks(ROOT / "README.md", "tour")
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
WAIT = 60  # seconds a whole tour may take


@pytest.fixture
def live_server(default_live_server: ServerProcess) -> ServerProcess:
    """The docs run against `aitp serve` as their readers start it: its default contact policy."""
    return default_live_server


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, f"the tour failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def admin_get(server: ServerProcess, path: str) -> Any:
    response = httpx.get(f"{server.base_url}/v1{path}", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert response.status_code == 200, response.text
    return response.json()


def the_only_thread(server: ServerProcess) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The thread the tour made, with its messages and event log, as the admin sees them."""
    [thread] = admin_get(server, "/threads")["data"]
    messages = admin_get(server, f"/threads/{thread['id']}/messages?order=asc")["data"]
    events = admin_get(server, f"/threads/{thread['id']}/events?after=0")["data"]
    return thread, messages, events


def parts(message: dict[str, Any]) -> list[str | None]:
    return [s and s["type"] for s in message["aitp"] or [None] * len(message["content"])]


def assert_the_socks_conversation(server: ServerProcess, chosen: str) -> None:
    thread, messages, events = the_only_thread(server)
    assert [(a["id"], a["role"], a["capabilities"]) for a in thread["actors"]] == [
        ("user.near", "user", [{"schema": DECISIONS}]),
        ("shop.near", "assistant", [{"schema": DECISIONS}]),
    ]
    assert [(m["metadata"]["actor"], m["role"], parts(m)) for m in messages] == [
        ("user.near", "user", [None]),
        ("shop.near", "assistant", parts(messages[1])),
        ("user.near", "user", ["decision"]),
    ]
    assert parts(messages[1])[-1] == "request_decision"
    decision = json.loads(messages[2]["content"][0]["text"]["value"])["decision"]
    assert decision == {"request_decision_id": "socks-1", "options": [{"id": chosen}]}
    assert "thread.message.refused" not in [e["type"] for e in events]


def test_the_readme_marks_both_tours() -> None:
    assert list(TOURS) == ["curl", "openai", "conversations"]


def test_curl_tour(live_server: ServerProcess) -> None:
    # `bash -e`: a step that fails (curl --fail-with-body on a 4xx) ends the tour with its error printed
    result = run(command(TOURS["curl"]), {"AITP_URL": live_server.base_url, "ADMIN": ADMIN_KEY})
    # each answer on a line of its own: the contact policy, two messages, the thread's messages and events
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["object"] for a in answers] == [
        "actor.contact_policy",
        "thread.message",
        "thread.message",
        "list",
        "list",
    ]
    assert_the_socks_conversation(live_server, chosen="blue")


def test_curl_tour_says_what_it_needs() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ADMIN"}
    result = subprocess.run(["bash", "-c", TOURS["curl"].code], env=env, capture_output=True, text=True, timeout=WAIT)
    assert result.returncode != 0 and "set ADMIN to the admin key aitp serve printed" in result.stderr


def test_openai_sdk_tour(live_server: ServerProcess) -> None:
    keys = actor_keys(live_server.base_url, ADMIN_KEY)
    result = run(command(TOURS["openai"]), {"AITP_URL": live_server.base_url, **keys})
    assert result.stdout.splitlines()[0] == "user.near user I would like to buy some socks"
    assert result.stdout.splitlines()[-1].startswith("user.near user {")
    assert_the_socks_conversation(live_server, chosen="red")


def test_conversations_tour(live_server: ServerProcess) -> None:
    keys = actor_keys(live_server.base_url, ADMIN_KEY)
    result = run(command(TOURS["conversations"]), {"AITP_URL": live_server.base_url, **keys})
    assert result.stdout.splitlines()[0] == "user.near user I would like to buy some socks"
    assert result.stdout.splitlines()[-1].startswith("user.near user {")
    assert_the_socks_conversation(live_server, chosen="blue")  # read back through the Threads routes
