"""A real local HTTP endpoint for webhook tests: uvicorn on 127.0.0.1, recording every request it gets and
answering as told (a status per request, then 200)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn

from aitp.testing import free_port


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered

    @property
    def event(self) -> dict[str, Any]:
        value: dict[str, Any] = orjson.loads(self.body)
        return value

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    url: str = ""
    # the status of each next request (then 200), or a function of the request deciding it
    answers: list[int] = field(default_factory=list)
    decide: Callable[[Received], int] | None = None
    extra_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def delivered(self) -> list[Received]:
        """The requests it answered 2xx."""
        return [r for r in self.requests if 200 <= r.status < 300]

    async def wait_for(self, check: Callable[[Receiver], bool], timeout: float = 30.0) -> None:
        """Until `check(self)` holds (checked on each request); TimeoutError with what came, else."""
        async with asyncio.timeout(timeout):
            while not check(self):
                self.arrived.clear()
                await self.arrived.wait()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        received = Received(headers, body, 200)
        if self.answers:
            received.status = self.answers.pop(0)
        elif self.decide is not None:
            received.status = self.decide(received)
        self.requests.append(received)
        self.arrived.set()
        await send({"type": "http.response.start", "status": received.status, "headers": self.extra_headers})
        await send({"type": "http.response.body", "body": b""})


@asynccontextmanager
async def receiving(receiver: Receiver | None = None) -> AsyncIterator[Receiver]:
    """`receiver` (a new one if None) served on a free local port while the block runs."""
    receiver = receiver or Receiver()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(receiver, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    receiver.url = f"http://127.0.0.1:{port}/hooks"
    try:
        yield receiver
    finally:
        server.should_exit = True
        await task
