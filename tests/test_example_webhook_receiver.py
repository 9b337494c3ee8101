"""`examples/webhook_receiver.py` run as documented (uvicorn, its secret in AITP_WEBHOOK_SECRET) against a
real server: every event of the actor's inbox arrives, signed, and is printed once; a request the service
did not sign is refused with 401 and printed never.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from aitp.testing import ServerProcess, free_port, start_server
from tests.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[1]
WAIT = 30  # seconds any single wait may take


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def server(tmp_path: Path, port: int) -> Iterator[ServerProcess]:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_WEBHOOK_ALLOW": f"http://127.0.0.1:{port}/"}
    process = start_server(f"sqlite:///{tmp_path / 'hooks.db'}", tmp_path / "serve.log", env)
    try:
        yield process
    finally:
        process.stop()


def start_receiver(port: int, secret: str, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "uvicorn", "examples.webhook_receiver:app", "--port", str(port)]
    with log.open("wb") as out:
        receiver = subprocess.Popen(command, cwd=ROOT, env={"AITP_WEBHOOK_SECRET": secret}, stdout=out, stderr=out)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return receiver
        except httpx.HTTPError:
            time.sleep(0.1)
    receiver.kill()
    raise RuntimeError(log.read_text())


async def test_the_example_receiver_prints_each_signed_event_once(
    server: ServerProcess, port: int, tmp_path: Path
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=server.base_url + "/v1", headers=admin, timeout=WAIT) as http:
        key = (await http.post("/keys", json={"actor": "shop.near"})).json()["key"]
        http.headers["Authorization"] = f"Bearer {key}"
        hook = (await http.post("/webhooks", json={"url": f"http://127.0.0.1:{port}/"})).json()
        log = tmp_path / "receiver.log"
        receiver = start_receiver(port, hook["secret"], log)
        try:
            forged = httpx.post(
                f"http://127.0.0.1:{port}/",
                content=b'{"cursor": 1}',
                headers={
                    "webhook-id": "msg_x",
                    "webhook-timestamp": str(int(time.time())),
                    "webhook-signature": "v1,AAAA",
                },
            )
            assert forged.status_code == 401

            thread_id = (await http.post("/threads", json={"actors": [{"id": "shop.near"}]})).json()["id"]
            await http.post(f"/threads/{thread_id}/messages", json={"content": "hello, shop"})
            inbox = (await http.get("/actors/me/events", params={"after": 0})).json()["data"]
            expected = [f"{e['cursor']} {e['type']} {thread_id}" for e in inbox]
            async with asyncio.timeout(WAIT):
                while (
                    len(log.read_text().splitlines()) < len(expected) or "thread.message.created" not in log.read_text()
                ):
                    await asyncio.sleep(0.05)
            printed = [line for line in log.read_text().splitlines() if line.split(" ")[0].isdigit()]
            assert printed == expected
        finally:
            receiver.terminate()
            receiver.wait(WAIT)
