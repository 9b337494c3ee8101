"""The `aitp` command line: first-start admin key, key management, schema export check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from aitp.principals import PRINCIPAL_TTL
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

REPO_ROOT = Path(__file__).resolve().parents[1]
KEY_PATTERN = re.compile(r"aitp_[A-Za-z0-9_-]{40,}")
ADMIN_KEY_BANNER = "created the admin key"


def aitp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `aitp` from the interpreter running the tests (never from PATH), with no AITP_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AITP_")}
    command = [sys.executable, "-m", "aitp", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """A server on `store_url` (with the test admin key), so CLI-made keys can be tried over HTTP."""
    process = start_server(store_url, tmp_path / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY})
    yield process
    process.stop()


# --------------------------------------------------------------------------- entry points


def test_console_script_is_installed_beside_the_interpreter() -> None:
    """The install puts an `aitp` script in this environment's scripts directory (found without PATH),
    and it is the same command as `python -m aitp`."""
    script = Path(sysconfig.get_path("scripts")) / "aitp"
    assert script.is_file(), f"no console script at {script}: install the project (pip install -e '.[server]')"
    env = {k: v for k, v in os.environ.items() if k != "PATH"}
    by_script = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert by_script.returncode == 0, by_script.stderr
    assert by_script.stdout == aitp("--help").stdout
    assert "serve" in by_script.stdout and "keys" in by_script.stdout


# --------------------------------------------------------------------------- aitp serve


def test_serve_without_admin_key_prints_a_working_admin_key_once(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First start on an empty store creates and prints an admin key; a restart does not print another."""
    monkeypatch.delenv("AITP_ADMIN_KEY", raising=False)

    first = start_server(store_url, tmp_path / "first.log")
    try:
        output = first.output()
        assert ADMIN_KEY_BANNER in output
        printed = set(KEY_PATTERN.findall(output))
        assert len(printed) == 1, output
        (admin_key,) = printed
        response = httpx.get(f"{first.base_url}/v1/keys", headers=bearer(admin_key))
        assert response.status_code == 200, response.text
        (listed,) = response.json()["data"]
        assert listed["admin"] is True and listed["actor"] == "admin"
        assert admin_key.startswith(listed["prefix"])
    finally:
        first.stop()

    second = start_server(store_url, tmp_path / "second.log")
    try:
        output = second.output()
        assert ADMIN_KEY_BANNER not in output
        assert KEY_PATTERN.findall(output) == [], output
        response = httpx.get(f"{second.base_url}/v1/keys", headers=bearer(admin_key))
        assert response.status_code == 200, response.text
        assert [k["id"] for k in response.json()["data"]] == [listed["id"]]
    finally:
        second.stop()


def test_serve_with_admin_key_in_environment_creates_no_key(tmp_path: Path, store_url: str) -> None:
    """With AITP_ADMIN_KEY set nothing is printed or stored: that key is the admin key."""
    server = start_server(store_url, tmp_path / "serve.log", {"AITP_ADMIN_KEY": ADMIN_KEY})
    try:
        assert ADMIN_KEY_BANNER not in server.output()
        response = httpx.get(f"{server.base_url}/v1/keys", headers=bearer(ADMIN_KEY))
        assert response.status_code == 200, response.text
        assert response.json()["data"] == []
    finally:
        server.stop()


# --------------------------------------------------------------------------- aitp keys


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_refuses_an_in_memory_store(tmp_path: Path, workers: str) -> None:
    """Its data would end with the process that opened it: the admin key printed before the server starts
    would not work, and each worker would serve a store of its own."""
    result = aitp("serve", "--store", "sqlite:///:memory:", "--workers", workers, "--port", "1", cwd=tmp_path)
    assert result.returncode == 2
    assert "lives inside one process" in result.stderr and "--store sqlite:///aitp-data/aitp.db" in result.stderr
    assert KEY_PATTERN.search(result.stdout + result.stderr) is None
    assert list(tmp_path.iterdir()) == []


def test_keys_create_prints_a_key_that_authenticates_as_its_actor(server: ServerProcess, store_url: str) -> None:
    """`aitp keys create --actor X` prints only the secret on stdout; over HTTP it acts as X."""
    created = aitp("keys", "--store", store_url, "create", "--actor", "shop.near")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert KEY_PATTERN.fullmatch(key), created.stdout
    assert "shown only now" in created.stderr and "shop.near" in created.stderr

    response = httpx.post(f"{server.base_url}/v1/threads", headers=bearer(key), json={"messages": ["hello"]})
    assert response.status_code == 200, response.text
    thread = response.json()
    assert [(a["id"], a["role"]) for a in thread["actors"]] == [("shop.near", "user")]
    messages = httpx.get(f"{server.base_url}/v1/threads/{thread['id']}/messages", headers=bearer(key)).json()
    assert [m["metadata"]["actor"] for m in messages["data"]] == ["shop.near"]

    # An actor key is not an admin key.
    assert httpx.get(f"{server.base_url}/v1/keys", headers=bearer(key)).status_code == 403


def test_keys_list_shows_keys_without_their_secrets(store_url: str) -> None:
    """`aitp keys list` prints id, actor, flags and prefix, never the secret."""
    shop_key = aitp("keys", "--store", store_url, "create", "--actor", "shop.near", "--create-store").stdout.strip()
    admin = aitp("keys", "--store", store_url, "create", "--actor", "ops", "--admin", "--scope", "capabilities:write")
    assert admin.returncode == 0, admin.stderr
    admin_key = admin.stdout.strip()

    listed = aitp("keys", "--store", store_url, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2, listed.stdout
    shop_line = next(line for line in lines if "actor=shop.near" in line)
    admin_line = next(line for line in lines if "actor=ops" in line)
    assert re.match(r"key_\w+ ", shop_line) and re.match(r"key_\w+ ", admin_line)
    assert shop_line.rstrip().endswith(shop_key[:9] + "…")
    assert " admin" in admin_line and "scopes=capabilities:write" in admin_line
    assert " admin" not in shop_line
    for secret in (shop_key, admin_key):
        assert secret not in listed.stdout
        assert secret[:12] not in listed.stdout  # no more than the stored prefix


async def test_keys_list_says_when_a_key_expires_or_expired(store_url: str) -> None:
    """Keys made by a sign-in link expire: the list gives the date (UTC), and says which have."""
    from aitp.services.keys import create_key
    from aitp.store import open_store

    store = open_store(store_url)
    await store.open()
    try:
        lasting = await create_key(store, "ops")
        browser = await create_key(store, "alice", lifetime=86_400)
        lapsed = await create_key(store, "bob", lifetime=-60)
    finally:
        await store.close()
    listed = aitp("keys", "--store", store_url, "list")
    assert listed.returncode == 0, listed.stderr
    line = {
        key.record.actor: next(x for x in listed.stdout.splitlines() if key.record.id in x)
        for key in (lasting, browser, lapsed)
    }
    assert "expire" not in line["ops"]
    assert re.search(r"… {2}expires \d{4}-\d\d-\d\d \d\d:\d\d UTC$", line["alice"]), line["alice"]
    assert re.search(r"… {2}expired \d{4}-\d\d-\d\d \d\d:\d\d UTC$", line["bob"]), line["bob"]


def test_keys_revoke_makes_the_key_unauthorized(server: ServerProcess, store_url: str) -> None:
    """After `aitp keys revoke <id>` the running server answers 401 to that key: within
    `PRINCIPAL_TTL` (1 s), as it remembers authenticated keys that long (the deadline here is generous)."""
    key = aitp("keys", "--store", store_url, "create", "--actor", "shop.near").stdout.strip()
    assert httpx.get(f"{server.base_url}/v1/threads", headers=bearer(key)).status_code == 200
    (line,) = aitp("keys", "--store", store_url, "list").stdout.splitlines()
    key_id = line.split()[0]

    revoked = aitp("keys", "--store", store_url, "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.strip() == f"revoked {key_id}"

    deadline = time.monotonic() + PRINCIPAL_TTL + 10
    while (response := httpx.get(f"{server.base_url}/v1/threads", headers=bearer(key))).status_code == 200:
        assert time.monotonic() < deadline, "the revoked key is still accepted"
        time.sleep(0.1)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert aitp("keys", "--store", store_url, "list").stdout == ""


def test_keys_revoke_of_an_unknown_id_fails(server: ServerProcess, store_url: str) -> None:
    """Revoking a key id that does not exist exits 1 with a message on stderr."""
    result = aitp("keys", "--store", store_url, "revoke", "key_does_not_exist")
    assert result.returncode == 1
    assert "key_does_not_exist" in result.stderr
    assert result.stdout == ""


def test_the_store_option_works_before_and_after_the_sub_command(server: ServerProcess, store_url: str) -> None:
    """`--store` may follow `keys` or the key sub-command; either way the key lands in that store."""
    before = aitp("keys", "--store", store_url, "create", "--actor", "a.near")
    after = aitp("keys", "create", "--actor", "b.near", "--store", store_url)
    assert before.returncode == 0, before.stderr
    assert after.returncode == 0, after.stderr
    for created in (before, after):
        key = created.stdout.strip()
        assert httpx.get(f"{server.base_url}/v1/threads", headers=bearer(key)).status_code == 200
    listed = aitp("keys", "list", "--store", store_url)
    assert sorted(line.split()[1] for line in listed.stdout.splitlines()) == ["actor=a.near", "actor=b.near"]


@pytest.mark.parametrize("command", [("create", "--actor", "shop.near"), ("list",), ("revoke", "key_x")])
def test_a_key_command_refuses_to_create_a_new_store_unless_asked(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Run from a directory without the server's store, a key command says where it looked and changes
    nothing, instead of creating an empty store and printing a key no server accepts."""
    result = aitp("keys", *command, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "there is no store at sqlite:///aitp-data/aitp.db" in result.stderr
    assert str(tmp_path) in result.stderr and "--store" in result.stderr
    assert ("--create-store" in result.stderr) == (command[0] == "create")
    assert list(tmp_path.iterdir()) == []


def test_keys_create_with_create_store_starts_a_new_store(tmp_path: Path) -> None:
    created = aitp("keys", "create", "--actor", "ops", "--admin", "--create-store", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert "creating a new store at sqlite:///aitp-data/aitp.db" in created.stderr
    assert (tmp_path / "aitp-data" / "aitp.db").is_file()
    assert "actor=ops admin" in aitp("keys", "list", cwd=tmp_path).stdout


# --------------------------------------------------------------------------- aitp schemas


def test_schemas_export_check_passes_in_the_repository() -> None:
    """The checked-in schemas/ match the models (`aitp schemas export --check` exits 0)."""
    result = aitp("schemas", "export", "--check", cwd=REPO_ROOT)
    assert result.returncode == 0, f"schemas/ is out of date; run `aitp schemas export`:\n{result.stderr}"
    assert result.stderr == ""


def test_schemas_export_writes_files_that_then_pass_the_check(tmp_path: Path) -> None:
    """--check fails on a missing or edited file and passes after `export` rewrites the directory."""
    directory = tmp_path / "schemas"
    directory.mkdir()
    missing = aitp("schemas", "export", "--check", "--dir", str(directory))
    assert missing.returncode == 1
    assert f"out of date: {directory / 'thread.schema.json'}" in missing.stderr

    exported = aitp("schemas", "export", "--dir", str(directory))
    assert exported.returncode == 0, exported.stderr
    written = sorted(Path(line).name for line in exported.stdout.splitlines())
    assert written == sorted(p.name for p in (REPO_ROOT / "schemas").glob("*.schema.json"))
    assert aitp("schemas", "export", "--check", "--dir", str(directory)).returncode == 0

    (directory / "message.schema.json").write_text("{}\n")
    (directory / "stale.schema.json").write_text("{}\n")
    drifted = aitp("schemas", "export", "--check", "--dir", str(directory))
    assert drifted.returncode == 1
    assert sorted(line.split("/")[-1] for line in drifted.stderr.splitlines()) == [
        "message.schema.json",
        "stale.schema.json",
    ]
