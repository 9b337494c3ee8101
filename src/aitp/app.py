"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles

from aitp import __version__
from aitp.auth import bearer_token
from aitp.bindings.a2a import routes as a2a
from aitp.bindings.a2a.outbound import RemoteAgents
from aitp.bindings.http import errors as http_errors
from aitp.bindings.http.context import ContextMiddleware
from aitp.bindings.openai_conversations.routes import routes as conversation_routes
from aitp.bindings.openai_threads import errors, openapi, render
from aitp.bindings.openai_threads.routes import NoKeyNeeded, api_routes
from aitp.bindings.openai_threads.web import WebMount
from aitp.capabilities.registry import Registry, default_directory
from aitp.config import Settings
from aitp.deliveries.a2a import A2ADeliveries
from aitp.deliveries.webhooks import WebhookDeliveries
from aitp.events.hub import Hub
from aitp.gate import Gate
from aitp.runtime import Runtime
from aitp.services import registration, revocation
from aitp.services.connections import stream_slots
from aitp.shipped import shipped_directory
from aitp.store import Store, open_store
from aitp.tasks import cancel


def create_app(settings: Settings | None = None, store: Store | None = None) -> FastAPI:
    """Build the app. A `store` passed in is used as is (opened and closed by the caller);
    otherwise one is opened from `settings.store_url` for the app's lifetime."""
    settings = settings or Settings.from_env()
    owns_store = store is None
    directory = Path(settings.capabilities_dir) if settings.capabilities_dir else default_directory()
    store = store or open_store(settings.store_url)
    runtime = Runtime(
        store=store,
        registry=Registry.from_directory(directory),
        settings=settings,
        hub=Hub(store, poll_interval=settings.poll_interval),
    )
    # webhook bodies are inbox events exactly as this binding's inbox stream sends them
    deliveries = WebhookDeliveries(runtime, render.inbox_frame)
    # A2A agents standing in threads as actors: messages go out, and answers come in, as the A2A face says
    a2a_deliveries = A2ADeliveries(runtime, RemoteAgents(runtime))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if owns_store:
            await runtime.store.open()
        await registration.sync_registry(runtime)
        await runtime.hub.start()
        await deliveries.start()
        await a2a_deliveries.start()
        followers = [
            # streams of keys revoked by other processes end within PRINCIPAL_TTL
            asyncio.create_task(
                revocation.watch(runtime.store, runtime.state(Gate).principals, runtime.state(stream_slots)),
                name="aitp-revocation-watch",
            ),
            # versions registered through other instances are usable here within FOLLOW_INTERVAL
            asyncio.create_task(registration.follow(runtime), name="aitp-registry-follow"),
        ]
        try:
            yield
        finally:
            await cancel(followers)
            await a2a_deliveries.stop()
            await deliveries.stop()
            await runtime.hub.stop()
            if owns_store:
                await runtime.store.close()

    app = FastAPI(
        title="aitp",
        version=__version__,
        description="Thread service for the Agent Interaction & Transaction Protocol: OpenAI Assistants v2 "
        "Threads API compatible, plus AITP-T01 actors and capabilities.",
        lifespan=lifespan,
        # FastAPI's OpenTelemetry instrumentation, unused here, asked the global providers whether it was
        # configured on every request (~3 µs in process): off, it never asks
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # A2A's four routes first: a SendMessage was matched against every API route before its own (3% of its CPU)
        routes=[*a2a.routes(), *api_routes(), *conversation_routes()],
    )
    app.state.runtime = runtime  # for tests and tools; requests find it in their scope (aitp.bindings.http.context)
    app.state.deliveries = deliveries
    http_errors.install(app)
    openapi.install(app)
    threads_public = NoKeyNeeded(app.routes)
    context: dict[str, Any] = {
        "runtime": runtime,
        "public": lambda scope: threads_public(scope) and not a2a.needs_key(scope),
        "refuse": errors.refusal,
    }
    app.add_middleware(ContextMiddleware, **context)

    @app.get("/health", tags=["health"], summary="Liveness (no key needed); with an admin key, counters too")
    async def health(request: Request) -> dict[str, Any]:
        # pid: which worker answered, under `aitp serve --workers N` (all share one port)
        answer: dict[str, Any] = {"status": "ok", "version": __version__, "pid": os.getpid()}
        # what the service is doing (deliveries failing, endpoints disabled) is the operator's: an admin key's
        authorization = request.headers.get("authorization")
        if authorization is not None and (await runtime.state(Gate).admit(bearer_token(authorization))).admin:
            answer["webhooks"] = deliveries.health()
        return answer

    # the chat UI: plain ES modules and CSS, no build step; mounted last so API routes win
    web = Path(settings.web_dir) if settings.web_dir else shipped_directory("web")
    app.router.routes.append(WebMount("/", StaticFiles(directory=web, html=True, check_dir=False), name="web"))
    return app
