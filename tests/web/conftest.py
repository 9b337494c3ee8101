"""Browser fixtures: a real `aitp serve` process and Debian's Chromium driven by Playwright.

Pages are opened signed in through the URL fragment the UI understands (`/#key=<key>&thread=<id>`),
the same link `aitp serve` prints for the admin key. Agents talk to the same server over HTTP.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
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
SCREENSHOTS = Path(__file__).resolve().parents[2] / "web" / "screenshots"


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package (the README test command does)")
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

    def agent(self, actor: str) -> httpx.Client:
        """An HTTP client whose key acts as `actor`."""
        return self.client(self.key_for(actor))

    def url(self, key: str, thread: str | None = None) -> str:
        """The UI's address, signed in with `key` (and with `thread` open)."""
        fragment = f"key={key}" + (f"&thread={thread}" if thread else "")
        return f"{self.base_url}/#{fragment}"


@pytest.fixture(scope="module")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    directory = tmp_path_factory.mktemp("web")
    process = start_server(
        f"sqlite:///{directory / 'web.db'}", directory / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY}
    )
    server = WebServer(process)
    try:
        yield server
    finally:
        server.admin.close()
        process.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    # an uncaught exception in the UI fails the test even when the assertions passed
    assert not errors, f"uncaught errors in the page: {errors}"
