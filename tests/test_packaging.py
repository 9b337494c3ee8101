"""The wheel is the product: built from the repository and installed normally (not editable), it serves
the API, every shipped capability and the web UI from any directory. It is typed, carries its licence and
says where the protocol is; its own dependencies are the Python client's, the server's are its `server`
extra (tests/test_client_install.py installs it without them)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from email.message import Message
from email.parser import Parser
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

from aitp.testing import ServerProcess, start_server
from tests.conftest import ADMIN_KEY

REPO = Path(__file__).resolve().parents[1]
SHIPPED_CAPABILITIES = sorted(p.name for p in (REPO / "capabilities").iterdir() if p.is_dir())
# "aitp" on the public package index is another project's: the wheel is named for this one
DISTRIBUTION = "aitp-thread-service"
# what `aitp serve` needs and the client does not (the `server` extra)
SERVER_ONLY = set("fastapi uvicorn pymongo orjson jsonschema-rs jsonschema aiohttp a2a-sdk pyicu-wheels".split())


def run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(out: Path) -> Path:
    """The wheel built from the repository into `out` (offline: hatchling comes with the test extras)."""
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, REPO)
    (built,) = out.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl")
    return built


def metadata(wheel: Path) -> Message:
    """The wheel's METADATA (core metadata, an email-style header block)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel, installed the normal way (a copy in site-packages).

    Its dependencies are the ones this interpreter already has (a path line in a .pth file, which
    adds that directory but runs none of its .pth files, so the editable install there stays out):
    the same packages, without downloading them again."""
    root = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", root)
    python = root / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel)
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    (site / "_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return root


@pytest.fixture(scope="module")
def server(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`aitp serve` from the venv's console script, started in an unrelated, empty directory."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AITP_") and k != "PYTHONPATH"}
    env["AITP_ADMIN_KEY"] = ADMIN_KEY
    process = start_server(
        f"sqlite:///{elsewhere / 'aitp.db'}",
        elsewhere / "serve.log",
        env=env,
        command=[str(venv / "bin" / "aitp")],
        cwd=elsewhere,
    )
    yield process
    process.stop()


def test_the_wheel_carries_the_shipped_capabilities_and_the_ui(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in (REPO / "capabilities").rglob("*"):
        if path.is_file():
            assert f"aitp/_shipped/capabilities/{path.relative_to(REPO / 'capabilities')}" in names
    for path in (REPO / "web").rglob("*"):
        if path.is_file():
            assert f"aitp/_shipped/web/{path.relative_to(REPO / 'web')}" in names


def test_the_wheel_is_typed_and_licensed_under_a_name_of_its_own(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "aitp/py.typed" in names  # PEP 561: type checkers read the package's own hints
        licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(licences) == 1 and archive.read(licences[0]) == (REPO / "LICENSE").read_bytes()
    meta = metadata(wheel)
    assert (meta["Name"], meta["License-Expression"]) == (DISTRIBUTION, "Apache-2.0")
    assert "Typing :: Typed" in meta.get_all("Classifier", [])
    assert meta.get_all("Project-URL"), "no [project.urls]"


def test_the_servers_dependencies_are_an_extra(wheel: Path) -> None:
    """Installed without extras the wheel brings the client's dependencies only; `server` adds the rest."""
    requirements = [Requirement(line) for line in metadata(wheel).get_all("Requires-Dist", [])]
    plain = {r.name.lower() for r in requirements if r.marker is None}
    server = {r.name.lower() for r in requirements if r.marker and r.marker.evaluate({"extra": "server"})}
    assert plain.isdisjoint(SERVER_ONLY), plain & SERVER_ONLY
    assert SERVER_ONLY <= server
    # the test extra installs the server too: the README's test command serves from it (hatchling writes the
    # extra's own `aitp-thread-service[server]` as the server's requirements)
    test = {r.name.lower() for r in requirements if r.marker and r.marker.evaluate({"extra": "test"})}
    assert server <= test, server - test


def test_the_installed_package_is_the_wheel_not_the_checkout(venv: Path) -> None:
    imported = run(venv / "bin" / "python", "-c", "import aitp; print(aitp.__file__)", cwd="/").stdout.strip()
    assert Path(imported).is_relative_to(venv), imported


def test_the_installed_server_lists_every_shipped_capability(server: ServerProcess) -> None:
    response = httpx.get(f"{server.base_url}/v1/capabilities", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert response.status_code == 200, response.text
    listed = sorted(capability["id"] for capability in response.json()["data"])
    assert listed == SHIPPED_CAPABILITIES


def test_the_installed_server_serves_the_web_ui(server: ServerProcess) -> None:
    page = httpx.get(f"{server.base_url}/")
    assert page.status_code == 200
    assert page.text == (REPO / "web" / "index.html").read_text()
    script = httpx.get(f"{server.base_url}/app.js")
    assert script.status_code == 200
    assert script.text == (REPO / "web" / "app.js").read_text()
