"""`examples/shop_agent.py` against a real server: the AITP shopping flow with a user built on `AitpClient`.

The agent runs as a subprocess (the command line as documented) and as a task in this process; a user
creates a thread with it, asks for socks, chooses, pays, and gets the confirmation, all over live events.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aitp.client import AitpClient, LiveStream, Message, SchemaDeclaration, TextPart
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "examples" / "shop_agent.py"
DECISIONS = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
PAYMENTS = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
WAIT = 20  # seconds any single wait may take


def load_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shop_agent", AGENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["shop_agent"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(f"sqlite:///{tmp_path / 'shop.db'}", tmp_path / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY})
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
async def keys(server: ServerProcess) -> dict[str, str]:
    async with AitpClient(server.base_url, ADMIN_KEY) as admin:
        return {actor: (await admin.create_key(actor)).key for actor in ("user.near", "shop.near")}


class AgentProcess:
    """The example run as documented; its log is read as it comes (the first line says it is ready)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.ready = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            if "following the inbox" in line:
                self.ready.set()

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
        await self.process.wait()
        await self._reader

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


@contextlib.asynccontextmanager
async def shop_agent(mode: str, base_url: str, key: str, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Any]:
    """The agent running (ready to see any thread created from now on); yields something with `.output`."""
    if mode == "subprocess":
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(AGENT), "--url", base_url, "--key", key, "--actor", "shop.near",
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        agent = AgentProcess(process)
        try:
            await asyncio.wait_for(agent.ready.wait(), WAIT)
            yield agent
        finally:
            await agent.stop()
        return
    caplog.set_level(logging.INFO, logger="shop_agent")
    async with AitpClient(base_url, key) as client:
        # From the start of its (empty) inbox: no race with the thread the user is about to create.
        task = asyncio.create_task(load_agent().ShopAgent(client).run(after=0))
        try:
            yield caplog
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def payload(message: Message, kind: str) -> dict[str, Any]:
    """The `kind` payload of the message's capability part of that type."""
    assert message.aitp is not None
    for part, summary in zip(message.content, message.aitp, strict=True):
        if summary is not None and summary.type == kind:
            assert isinstance(part, TextPart)
            result: dict[str, Any] = json.loads(part.text.value)[kind]
            return result
    raise AssertionError(f"no {kind} in {message}")


def kinds(message: Message) -> list[str | None]:
    return [s.type if s is not None else None for s in message.aitp or []]


async def shop_says(stream: LiveStream[Any], kind: str) -> Message:
    """The shop's next message, which must carry a `kind` capability message."""

    async def next_message() -> Message:
        async for event in stream:
            if event.type == "thread.message.created" and event.data["metadata"]["actor"] == "shop.near":
                return Message.model_validate(event.data)
        raise AssertionError("the thread's feed ended")

    message = await asyncio.wait_for(next_message(), WAIT)
    assert kind in kinds(message), (kind, message)
    return message


@pytest.mark.parametrize("mode", ["subprocess", "task"])
async def test_shop_agent_sells_socks(
    mode: str, server: ServerProcess, keys: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        shop_agent(mode, server.base_url, keys["shop.near"], caplog) as agent,
        AitpClient(server.base_url, keys["user.near"]) as user,
    ):
        # The user declares its own capabilities; the shop declares its own on joining.
        thread = await user.create_thread(
            actors=[{"id": "user.near", "capabilities": [DECISIONS, PAYMENTS]}, "shop.near"]
        )
        async with user.stream(thread.id) as stream:
            await stream.post("Hello there")  # not about socks: no answer
            await stream.post("I want socks")
            offer = await shop_says(stream, "request_decision")
            request = payload(offer, "request_decision")
            assert request["type"] == "products" and len(request["options"]) >= 2
            chosen = request["options"][0]
            price = Decimal(str(chosen["quote"]["payment_plans"][0]["amount"]))

            choice = {"request_decision_id": request["id"], "options": [{"id": chosen["id"], "quantity": 2}]}
            await stream.post({"$schema": DECISIONS, "decision": choice})
            quote = payload(await shop_says(stream, "quote"), "quote")
            [option] = quote["payment_options"]
            assert (Decimal(option["amount"]), option["currency"]) == (2 * price, "USD")
            assert quote["merchant_id"] == "shop.near" and chosen["name"] in quote["description"]

            method = {"type": "near_payment_channel", "token": "usdc.near", "channel_id": "ch-1"}
            paid = {
                "quote_id": quote["quote_id"],
                "payment_method": {**method, "amount": option["amount"], "currency": "USD"},
                "payer_id": "user.near",
                "timestamp": "2029-01-01T00:00:00Z",
                "payer_signature": "ed25519:user",
            }
            await stream.post({"$schema": PAYMENTS, "payment": paid})
            confirmation = payload(await shop_says(stream, "payment_confirmation"), "payment_confirmation")
            assert (confirmation["quote_id"], confirmation["result"]) == (quote["quote_id"], "success")

        messages = [m async for m in user.iter_messages(thread.id, order="asc")]
        actors = await user.list_actors(thread.id)
        log = agent.output if mode == "subprocess" else agent.text

    assert [(m.metadata["actor"], kinds(m)) for m in messages] == [
        ("user.near", []),
        ("user.near", []),
        ("shop.near", [None, "request_decision"]),
        ("user.near", ["decision"]),
        ("shop.near", ["quote"]),
        ("user.near", ["payment"]),
        ("shop.near", ["payment_confirmation"]),
    ]
    for message in messages:
        for summary in message.aitp or []:
            if summary is not None:
                assert summary.validated and summary.version == "1.0.0" and summary.type is not None
                assert summary.capability == ("aitp-02-decisions" if "decision" in summary.type else "aitp-01-payments")
    shop = next(a for a in actors if a.id == "shop.near")
    assert shop.capabilities == [SchemaDeclaration(schema=DECISIONS), SchemaDeclaration(schema=PAYMENTS)]
    for action in ("declared", "offered 3 socks", "quoted", "confirmed payment"):
        assert action in log, log


def test_shop_agent_help() -> None:
    result = subprocess.run([sys.executable, str(AGENT), "--help"], capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 0, result.stderr
    assert all(option in result.stdout for option in ("--url", "--key", "--actor"))
