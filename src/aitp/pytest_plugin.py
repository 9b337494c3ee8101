"""aitp's pytest plugin: a real `aitp serve` for the tests of agents, loaded by pytest wherever aitp is installed
(the `pytest11` entry point `aitp`; `-p no:aitp` turns it off). The guide is docs/agents.md, "Testing your agent".

Fixtures, all named `aitp_*` so that they never collide with a suite's own:

- `aitp_server` (function): the server a test talks to, an `AitpServer` (`base_url`, `admin_key`, `key(actor)`).
  By default the session's one (`aitp_session_server`): a start takes seconds, too slow to pay per test, and
  a test sees only the threads its actors are in, so tests sharing it rarely see each other. A test (class,
  module) marked `@pytest.mark.aitp_server(**env)` gets a server of its own instead, on an empty store, with
  those settings over `aitp_server_env`'s, stopped after it.
- `aitp_client` (function, async: needs pytest-asyncio): `await aitp_client("shop.near")` is an `AitpClient`
  with a new key of that actor on `aitp_server`, closed after the test.
- `aitp_session_server` (session): the shared server, started on first use, for session-scoped fixtures.
- `aitp_server_env` (session): the settings (`AITP_*` variables) of every server the plugin starts; `{}`, the
  defaults, unless a suite overrides it. The shell's own `AITP_*` variables never reach these servers.
- `aitp_start_server` (function): `aitp_start_server(**env)` starts one more server for the test.

A failing test's report has a section per server that wrote to its log while the test ran: what it wrote.

pytest loads this module in every run, aitp tests or not: it imports pytest, pytest-asyncio if installed, and
`aitp.testing` (with httpx) only; the tests that use the client import it.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import pytest

from aitp.testing import ServerProcess, start_server

try:  # aitp_client is async: pytest-asyncio runs it (`pytest_asyncio.fixture` works in its strict and auto modes)
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover - then aitp_client says what it needs
    _async_fixture = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from aitp.client import AitpClient

MARKER = "aitp_server"
START_TIMEOUT = 60  # seconds a start may take on a busy machine; only a failing start waits that long
LOG_SHOWN = 20_000  # characters of a server's log a failing test's report shows at most (its end)

_SERVERS = pytest.StashKey[list["AitpServer"]]()  # every server the plugin started in this session
_LOG_SIZES = pytest.StashKey[dict[Path, int]]()  # per test: how long each server's log was when it began


@dataclass
class AitpServer(ServerProcess):
    """`aitp serve` running for tests on a fresh SQLite store, with an admin key that mints actors' keys."""

    admin_key: str = field(repr=False)  # out of tracebacks' reprs, as keys are kept out of logs

    def key(self, actor: str, *, admin: bool = False, scopes: Sequence[str] = ()) -> str:
        """A new API key acting as `actor` (`POST /v1/keys`); an actor it names for the first time becomes a
        local actor, who accepts threads from verified actors only until it sets its contact policy."""
        # synchronous, so that sync fixtures can hand keys to agents they start as processes
        created = httpx.post(
            f"{self.base_url}/v1/keys",
            json={"actor": actor, "admin": admin, "scopes": list(scopes)},
            headers={"Authorization": f"Bearer {self.admin_key}"},
            timeout=30,
        )
        if created.status_code != 200:
            raise RuntimeError(f"aitp refused a key for {actor!r}: {created.status_code} {created.text}")
        key: str = created.json()["key"]
        return key

    def client(self, actor: str, *, admin: bool = False, scopes: Sequence[str] = ()) -> AitpClient:
        """An `AitpClient` with a new key of `actor`, for `async with` (it is the caller's to close)."""
        from aitp.client import AitpClient  # pydantic and websockets: loaded by tests that use them only

        return AitpClient(self.base_url, self.key(actor, admin=admin, scopes=scopes))

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def output_since(self, offset: int) -> str:
        """What the server wrote to its log after its first `offset` bytes."""
        with self.log.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace")


class ClientFactory(Protocol):
    """`aitp_client`: `await aitp_client(actor)`."""

    def __call__(self, actor: str, *, admin: bool = False, scopes: Sequence[str] = ()) -> Awaitable[AitpClient]: ...


def _launch(config: pytest.Config, directory: Path, env: Mapping[str, str]) -> AitpServer:
    """Start `aitp serve` (this interpreter's, `python -m aitp`) on a new store in `directory`, with `env` as
    its only `AITP_*` settings and `AITP_ADMIN_KEY` generated unless `env` sets it; watched for reports."""
    admin_key = env.get("AITP_ADMIN_KEY") or "aitp_" + secrets.token_urlsafe(32)
    process = start_server(
        f"sqlite:///{directory / 'aitp.db'}",
        directory / "serve.log",
        # unbuffered: the log is on disk when a failing test's report reads it, not when the server exits
        {"PYTHONUNBUFFERED": "1", **env, "AITP_ADMIN_KEY": admin_key},
        timeout=START_TIMEOUT,
        inherit_aitp_env=False,
    )
    server = AitpServer(process.process, process.port, process.log, admin_key)
    config.stash.setdefault(_SERVERS, []).append(server)
    return server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**env): the test gets an aitp server of its own (aitp_server), with these AITP_* settings",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # before the test's fixtures: a server they start counts from its first byte
    item.stash[_LOG_SIZES] = {server.log: server.log_size() for server in item.config.stash.get(_SERVERS, [])}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        sizes = item.stash.get(_LOG_SIZES, {})
        for server in item.config.stash.get(_SERVERS, []):
            written = server.output_since(sizes.get(server.log, 0))
            if written:
                if len(written) > LOG_SHOWN:
                    written = f"[... the start is in {server.log}]\n{written[-LOG_SHOWN:]}"
                report.sections.append((f"aitp serve log ({server.base_url}) during this test", written))
    return report


@pytest.fixture(scope="session")
def aitp_server_env() -> dict[str, str]:
    """The `AITP_*` settings of every server the plugin starts (`aitp serve`'s defaults: `{}`). Override it
    in your conftest.py, session-scoped, e.g. `{"AITP_CONTACT_POLICY": "anyone"}`."""
    return {}


@pytest.fixture(scope="session")
def aitp_session_server(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory, aitp_server_env: dict[str, str]
) -> Iterator[AitpServer]:
    """The session's shared server, started when first asked for and stopped at the session's end."""
    server = _launch(pytestconfig, tmp_path_factory.mktemp("aitp-session"), aitp_server_env)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aitp_start_server(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory, aitp_server_env: dict[str, str]
) -> Iterator[Callable[..., AitpServer]]:
    """`aitp_start_server(**env)`: a new server on an empty store, `env` over `aitp_server_env`; each one is
    stopped after the test."""
    started: list[AitpServer] = []

    def start(**env: object) -> AitpServer:
        settings = {**aitp_server_env, **{name: str(value) for name, value in env.items()}}
        started.append(_launch(pytestconfig, tmp_path_factory.mktemp("aitp-server"), settings))
        return started[-1]

    try:
        yield start
    finally:
        servers = pytestconfig.stash[_SERVERS] if started else []
        for server in started:
            server.stop()
            # its log grows no more: each later test need not measure it (a suite may start hundreds)
            servers.remove(server)


@pytest.fixture
def aitp_server(request: pytest.FixtureRequest) -> AitpServer:
    """The test's server: the session's, or its own if the test is marked `@pytest.mark.aitp_server(**env)`."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            usage = f"{MARKER} takes settings as keywords: @pytest.mark.{MARKER}(AITP_TURN_BUDGET=3)"
            pytest.fail(usage, pytrace=False)
        start: Callable[..., AitpServer] = request.getfixturevalue("aitp_start_server")
        return start(**marker.kwargs)
    server: AitpServer = request.getfixturevalue("aitp_session_server")
    if server.process.poll() is not None:  # fail here, with why, rather than with a refused connection
        pytest.fail(f"the session's aitp server exited ({server.process.returncode}):\n{server.output()}")
    return server


async def _client_factory(aitp_server: AitpServer) -> AsyncIterator[ClientFactory]:
    """`await aitp_client(actor, admin=False, scopes=())`: an `AitpClient` with a new key of `actor` on
    `aitp_server`; every client it made is closed after the test."""
    from aitp.client import AitpClient

    opened: list[AitpClient] = []

    async def make(actor: str, *, admin: bool = False, scopes: Sequence[str] = ()) -> AitpClient:
        if not opened:  # the admin client that mints keys, made in the loop the test runs in
            opened.append(AitpClient(aitp_server.base_url, aitp_server.admin_key))
        created = await opened[0].create_key(actor, admin=admin, scopes=scopes)
        opened.append(AitpClient(aitp_server.base_url, created.key))
        return opened[-1]

    try:
        yield make
    finally:
        for client in opened:
            await client.aclose()


if _async_fixture is not None:
    aitp_client = _async_fixture(_client_factory, name="aitp_client")
else:  # pragma: no cover - an aitp user without pytest-asyncio

    @pytest.fixture(name="aitp_client")
    def _aitp_client_needs_pytest_asyncio() -> Any:
        pytest.fail(
            "aitp_client is an async fixture: install pytest-asyncio (pip install pytest-asyncio), "
            "or use `async with aitp_server.client(actor) as client:`",
            pytrace=False,
        )
