"""Shared fixtures: every backend available, an in-process API client, a real server process.

Backends: SQLite always; MongoDB through `AITP_TEST_MONGODB_URI` (a real server) when set, else
through nx-27017 (the wire-protocol stand-in, started once per session).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from aitp.app import create_app
from aitp.config import Settings
from aitp.pytest_plugin import AitpServer
from aitp.store import Store, open_store
from aitp.testing import ServerProcess, start_server
from tests.support import timeout_tasks
from tests.support.nx27017 import NxServer, start_nx27017

REAL_MONGODB_URI = os.environ.get("AITP_TEST_MONGODB_URI")
ADMIN_KEY = "aitp_test_admin_key"

BACKENDS = ["sqlite", "mongo"]

timeout_tasks.install()


@pytest.fixture(scope="session")
def nx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NxServer | None]:
    if REAL_MONGODB_URI:
        yield None
        return
    server = start_nx27017(tmp_path_factory.mktemp("nx27017"))
    try:
        yield server
    finally:
        server.stop()


def _with_database(uri: str, database: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@dataclass
class Backend:
    """Where a test's store lives, and which known deviations apply to it."""

    name: str  # "sqlite", "mongo" (real MongoDB) or "nx-27017"
    url: str

    @property
    def is_nx27017(self) -> bool:
        return self.name == "nx-27017"

    def require_isolated_transactions(self) -> None:
        """Skip a race test on nx-27017, whose overlapping transactions are not isolated (aborting the loser
        can undo the winner's writes; the loser may fail on a unique index): it runs on SQLite, and on
        MongoDB against a real replica set given as AITP_TEST_MONGODB_URI."""
        if self.is_nx27017:
            pytest.skip(
                "needs a real MongoDB replica set (AITP_TEST_MONGODB_URI): nx-27017 does not isolate "
                "overlapping transactions"
            )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", f"sqlite:///{tmp_path / 'aitp.db'}")
        return
    yield from _mongo_backend(request)


@pytest.fixture
def mongo_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """A fresh MongoDB database (real with AITP_TEST_MONGODB_URI, else nx-27017), for what only MongoDB has."""
    yield from _mongo_backend(request)


def _mongo_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    database = f"aitp_test_{uuid.uuid4().hex[:12]}"
    if REAL_MONGODB_URI:
        yield Backend("mongo", _with_database(REAL_MONGODB_URI, database))
        from pymongo import MongoClient

        with MongoClient(REAL_MONGODB_URI) as client:
            client.drop_database(database)
        return
    server: NxServer = request.getfixturevalue("nx_server")
    yield Backend("nx-27017", _with_database(server.uri, database))


@pytest.fixture
def xfail_on_nx(backend: Backend, request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with the deviation's name to mark the running test xfail only on nx-27017."""

    def mark(deviation: str) -> None:
        if backend.is_nx27017:
            request.applymarker(pytest.mark.xfail(reason=f"nx-27017 deviation: {deviation}", strict=True))

    return mark


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    s = open_store(backend.url)
    await s.open()
    try:
        yield s
    finally:
        await s.close()


class API:
    """An in-process client of the app plus helpers to mint actor keys."""

    def __init__(self, transport: httpx.ASGITransport, app: Any) -> None:
        self._transport = transport
        self._app = app
        self.admin = self.client(ADMIN_KEY)

    def settings_override(self, **changes: Any) -> None:
        """Run the rest of the test with these settings changed (e.g. unknown_capabilities)."""
        runtime = self._app.state.runtime
        runtime.settings = runtime.settings.with_overrides(**changes)

    def openapi(self) -> dict[str, Any]:
        """The app's OpenAPI document."""
        document: dict[str, Any] = self._app.openapi()
        return document

    def client(self, key: str | None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(transport=self._transport, base_url="http://aitp.test/v1", headers=headers)

    async def key_for(self, actor: str, **extra: Any) -> str:
        response = await self.admin.post("/keys", json={"actor": actor, **extra})
        assert response.status_code == 200, response.text
        return response.json()["key"]

    async def known(self, *actors: str, policy: str = "anyone") -> None:
        """Make `actors` known to the server as local actors (the admin sets their contact policy), without
        keys: actors a thread names must exist."""
        for actor in actors:
            response = await self.admin.put(f"/actors/{actor}/contact_policy", json={"policy": policy})
            assert response.status_code == 200, response.text

    async def actor(self, actor: str) -> httpx.AsyncClient:
        """A client whose key acts as `actor`."""
        return self.client(await self.key_for(actor))


@pytest.fixture
async def api(store: Store) -> AsyncIterator[API]:
    # anyone may contact the actors tests make (tests/api/test_identities.py tries the policies themselves)
    app = create_app(Settings(store_url="unused://", admin_key=ADMIN_KEY, contact_policy="anyone"), store=store)
    yield API(httpx.ASGITransport(app=app), app)


@pytest.fixture
def serve_store(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start real `aitp serve` processes on a store URL, env vars as keywords (`workers`: `--workers`)."""
    started: list[ServerProcess] = []

    def start(store_url: str, workers: int = 1, **env: str) -> ServerProcess:
        log = tmp_path / f"serve-{len(started)}.log"
        started.append(start_server(store_url, log, env, timeout=60, workers=workers))
        return started[-1]

    try:
        yield start
    finally:
        for process in started:
            process.stop()


@pytest.fixture
def serve_backend(backend: Backend, serve_store: Callable[..., ServerProcess]) -> Callable[..., ServerProcess]:
    """Start real `aitp serve` processes on the test's backend, admin key `ADMIN_KEY`, anyone may contact the
    actors its keys make (`AITP_CONTACT_POLICY`); env vars as keywords."""

    def start(**env: str) -> ServerProcess:
        return serve_store(backend.url, **{"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone", **env})

    return start


# the live servers are aitp's pytest plugin's (aitp.pytest_plugin), as agent developers get them: a server of
# the test's own, stopped after it, whose log a failing test's report shows
@pytest.fixture
def live_server(aitp_start_server: Callable[..., AitpServer]) -> AitpServer:
    """A real server on the embedded store with a known admin key (`ADMIN_KEY`); anyone may contact the actors
    its keys make (`AITP_CONTACT_POLICY`)."""
    return aitp_start_server(AITP_ADMIN_KEY=ADMIN_KEY, AITP_CONTACT_POLICY="anyone")


@pytest.fixture
def default_live_server(aitp_start_server: Callable[..., AitpServer]) -> AitpServer:
    """`live_server` with the default contact policy (a new actor accepts verified actors only), as a reader of
    the docs starts `aitp serve`."""
    return aitp_start_server(AITP_ADMIN_KEY=ADMIN_KEY)
