"""The ingest baseline: a bare FastAPI JSON echo on the route aitp takes messages on, served with
`aitp serve`'s own uvicorn options (`aitp.server.serving.uvicorn_options`), so the difference between the two is
what aitp does per message: auth, membership, validation, the store write, the event.

Run: python bench/echo_app.py --port 8001
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from fastapi import Body, FastAPI

from aitp.bindings.http.errors import envelope
from aitp.bindings.http.responses import FastJSONResponse
from aitp.config import Settings
from aitp.server.serving import uvicorn_options

app = FastAPI(title="echo")


@app.post("/v1/threads/{thread_id}/messages")
async def echo(thread_id: str, body: dict[str, Any] = Body(...)) -> FastJSONResponse:  # noqa: B008
    return FastJSONResponse(body)


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, **uvicorn_options(Settings(port=args.port), envelope))


if __name__ == "__main__":
    main()
