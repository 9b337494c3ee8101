"""An ASGI app served by uvicorn on a free local port while a block runs (for clients that need a real
socket: SSE streams read as they arrive, clients built on their own HTTP stack)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from aitp.testing import free_port


@asynccontextmanager
async def serving(app: Any, lifespan: str = "off") -> AsyncIterator[str]:
    """The base URL (`http://127.0.0.1:<port>`) of `app` served while the block runs."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
