"""Hardening (issue 28, items 7 and 8): what the server shows and takes from callers it does not know.

Specification:
- `/health` answers anyone with its status; what the service is doing (webhook counters) only to an admin key.
- `POST /v1/sign-in`: a client address that had `AITP_SIGN_IN_CODE_FAILURES_PER_MINUTE` codes refused is
  answered 429 `too_many_sign_in_attempts` with `Retry-After`, its code not looked at, until its bucket refills;
  codes that work never count.
- An event cursor (`after`, `Last-Event-ID`) past 2^63-2^32 is refused 400 naming it, on both stores (2^63-2
  was a 500 on SQLite for the inbox, whose read adds its window to the cursor); MongoDB's cursors (positions
  of 62 bits) are served.
- `aitp serve` prints the admin's sign-in link on the first start (beside the new admin key) or on a terminal,
  never into the output a later start writes to a file; `aitp admin link` makes a new one.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from aitp.services.sign_in import SignIns
from aitp.testing import free_port, start_server
from tests.conftest import ADMIN_KEY, API

MAX_CURSOR = 2**63 - 2**32  # int64, less what a store's read may add to it
LINK = re.compile(r"http://127\.0\.0\.1:\d+/#code=(aitps_[A-Za-z0-9_-]+)")


# /health


async def test_health_shows_counters_to_an_admin_key_only(api: API) -> None:
    root = httpx.AsyncClient(transport=api._transport, base_url="http://aitp.test")
    anyone = await root.get("/health")
    actor_key = await api.key_for("ada")
    with_actor_key = await root.get("/health", headers={"Authorization": f"Bearer {actor_key}"})
    with_admin_key = await root.get("/health", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    wrong_key = await root.get("/health", headers={"Authorization": "Bearer aitp_not_a_key"})

    assert anyone.status_code == 200 and anyone.json()["status"] == "ok"
    assert "webhooks" not in anyone.json() and "webhooks" not in with_actor_key.json()
    assert with_admin_key.status_code == 200 and "webhooks" in with_admin_key.json()
    assert wrong_key.status_code == 401


# POST /v1/sign-in


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_sign_in_codes_refused_from_one_address_are_limited(api: API) -> None:
    api.settings_override(sign_in_code_failures_per_minute=3.0)
    clock = Clock()
    api._app.state.runtime.state(SignIns).code_failures.clock = clock
    anonymous = api.client(None)
    good = (await api.admin.post("/sign-in-codes", json={"actor": "ada"})).json()["code"]

    refused = [await anonymous.post("/sign-in", json={"code": f"aitps_guess{n}"}) for n in range(3)]
    limited = await anonymous.post("/sign-in", json={"code": good})  # a good code too: not looked at

    assert [r.status_code for r in refused] == [401, 401, 401]
    assert limited.status_code == 429, limited.text
    assert limited.json()["error"]["code"] == "too_many_sign_in_attempts"
    assert limited.headers["Retry-After"] == "20"  # 3 per minute: one more every 20 s
    clock.now += 20
    signed_in = await anonymous.post("/sign-in", json={"code": good})  # the good code was not spent
    assert signed_in.status_code == 200, signed_in.text
    assert (await anonymous.post("/sign-in", json={"code": "aitps_guess"})).status_code == 401
    assert (await anonymous.post("/sign-in", json={"code": "aitps_guess"})).status_code == 429


async def test_sign_ins_that_work_are_never_limited(api: API) -> None:
    api.settings_override(sign_in_code_failures_per_minute=1.0)
    anonymous = api.client(None)
    for _ in range(5):
        code = (await api.admin.post("/sign-in-codes", json={"actor": "ada"})).json()["code"]
        signed_in = await anonymous.post("/sign-in", json={"code": code})
        assert signed_in.status_code == 200, signed_in.text


# event cursors


async def test_an_event_cursor_near_2_63_is_refused_naming_it(api: API) -> None:
    ada = await api.actor("ada")
    thread = (await ada.post("/threads", json={})).json()["id"]
    paths = ["/actors/me/events", f"/threads/{thread}/events"]

    for path in paths:
        for after in (2**63 - 2, 2**63 - 1, MAX_CURSOR + 1):
            answer = await ada.get(path, params={"after": after})
            assert answer.status_code == 400, (path, after, answer.text)
            assert (answer.json()["error"]["param"], answer.json()["error"]["code"]) == ("after", "invalid_value")
        served = await ada.get(path, params={"after": MAX_CURSOR})
        assert served.status_code == 200 and served.json()["data"] == [], served.text
    inbox = (await ada.get("/actors/me/events")).json()["data"]  # a real cursor (MongoDB's are large) is served
    assert (await ada.get(paths[0], params={"after": inbox[-1]["cursor"]})).status_code == 200

    stream = await ada.get(
        "/actors/me/events", headers={"Accept": "text/event-stream", "Last-Event-ID": str(2**63 - 2)}
    )
    assert stream.status_code == 400, stream.text
    assert (stream.json()["error"]["param"], stream.json()["error"]["code"]) == ("Last-Event-ID", "invalid_value")


# the admin's sign-in link


def aitp(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aitp", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def redeem(base_url: str, code: str) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/sign-in", json={"code": code})


async def test_an_empty_page_cursor_is_refused_naming_it_as_the_openapi_document_says(api: API) -> None:
    root = await api.actor("root.near")
    thread = (await root.post("/threads", json={})).json()["id"]
    conversation = (await root.post("/conversations", json={})).json()["id"]
    for path in ("/threads", f"/threads/{thread}/messages", f"/conversations/{conversation}/items"):
        for name in ("after", "before") if not path.startswith("/conversations") else ("after",):
            response = await root.get(path, params={name: ""})
            assert response.status_code == 400, (path, name, response.text)
            assert response.json()["error"]["param"] == name
    document = api.openapi()["paths"]["/v1/threads/{thread_id}/messages"]["get"]
    after = next(p for p in document["parameters"] if p["name"] == "after")
    assert {"type": "string", "minLength": 1} in after["schema"]["anyOf"]


def test_the_link_is_printed_on_the_first_start_only_and_aitp_admin_link_makes_another(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'aitp.db'}"
    first = start_server(store, tmp_path / "first.log")  # no AITP_ADMIN_KEY: it creates one
    first.stop()
    (admin_key,) = set(re.findall(r"aitp_[A-Za-z0-9_-]{40,}", first.output()))
    assert len(LINK.findall(first.output())) == 1  # beside the key it was made with

    later = start_server(store, tmp_path / "later.log")  # the admin key stored (its hash), not given
    try:
        link = ["admin", "link", "--store", store, "--url", later.base_url]
        made = aitp(*link, stdin=admin_key + "\n")
        refused = aitp(*link, stdin="aitp_" + "x" * 43 + "\n")
        (code,) = LINK.findall(made.stdout)
        signed_in = redeem(later.base_url, code)
    finally:
        later.stop()

    assert "#code=" not in later.output() and "aitp admin link" in later.output()  # a log file: no live link
    assert made.returncode == 0, made.stderr
    assert signed_in.status_code == 200 and signed_in.json()["admin"], signed_in.text
    assert refused.returncode == 1 and "Incorrect API key" in refused.stderr and refused.stdout == ""


def test_on_a_terminal_the_link_goes_to_the_terminal_not_to_the_log(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    terminal, terminal_end = pty.openpty()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "aitp", "serve", "--port", str(port)],
            stdout=out,
            stderr=terminal_end,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "AITP_STORE": f"sqlite:///{tmp_path / 'aitp.db'}", "AITP_ADMIN_KEY": ADMIN_KEY},
        )
    os.close(terminal_end)
    shown: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(terminal, shown), daemon=True)  # the server never blocks on it
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not LINK.search(b"".join(shown).decode(errors="replace")):
            assert process.poll() is None and time.monotonic() < deadline, b"".join(shown)
            time.sleep(0.05)
        (code,) = LINK.findall(b"".join(shown).decode(errors="replace"))
        for _ in range(300):  # until it serves
            try:
                signed_in = redeem(f"http://127.0.0.1:{port}", code)
                break
            except httpx.TransportError:
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=10)
        reader.join(timeout=10)
    assert signed_in.status_code == 200 and signed_in.json()["admin"], signed_in.text
    assert "#code=" not in log.read_text()


def _drain(terminal: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the server's end closed
            break
        if not chunk:
            break
        into.append(chunk)
    os.close(terminal)


@pytest.fixture(autouse=True)
def _no_admin_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servers these tests start are told their admin key (or none) by the test alone."""
    monkeypatch.delenv("AITP_ADMIN_KEY", raising=False)
