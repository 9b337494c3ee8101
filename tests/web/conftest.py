"""Browser fixtures: a real `aitp serve` process and Debian's Chromium driven by Playwright.

Pages are opened signed in through the link the UI understands (`/#code=<one-time code>&thread=<id>`), as
`aitp serve` prints for the admin: no key is ever put in a URL. Agents talk to the same server over HTTP.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

CHROMIUM = os.environ.get("AITP_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# without these Chromium keeps dialling Google's hosts, which this network refuses
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# a test taking `size` (and the `sized` page) runs at both widths the issues name: desktop and a touch phone
SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# an API key (`aitp_` and its secret), or the test admin key; one-time codes (`aitpt_`, `aitps_`) are not keys
KEY = re.compile(r"aitp_[A-Za-z0-9_-]{20,}|" + re.escape(ADMIN_KEY))


def assert_no_key_in_server_log(process: ServerProcess) -> None:
    """The whole log of a server the browser used: no key, and no key the log had to hide (a key sent where it
    does not belong, e.g. a WebSocket URL's `?token=`; one-time tickets are redacted too, and may be there)."""
    log = process.output()
    assert not KEY.search(log), f"an API key in the server log: {KEY.search(log)}"
    assert "aitp_[redacted]" not in log and "token=" not in log, "a key was sent in a URL (the log redacted it)"


# module scope, not session: the sync driver keeps an event loop running while it is open, which
# breaks pytest-asyncio tests collected after a browser test in the same run
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package (the README test command does)"
        )
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


class WebServer:
    """The server under test, plus agents that talk to it over HTTP."""

    def __init__(self, process: ServerProcess) -> None:
        self.process = process
        self.base_url = process.base_url
        self.admin = self.client(ADMIN_KEY)

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=f"{self.base_url}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=10)

    def key_for(self, actor: str, **extra: Any) -> str:
        response = self.admin.post("/keys", json={"actor": actor, **extra})
        assert response.status_code == 200, response.text
        return response.json()["key"]

    def known(self, *actors: str) -> None:
        """Make `actors` known to the server (local actors anyone may contact), without keys: a thread may name
        only actors the server knows."""
        for actor in actors:
            response = self.admin.put(f"/actors/{actor}/contact_policy", json={"policy": "anyone"})
            assert response.status_code == 200, response.text

    def agent(self, actor: str) -> httpx.Client:
        """An HTTP client whose key acts as `actor`."""
        return self.client(self.key_for(actor))

    def sign_in_code(self, key: str) -> str:
        """A one-time sign-in code made by `key` (for its actor)."""
        response = self.client(key).post("/sign-in-codes", json={})
        assert response.status_code == 200, response.text
        return response.json()["code"]

    def url(self, key: str, thread: str | None = None, base_url: str | None = None) -> str:
        """The UI's address, signing in as the actor of `key` with a one-time code (and with `thread` open)."""
        fragment = f"code={self.sign_in_code(key)}" + (f"&thread={thread}" if thread else "")
        return f"{base_url or self.base_url}/#{fragment}"


@pytest.fixture(scope="module")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    directory = tmp_path_factory.mktemp("web")
    # anyone may contact the actors its keys make (the UI's identity: tests/web/test_identity.py)
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_CONTACT_POLICY": "anyone"}
    process = start_server(f"sqlite:///{directory / 'web.db'}", directory / "serve.log", env)
    server = WebServer(process)
    try:
        yield server
    finally:
        server.admin.close()
        process.stop()
    assert_no_key_in_server_log(process)


class FileHost:
    """A local HTTP server for documents the tests publish: form definitions, product photos."""

    def __init__(self) -> None:
        files: dict[str, tuple[str, bytes]] = {}
        self.files = files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                content_type, body = files.get(self.path, ("text/plain", b"not found"))
                self.send_response(200 if self.path in files else 404)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, path: str, body: bytes, content_type: str) -> str:
        """Serve `body` at `path` (starting with /); its URL."""
        self.files[path] = (content_type, body)
        return self.base_url + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def file_host() -> Iterator[FileHost]:
    host = FileHost()
    yield host
    host.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with watched_page(browser, viewport={"width": 1280, "height": 800}) as page:
        yield page


@pytest.fixture
def sized(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    """A watched page at the test's `size` (a phone's with touch)."""
    size = request.getfixturevalue("size")
    touch = {"has_touch": True, "is_mobile": True} if size == PHONE else {}
    with watched_page(browser, viewport=size, **touch) as page:
        yield page


@contextmanager
def watched_page(browser: Browser, **context_options: Any) -> Iterator[Page]:
    """A page in a new browser context (`context_options`: viewport, touch...) that fails the test, when closed,
    on an uncaught exception in the UI, an API key in a URL or a console message, or a socket without a ticket."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    errors: list[str] = []
    seen: list[str] = []  # every console message and every URL the page asked for (sockets too)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: seen.append(f"console: {message.text}"))
    page.on("request", lambda request: seen.append(f"request: {request.url}"))
    page.on("websocket", lambda socket: seen.append(f"websocket: {socket.url}"))
    try:
        yield page
    finally:
        context.close()
    # an uncaught exception in the UI fails the test even when the assertions passed
    assert not errors, f"uncaught errors in the page: {errors}"
    leaks = [line for line in seen if KEY.search(line)]
    assert not leaks, f"an API key in a URL or a console message: {leaks}"
    sockets = [line for line in seen if line.startswith("websocket: ")]
    assert all("ticket=" in line for line in sockets), f"a socket opened without a one-time ticket: {sockets}"
