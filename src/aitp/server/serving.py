"""Running the app under uvicorn: the options every server process uses, in one process or in N workers
that share one listening socket (`aitp serve --workers N`).

Workers are separate instances of the service on one store, as several machines would be: each has its own
event tailer (so a subscriber on one worker hears posts made through another), its own registry follower,
and its own in-memory limits (rate limit, connection limit, streams per key: each counts per worker).

uvicorn's supervisor (`uvicorn.supervisors.Multiprocess`) runs them: it binds the socket once, spawns the
workers, restarts one that dies, stops them all on SIGTERM/SIGINT. It pickles its `Config` into every
worker it spawns, and neither the app nor our HTTP protocol class (made per settings, with the connection
limits) can be pickled: `WorkerConfig` carries the settings instead and each worker builds both from them.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from aitp import redaction
from aitp.config import Settings
from aitp.server.http_protocol import Render, http_protocol
from aitp.server.log_config import uvicorn_log_config
from aitp.server.websocket_protocol import WebSocketProtocol

if TYPE_CHECKING:
    from fastapi import FastAPI

# Young collections every 700 allocations (CPython's default) catch the objects in flight while an event
# goes out to a thousand subscribers and promote them to the old generation, which then fills up and is
# collected in full (every object of every connection: 100+ ms pauses). Rarer young collections let
# those objects die young; what is truly cyclic garbage is still collected, a little later.
GC_THRESHOLDS = tuple(int(x) for x in os.environ.get("AITP_GC_THRESHOLDS", "50000,20,100").split(","))


def uvicorn_options(settings: Settings, render: Render) -> dict[str, Any]:
    """How `aitp serve` runs uvicorn (the ingest benchmark serves its baseline with the same options);
    `render` writes the bodies of the refusals below the app (`aitp.server.http_protocol`)."""
    return {
        "host": settings.host,
        "port": settings.port,
        "log_level": "info",
        "log_config": uvicorn_log_config(),  # its handlers redact secrets (keys, URLs' query values)
        # uvicorn's httptools protocol, plus limits on the request head (size, fields, time: 431, 408) and
        # on open connections (503 at once beyond AITP_MAX_CONNECTIONS, raising the open-file limit to fit)
        "http": http_protocol(settings, render),
        # HTTP keep-alive: uvicorn's 5 s default let idle connections close while a client (200 of them
        # in a load test) was sending its next request on them: "connection closed without response"
        "timeout_keep_alive": 30,
        # uvicorn's WebSocket protocol, sending the frames written in one turn of the loop in one write
        "ws": WebSocketProtocol,
        # WebSocket keep-alive: uvicorn pings every peer and drops one that stops answering
        "ws_ping_interval": settings.keepalive_seconds,
        "ws_ping_timeout": settings.keepalive_seconds,
        # a WebSocket frame (a post over the socket) is limited like a request body; bigger ones close with 1009
        "ws_max_size": settings.max_body_bytes if settings.max_body_bytes > 0 else 16 * 1024 * 1024,
        # off by default: per connection it costs ~35 KiB and a deflate of every event sent (bench/fanout.py)
        "ws_per_message_deflate": settings.ws_compression,
    }


def configure_logging() -> None:
    """The service's own log lines (registry sync, event tailer, slow consumers) and its libraries' (httpx's
    requests) next to uvicorn's, with no secret in any of them (aitp.redaction)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    redaction.redact_root_handlers()


def service_app(settings: Settings) -> FastAPI:
    """The app a server process serves, its start-up garbage set aside for the process's lifetime."""
    from aitp.app import create_app

    app = create_app(settings)
    # What start-up built (modules, routes, compiled validators) lives as long as the process: moved out of
    # the cyclic GC's reach, it no longer lengthens every full collection (pauses seen by live subscribers).
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return app


class WorkerConfig(uvicorn.Config):
    """`uvicorn_options(settings)` and the app, as a worker process builds them from the settings (which
    pickle, unlike the app and the protocol class) when uvicorn loads its config there."""

    def __init__(self, settings: Settings, workers: int, render: Render) -> None:
        self.settings = settings
        self.render = render  # a module's function: pickled by name
        options = {**uvicorn_options(settings, render), "http": "httptools"}  # the class: in load(), per worker
        super().__init__(functools.partial(service_app, settings), factory=True, workers=workers, **options)

    def configure_logging(self) -> None:
        super().configure_logging()
        configure_logging()

    def load(self) -> None:
        if not self.loaded:
            self.http = http_protocol(self.settings, self.render)
        super().load()


def serve(settings: Settings, workers: int, render: Render) -> int:
    """Serve until stopped (SIGTERM, SIGINT); the exit status. One worker runs in this process; more run
    in child processes on one socket bound here, each its own instance of the service."""
    if workers <= 1:
        uvicorn.run(service_app(settings), **uvicorn_options(settings, render))
        return 0
    config = WorkerConfig(settings, workers, render)
    socket = config.bind_socket()
    supervisor = Multiprocess(config, sockets=[socket])
    try:
        supervisor.run()
    finally:
        socket.close()
    # a worker that failed to start (store unreachable, port taken) stops them all: say so in the status
    return STARTUP_FAILURE if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0
