"""`aitp identity` and `AitpClient.sign_in`: an agent makes its key pair, publishes the printed aitp.json, and
signs in to a real server with its key file: no admin involved."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from aitp.client import AitpClient, AitpError
from aitp.identity import implicit_account_of, load_private_key, near_keypair
from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY, API
from tests.support.docs import ROOT, marked_blocks
from tests.support.identities import KeySite, key_site


def aitp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aitp", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def site() -> Iterator[KeySite]:
    with key_site() as served:
        yield served


@pytest.fixture
def server(tmp_path: Path, site: KeySite) -> Iterator[ServerProcess]:
    env = {"AITP_ADMIN_KEY": ADMIN_KEY, "AITP_IDENTITY_ALLOW": site.allow}
    process = start_server(f"sqlite:///{tmp_path / 'aitp.db'}", tmp_path / "serve.log", env)
    try:
        yield process
    finally:
        process.stop()


def test_keygen_writes_a_private_key_only_its_owner_reads_and_prints_what_to_publish(tmp_path: Path) -> None:
    out = tmp_path / "shop-key.json"
    made = aitp("identity", "keygen", "--out", str(out), "--kid", "shop-1")
    assert made.returncode == 0, made.stderr
    published = json.loads(made.stdout)
    assert published["keys"][0]["kid"] == "shop-1" and "d" not in published["keys"][0]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert load_private_key(out.read_text()).public_jwk == published["keys"][0]
    again = aitp("identity", "keygen", "--out", str(out))
    assert again.returncode == 1 and "never overwritten" in again.stderr


def test_a_domain_agent_signs_in_from_the_command_line(tmp_path: Path, site: KeySite, server: ServerProcess) -> None:
    out = tmp_path / "shop-key.json"
    made = aitp("identity", "keygen", "--out", str(out))
    site.body = made.stdout.encode()  # published as printed
    signed = aitp("identity", "sign-in", "--url", server.base_url, "--actor", site.host, "--key-file", str(out))
    assert signed.returncode == 0, signed.stderr
    key = signed.stdout.strip()
    me = httpx.get(f"{server.base_url}/v1/actors/me", headers={"Authorization": f"Bearer {key}"})
    assert me.json()["id"] == site.host
    assert "domain key" in signed.stderr and key not in signed.stderr

    other = tmp_path / "other-key.json"
    aitp("identity", "keygen", "--out", str(other))
    refused = aitp("identity", "sign-in", "--url", server.base_url, "--actor", site.host, "--key-file", str(other))
    assert refused.returncode == 1 and "key_not_published" in refused.stderr and refused.stdout == ""


def test_a_near_key_pair_signs_in_as_its_implicit_account(tmp_path: Path, server: ServerProcess) -> None:
    out = tmp_path / "near-key"
    made = aitp("identity", "keygen", "--kind", "near", "--out", str(out))
    account = json.loads(made.stdout)["implicit_account"]
    signed = aitp("identity", "sign-in", "--url", server.base_url, "--actor", account, "--key-file", str(out))
    assert signed.returncode == 0, signed.stderr


async def test_the_python_client_signs_in_with_a_key_pair_in_ten_lines(api: API, site: KeySite) -> None:
    from aitp.identity import generate_keypair

    pair = generate_keypair()
    site.keys = [pair]
    api.settings_override(identity_allow=(site.allow,))
    transport = api._transport  # noqa: SLF001 (the in-process app)
    async with await AitpClient.sign_in("http://aitp.test", site.host, pair, transport=transport) as shop:
        assert (await shop.me()).id == site.host and shop.expires_at
    async with await AitpClient.sign_in("http://aitp.test", site.host, pair.private_jwk, transport=transport) as again:
        assert (await again.me()).id == site.host

    private, public = near_keypair()
    account = implicit_account_of(public)
    async with await AitpClient.sign_in("http://aitp.test", account, private, transport=transport) as wallet:
        assert (await wallet.me()).id == account
    with pytest.raises(AitpError) as refused:
        await AitpClient.sign_in("http://aitp.test", account, near_keypair()[0], transport=transport)
    assert refused.value.code == "key_not_published"


def test_the_identity_pages_sign_in_example_runs_as_written(site: KeySite, server: ServerProcess) -> None:
    """The Python example of docs/identity.md, with the server and the host of this test for its placeholders;
    what it prints to publish is what the host serves."""
    (block,) = marked_blocks(ROOT / "docs" / "identity.md", "identity").values()
    code = block.code.replace("https://aitp.example", server.base_url).replace("sunnysocks.example", site.host)
    printed: list[object] = []

    def publish_or_print(*values: object) -> None:
        if isinstance(values[0], dict) and "keys" in values[0]:
            site.body = json.dumps(values[0]).encode()
        printed.append(values)

    exec(compile(code, "docs/identity.md", "exec"), {"print": publish_or_print, "__name__": "__main__"})
    verification, expires_at = printed[-1]
    assert verification.kind == "domain" and verification.identifier == site.host and expires_at
    shop_policy = httpx.get(
        f"{server.base_url}/v1/actors/{site.host}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    ).json()["contact_policy"]
    assert shop_policy["policy"] == "anyone"
