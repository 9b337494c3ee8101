"""GET /v1/fetch: JSON documents from allow-listed URLs only, within size and time limits.

The documents come from a real HTTP server on a free local port. The endpoint never touches the
store, so these tests run on SQLite only.
"""

from __future__ import annotations

import json
import posixpath
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.conftest import API

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)

FORM = {"fields": [{"id": "name", "label": "Name", "type": "text", "required": True}]}
LIMIT = 2048
SLOW_SECONDS = 3.0


class Documents(BaseHTTPRequestHandler):
    """/forms/* documents of every kind the endpoint must accept or refuse; /private/* is never allowed."""

    def do_GET(self) -> None:
        path = self.path
        if "\\" in path or ";" in path:  # a lenient server: backslash as slash, path parameters dropped
            path = posixpath.normpath(re.sub(r";[^/]*", "", path.replace("\\", "/")))
        if path in ("/forms/ok.json", "/private/secret.json"):
            self._send(200, "application/json", json.dumps(FORM).encode())
        elif path == "/forms/ok.schema+json":
            self._send(200, "application/schema+json; charset=utf-8", json.dumps(FORM).encode())
        elif path == "/forms/big.json":
            self._send(200, "application/json", json.dumps({"pad": "x" * LIMIT}).encode())
        elif path == "/forms/endless.json":
            self._endless()
        elif path == "/forms/slow.json":
            time.sleep(SLOW_SECONDS)
            self._send(200, "application/json", b"{}")
        elif path == "/forms/page.html":
            self._send(200, "text/html", b"<html><body>not json</body></html>")
        elif path == "/forms/broken.json":
            self._send(200, "application/json", b'{"fields": [')
        elif path == "/forms/missing.json":
            self._send(404, "application/json", b'{"detail": "no"}')
        elif path == "/forms/redirect-in":
            self._redirect("/forms/ok.json")
        elif path == "/forms/redirect-out":
            self._redirect("/private/secret.json")
        elif path == "/forms/redirect-backslash":
            self._redirect("/forms/..\\private\\secret.json")
        elif path == "/forms/redirect-loop":
            self._redirect("/forms/redirect-loop")
        else:
            self._send(404, "text/plain", b"not found")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _endless(self) -> None:
        # no Content-Length: only counting the streamed bytes can stop this one
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(b'{"pad": "')
            for _ in range(1000):
                self.wfile.write(b"x" * 1024)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the endpoint hung up once it had read enough: that is the point

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def documents() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def user(api: API, documents: str) -> httpx.AsyncClient:
    api.settings_override(fetch_allow=(f"{documents}/forms/",), fetch_max_bytes=LIMIT, fetch_timeout=1.0)
    return await api.actor("user.near")


async def _error(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["param"]


async def test_an_allowed_json_document_is_returned_as_is(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/ok.json"})
    assert response.status_code == 200, response.text
    assert response.json() == FORM
    typed = await user.get("/fetch", params={"url": f"{documents}/forms/ok.schema+json"})
    assert typed.status_code == 200 and typed.json() == FORM


async def test_a_redirect_within_the_allow_list_is_followed(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/redirect-in"})
    assert response.status_code == 200 and response.json() == FORM


async def test_urls_outside_the_allow_list_are_refused(user: httpx.AsyncClient, documents: str) -> None:
    port = int(documents.rsplit(":", 1)[1])
    for url in (
        f"{documents}/private/secret.json",  # another path on the allowed host
        f"{documents}/forms",  # the prefix's directory itself is not under "/forms/"
        f"http://localhost:{port}/forms/ok.json",  # same server, other host name
        f"http://127.0.0.1:{port + 1}/forms/ok.json",  # other port
        f"https://127.0.0.1:{port}/forms/ok.json",  # other scheme
    ):
        response = await user.get("/fetch", params={"url": url})
        assert await _error(response) == (403, "url_not_allowed", "url"), url


async def test_a_prefix_without_trailing_slash_matches_whole_path_segments(
    api: API, user: httpx.AsyncClient, documents: str
) -> None:
    api.settings_override(fetch_allow=(f"{documents}/forms",))
    assert (await user.get("/fetch", params={"url": f"{documents}/forms/ok.json"})).status_code == 200
    evil = await user.get("/fetch", params={"url": f"{documents}/forms-evil/ok.json"})
    assert await _error(evil) == (403, "url_not_allowed", "url")


async def test_a_redirect_out_of_the_allow_list_is_refused(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/redirect-out"})
    assert await _error(response) == (403, "url_not_allowed", "url")
    assert "/private/secret.json" in response.json()["error"]["message"]


async def test_redirect_loops_end(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/redirect-loop"})
    assert await _error(response) == (422, "fetch_failed", "url")


async def test_tricky_urls_are_invalid(user: httpx.AsyncClient, documents: str) -> None:
    for url in (
        f"{documents}/forms/%2e%2e/private/secret.json",  # servers may decode the dots
        f"{documents}/forms/..%2fprivate/secret.json",
        "http://user:pass@127.0.0.1/forms/ok.json",
        "file:///etc/passwd",
        "/forms/ok.json",
    ):
        response = await user.get("/fetch", params={"url": url})
        assert await _error(response) == (422, "invalid_url", "url"), url


async def test_an_empty_allow_list_allows_nothing(api: API, user: httpx.AsyncClient, documents: str) -> None:
    api.settings_override(fetch_allow=())
    response = await user.get("/fetch", params={"url": f"{documents}/forms/ok.json"})
    assert await _error(response) == (403, "url_not_allowed", "url")


async def test_documents_over_the_size_limit_are_refused(user: httpx.AsyncClient, documents: str) -> None:
    for path in ("/forms/big.json", "/forms/endless.json"):  # announced length, and a stream without one
        response = await user.get("/fetch", params={"url": f"{documents}{path}"})
        assert await _error(response) == (413, "fetch_too_large", "url"), path


async def test_slow_documents_time_out(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/slow.json"})
    assert await _error(response) == (422, "fetch_timeout", "url")


async def test_only_json_is_returned(user: httpx.AsyncClient, documents: str) -> None:
    for path in ("/forms/page.html", "/forms/broken.json"):
        response = await user.get("/fetch", params={"url": f"{documents}{path}"})
        assert await _error(response) == (422, "fetch_not_json", "url"), path


async def test_an_upstream_error_status_is_reported(user: httpx.AsyncClient, documents: str) -> None:
    response = await user.get("/fetch", params={"url": f"{documents}/forms/missing.json"})
    assert await _error(response) == (422, "fetch_failed", "url")
    assert "404" in response.json()["error"]["message"]


async def test_a_key_is_required(api: API, documents: str) -> None:
    response = await api.client(None).get("/fetch", params={"url": f"{documents}/forms/ok.json"})
    assert response.status_code == 401


async def test_the_url_parameter_is_required(user: httpx.AsyncClient) -> None:
    response = await user.get("/fetch")
    assert response.status_code in (400, 422) and response.json()["error"]["param"] == "url"


async def test_urls_are_read_as_a_browser_reads_them(user: httpx.AsyncClient, documents: str) -> None:
    """WHATWG URL parsing, as the UI's browser does: a backslash is a slash before the query, tabs and
    newlines are dropped, leading and trailing spaces and controls are trimmed; then the usual checks."""
    port = int(documents.rsplit(":", 1)[1])
    for url in (
        f"{documents}/forms\\ok.json",
        f"{documents}/fo\trms/ok.json",
        f"{documents}/forms/ok\r\n.json",
        f"  {documents}/forms/ok.json\n",
        f"http:\\\\127.0.0.1:{port}\\forms\\ok.json",
    ):
        response = await user.get("/fetch", params={"url": url})
        assert (response.status_code, response.json()) == (200, FORM), url


async def test_backslashes_and_path_parameters_do_not_escape_the_allow_list(
    user: httpx.AsyncClient, documents: str
) -> None:
    """The test server resolves `\\` as `/` and drops `;params`, as many servers do: neither may smuggle a dot
    segment past the checks, in the URL or in a redirect."""
    # a backslash means what a slash means: "/forms/../private" is "/private", outside the allow-list
    for url in (f"{documents}/forms/../private/secret.json", f"{documents}/forms/..\\private\\secret.json"):
        response = await user.get("/fetch", params={"url": url})
        assert await _error(response) == (403, "url_not_allowed", "url"), url
    for url in (
        f"{documents}/forms\\..\\private/secret.json",
        f"{documents}/forms/..\\private/secret.json?x=\\",
    ):
        response = await user.get("/fetch", params={"url": url})
        assert await _error(response) == (403, "url_not_allowed", "url"), url
    # dot segments that only the server would resolve are refused outright, as encoded ones are
    for url in (
        f"{documents}/forms/..;/private/secret.json",
        f"{documents}/forms/..;x=1/private/secret.json",
        f"{documents}/forms/...\\private/secret.json",
        f"{documents}/forms/..%5cprivate/secret.json",
        f"{documents}/forms/%2e%2e%5cprivate/secret.json",
        f"{documents}/forms/ok\x00.json",
    ):
        response = await user.get("/fetch", params={"url": url})
        assert await _error(response) == (422, "invalid_url", "url"), url
    # the authority ends at a backslash, as in browsers: no host smuggled in through "user info"
    host = await user.get("/fetch", params={"url": f"{documents}\\@evil.example/forms/ok.json"})
    assert await _error(host) == (403, "url_not_allowed", "url")
    redirected = await user.get("/fetch", params={"url": f"{documents}/forms/redirect-backslash"})
    assert await _error(redirected) == (403, "url_not_allowed", "url")
    assert "/private/secret.json" in redirected.json()["error"]["message"]
