"""What a remote A2A agent can make this service hold or reach (issue 28, item 1), end to end.

Specification: an agent's Agent Card is read up to `AITP_A2A_CARD_MAX_BYTES` and its answers up to
`AITP_A2A_REPLY_MAX_BYTES` (a stream whole), the rest refused unread: a card or an answer of 64 MiB or 2 GiB
leaves a real `aitp serve` process's peak memory where it was, and the remote end sees its connection closed
after a small part. A card that cannot be had (too large, not a card) is asked for once, not per message, until
its URL changes. Every request goes to the address the destination check saw for its host, never to what the
name resolves to when connecting (a name only the check resolves still reaches the agent).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aitp.client import AitpClient
from aitp.services import destinations
from aitp.store import Store
from aitp.testing import ServerProcess
from tests.bindings.test_a2a import add_sdk_agent
from tests.conftest import ADMIN_KEY
from tests.deliveries.test_a2a_outbound import Parrot, allow, sdk_agent, service, texts_when
from tests.support.serving import serving

MiB = 1 << 20
CHUNK = b"a" * (64 << 10)


@dataclass
class Lazy:
    """A remote agent that answers its card (GET), or its JSON-RPC calls (POST), with a JSON document `size`
    bytes long, made chunk by chunk as the reader takes it (never held whole), without a Content-Length: how
    much it got to send before the reader hung up tells how much was read."""

    size: int
    huge: str  # "card" or "reply": which answer is that long
    hits: int = 0
    sent: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # the long answer's connection ended
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lazy = False
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method = head.split(b" ", 1)[0]
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ),
                0,
            )
            body = await reader.readexactly(length)
            self.hits += 1
            lazy = (method == b"GET") == (self.huge == "card")
            if lazy:
                await self._lazy(writer)
            else:
                await self._small(writer, method, body)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the reader hung up: what this test waits for
        finally:
            writer.close()
            if lazy:
                self.closed.set()

    async def _small(self, writer: asyncio.StreamWriter, method: bytes, body: bytes) -> None:
        if method == b"GET":
            document = json.dumps(_card_json(f"{self.base}/")).encode()
        else:  # a JSON-RPC call answered with a message
            call = json.loads(body)
            answer = {"message": {"messageId": "r-1", "role": "ROLE_AGENT", "parts": [{"text": "small"}]}}
            document = json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": answer}).encode()
        head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        head += f"content-length: {len(document)}\r\nconnection: close\r\n\r\n"
        writer.write(head.encode() + document)
        await writer.drain()

    async def _lazy(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        prefix = b'{"jsonrpc": "2.0", "id": 1, "result": {"message": {"parts": [{"text": "'
        for chunk in _pieces(prefix, self.size):
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            self.sent += len(chunk)
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def _pieces(prefix: bytes, size: int) -> Iterator[bytes]:
    """`size` bytes: the prefix, then "a"s (an unfinished JSON string), one chunk at a time."""
    yield prefix
    left = size - len(prefix)
    while left > 0:
        yield CHUNK[:left]
        left -= len(CHUNK)


def _card_json(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": "remote",
        "description": "a remote agent",
        "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "remote", "name": "remote", "description": "a remote agent", "tags": ["test"]}],
        **fields,
    }


@asynccontextmanager
async def lazy_agent(size: int, huge: str) -> AsyncIterator[Lazy]:
    agent = Lazy(size, huge)
    server = await asyncio.start_server(agent.serve, "127.0.0.1", 0)
    agent.port = server.sockets[0].getsockname()[1]
    async with server:
        yield agent


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("size", [64 * MiB, 2048 * MiB], ids=["64MiB", "2GiB"])
@pytest.mark.parametrize("huge", ["card", "reply"])
async def test_a_huge_card_or_answer_is_refused_unread_and_the_server_does_not_grow(
    serve_store: Callable[..., ServerProcess], tmp_path: Path, huge: str, size: int
) -> None:
    async with lazy_agent(size, huge) as agent:
        server = serve_store(
            f"sqlite:///{tmp_path / 'limits.db'}",
            AITP_ADMIN_KEY=ADMIN_KEY,
            AITP_CONTACT_POLICY="anyone",
            AITP_WEBHOOK_ALLOW=f"{agent.base}/",
        )
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=30) as admin:
            assert (await admin.get("/health")).json()["pid"] == server.process.pid  # the process measured
            card_url = f"{agent.base}/.well-known/agent-card.json"
            settings = await admin.put("/a2a/remote/settings", json={"agent_card_url": card_url})
            assert settings.status_code == 200, settings.text
            key = (await admin.post("/v1/keys", json={"actor": "alice"})).json()["key"]
            async with AitpClient(base_url=server.base_url, api_key=key) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "remote"}])
                before = peak_rss(server.process.pid)
                await alice.create_message(thread.id, content="hello")
                async with asyncio.timeout(60):  # a hang guard only
                    await agent.closed.wait()
                grown = peak_rss(server.process.pid) - before
                # a read of 1 MiB at most (the default AITP_A2A_REPLY_MAX_BYTES; the card's 256 KiB), plus what
                # the sockets' buffers took before the reader hung up
                assert agent.sent < 32 * MiB
                assert grown < 24 * MiB, f"peak RSS grew by {grown / MiB:.1f} MiB"
                assert [m.content[0].text.value for m in (await alice.list_messages(thread.id)).data] == ["hello"]
                assert (await admin.get("/health")).status_code == 200


@dataclass
class CardDoor:
    """A card URL that counts its readers and answers what `body` says."""

    body: bytes
    hits: int = 0

    async def card(self, request: Request) -> Response:
        self.hits += 1
        return Response(self.body, media_type="application/json")


async def all_gone_through(store: Store, actor: str) -> None:
    """Wait until the agent's deliveries went past the last event of its inbox."""
    last = (await store.list_inbox_events(actor, 0, 1000))[-1].gid
    async with asyncio.timeout(15):
        while (record := await store.a2a.get(actor)) is None or record.cursor < last:
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("body", [b'{"name": "remote", ', b"[1, 2]", b"a" * (300 << 10)], ids=["cut", "list", "300KiB"])
async def test_a_card_that_cannot_be_had_is_asked_for_once_until_its_url_changes(store: Store, body: bytes) -> None:
    door = CardDoor(body)
    parrot = Parrot()
    async with serving(Starlette(routes=[Route("/card.json", door.card)])) as bad, sdk_agent(parrot) as (good, _):
        async with service(store, webhook_allow=(f"{bad}/", *allow(good))) as svc:
            assert (await svc.a2a_settings("remote", agent_card_url=f"{bad}/card.json")).status_code == 200
            async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "remote"}])
                for text in ("one", "two", "three"):
                    await alice.create_message(thread.id, content=text)
                await all_gone_through(store, "remote")
                assert door.hits == 1
                assert parrot.texts == []
                # a new card URL is read at once
                assert (await svc.a2a_settings("remote", agent_card_url=good)).status_code == 200
                await alice.create_message(thread.id, content="four")
                assert await texts_when(alice, thread.id, 5) == ["one", "two", "three", "four", "parrot: four"]
                assert door.hits == 1


async def test_a_card_listing_a_refused_interface_is_not_used(store: Store) -> None:
    door = CardDoor(b"")
    async with serving(Starlette(routes=[Route("/card.json", door.card)])) as base:
        # the card's own address is admitted; its interface hides 127.0.0.1 in a NAT64 address
        port = base.rsplit(":", 1)[1]
        door.body = json.dumps(_card_json(f"http://[64:ff9b::7f00:1]:{port}/")).encode()
        async with service(store, webhook_allow=(f"{base}/",)) as svc:
            assert (await svc.a2a_settings("remote", agent_card_url=f"{base}/card.json")).status_code == 200
            async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "remote"}])
                await alice.create_message(thread.id, content="one")
                await alice.create_message(thread.id, content="two")
                await all_gone_through(store, "remote")
                assert door.hits == 1
                assert [m.content[0].text.value for m in (await alice.list_messages(thread.id)).data] == ["two", "one"]


@asynccontextmanager
async def named_agent(name: str) -> AsyncIterator[tuple[str, Parrot]]:
    """A Parrot whose card names its host `name` (its interface too), served on 127.0.0.1: its card URL."""
    parrot = Parrot()
    app = Starlette()
    async with serving(app) as base:
        public = base.replace("127.0.0.1", name)
        yield add_sdk_agent(app, public, parrot, "remote"), parrot


async def test_requests_go_to_the_address_the_check_saw(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """agent.invalid resolves nowhere (RFC 6761) but in the destination check, where it is 127.0.0.1: the
    agent is reached only if the connections go to the address checked, not to a lookup of their own."""
    asked: list[str] = []
    real: Callable[[str, int], Awaitable[list[str]]] = destinations.resolve

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"] if host == "agent.invalid" else await real(host, port)

    monkeypatch.setattr(destinations, "resolve", resolve)
    async with named_agent("agent.invalid") as (card_url, parrot):
        async with service(store, webhook_allow=allow(card_url)) as svc:
            assert (await svc.a2a_settings("remote", agent_card_url=card_url)).status_code == 200
            async with AitpClient(base_url=svc.base, api_key=await svc.key("alice")) as alice:
                thread = await alice.create_thread(actors=[{"id": "alice"}, {"id": "remote"}])
                await alice.create_message(thread.id, content="hi")
                assert await texts_when(alice, thread.id, 2) == ["hi", "parrot: hi"]
    assert parrot.texts == ["hi"]
    assert "agent.invalid" in asked
