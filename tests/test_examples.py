"""`examples/shop_agent.py` and `examples/user_agent.py` against a real server, as two processes run as
documented: the user agent opens a thread with the shop, asks for socks, picks the cheapest, pays the quote
and exits with the shop's confirmation; the shop declares its capabilities on joining and answers each step.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from aitp.client import AitpClient, SchemaDeclaration, capability_payloads
from aitp.pytest_plugin import AitpServer
from aitp.testing import ServerProcess
from tests.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop_agent.py"
USER = ROOT / "examples" / "user_agent.py"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
WAIT = 30  # seconds any single wait may take


# aitp's pytest plugin (aitp.pytest_plugin) serves these tests, as it serves an agent developer's: each test a
# server of its own (the marker), since they name user.near and shop.near and count their threads; the admin
# key stays ADMIN_KEY
pytestmark = pytest.mark.aitp_server(AITP_ADMIN_KEY=ADMIN_KEY)


@pytest.fixture
def server(aitp_server: AitpServer) -> AitpServer:
    return aitp_server


@pytest.fixture
def keys(aitp_server: AitpServer) -> dict[str, str]:
    return {actor: aitp_server.key(actor) for actor in ("user.near", "shop.near")}


@asynccontextmanager
async def shop_agent(
    base_url: str, key: str, *options: str, python: str | Path = sys.executable, **process: Any
) -> AsyncIterator[list[str]]:
    """The shop running as documented (with `python`, and the `env` or `cwd` given), following its inbox once
    this yields; yields its log lines so far."""
    shop = await asyncio.create_subprocess_exec(
        python, str(SHOP), "--url", base_url, "--key", key, *options,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **process,
    )  # fmt: skip
    lines: list[str] = []
    ready = asyncio.Event()

    async def read() -> None:  # to its end: a full pipe would stall the shop
        assert shop.stderr is not None
        async for raw in shop.stderr:
            lines.append(raw.decode(errors="replace").rstrip())
            if "following the inbox" in lines[-1]:
                ready.set()

    reader = asyncio.create_task(read())
    try:
        await asyncio.wait_for(ready.wait(), WAIT)
        yield lines
    finally:
        shop.terminate()
        await shop.wait()
        await reader


async def user_agent(base_url: str, key: str, *options: str) -> tuple[int, str, str]:
    """Run the user agent to its end: (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(USER), "--url", base_url, "--key", key, *options,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), WAIT)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_user_agent_buys_socks_from_the_shop_agent(
    server: ServerProcess, keys: dict[str, str], tmp_path: Path
) -> None:
    cursor_file = tmp_path / "shop.cursor"
    async with shop_agent(server.base_url, keys["shop.near"], "--cursor-file", str(cursor_file)) as shop_log:
        code, out, err = await user_agent(server.base_url, keys["user.near"], "--quantity", "2")
    assert code == 0, f"{out}\n{err}\n" + "\n".join(shop_log)

    async with AitpClient(server.base_url, keys["user.near"]) as user:
        [thread] = [t async for t in user.iter_threads()]
        messages = [m async for m in user.iter_messages(thread.id, order="asc")]
        actors = {a.id: a.capabilities for a in await user.list_actors(thread.id)}
    payloads = [(m.metadata["actor"], [(p.capability, p.type) for p in capability_payloads(m)]) for m in messages]
    assert payloads == [
        ("user.near", []),
        ("shop.near", [("aitp-02-decisions", "request_decision")]),
        ("user.near", [("aitp-02-decisions", "decision")]),
        ("shop.near", [("aitp-01-payments", "quote")]),
        ("user.near", [("aitp-01-payments", "payment")]),
        ("shop.near", [("aitp-01-payments", "payment_confirmation")]),
    ]
    request, decision, quote, payment, confirmation = (capability_payloads(m)[0].payload for m in messages[1:])
    cheapest = min(request["options"], key=lambda o: Decimal(str(o["quote"]["payment_plans"][0]["amount"])))
    assert decision["options"] == [{"id": cheapest["id"], "quantity": 2}]
    unit = Decimal(str(cheapest["quote"]["payment_plans"][0]["amount"]))
    assert (Decimal(quote["payment_options"][0]["amount"]), quote["merchant_id"]) == (2 * unit, "shop.near")
    assert (payment["quote_id"], payment["payment_method"]["amount"]) == (quote["quote_id"], f"{2 * unit:.2f}")
    assert (confirmation["quote_id"], confirmation["result"]) == (quote["quote_id"], "success")
    assert json.loads(out) == confirmation  # the user agent prints the confirmation it got
    assert actors == {
        "user.near": [SchemaDeclaration(schema=DECISIONS), SchemaDeclaration(schema=PAYMENTS)],
        "shop.near": [SchemaDeclaration(schema=DECISIONS), SchemaDeclaration(schema=PAYMENTS)],  # on joining
    }
    shop_text = "\n".join(shop_log)
    for action in ("declared", "offered 3 socks", "quoted", "confirmed payment"):
        assert action in shop_text, shop_text
    for action in ("asked shop.near for socks", "chose 2 x", "paid"):
        assert action in err, err
    assert int(cursor_file.read_text()) > 0  # where a restarted shop resumes


@pytest.mark.parametrize("example", [SHOP, USER], ids=["shop", "user"])
def test_help_and_a_missing_key(example: Path) -> None:
    env = {**os.environ, "AITP_KEY": ""}
    helped = subprocess.run([sys.executable, str(example), "--help"], capture_output=True, text=True, timeout=WAIT)
    assert helped.returncode == 0 and all(option in helped.stdout for option in ("--url", "--key"))
    keyless = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=WAIT, env=env)
    assert keyless.returncode == 2 and "aitp keys create" in keyless.stderr


async def test_the_shop_survives_a_decision_it_did_not_expect(server: ServerProcess, keys: dict[str, str]) -> None:
    """A customer answers another of the shop's requests (sizes, posted with the shop's key by another part of
    the business): the shop quotes nothing for it, and goes on serving the next customer's words."""
    async with (
        shop_agent(server.base_url, keys["shop.near"]) as shop_log,
        AitpClient(server.base_url, keys["user.near"]) as user,
        AitpClient(server.base_url, keys["shop.near"]) as shop,
    ):
        everyone = [DECISIONS, PAYMENTS]
        thread = await user.create_thread(actors=[{"id": "shop.near", "capabilities": everyone}])
        await user.put_actor(thread.id, "user.near", capabilities=everyone)
        sizes = {"id": "sizes", "type": "checkbox", "options": [{"id": s, "name": s.upper()} for s in "sml"]}
        await shop.create_message(thread.id, {"$schema": DECISIONS, "request_decision": sizes})
        decision = {"request_decision_id": "sizes", "options": [{"id": "m"}]}
        await user.create_message(thread.id, {"$schema": DECISIONS, "decision": decision})
        await user.create_message(thread.id, "Any socks?")

        async def offered() -> bool:
            messages = [m async for m in user.iter_messages(thread.id, order="asc")]
            return any(p.type == "request_decision" and p.payload["id"] != "sizes" for m in messages
                       for p in capability_payloads(m))  # fmt: skip

        for _ in range(int(WAIT / 0.1)):
            if await offered():
                break
            await asyncio.sleep(0.1)
        assert await offered(), "\n".join(shop_log)
        kinds = [p.type for m in [m async for m in user.iter_messages(thread.id)] for p in capability_payloads(m)]
        assert "quote" not in kinds  # nothing quoted for a size
    assert "Traceback" not in "\n".join(shop_log)
