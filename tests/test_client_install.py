"""A client-only install: the wheel without its `server` extra, in a fresh virtualenv that fetches the
dependencies from the package index as a user's would, runs the example agents against a server installed
elsewhere (this interpreter's). It prints the virtualenv's size and package count: the README's figure.

A static check comes first, offline: every third-party module that `import aitp.client` reaches is provided
by the distribution's own dependencies, so a client change that needs a server dependency fails here, naming
the module, rather than at a user's import.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from aitp.pytest_plugin import AitpServer
from tests.test_architecture import modules, resolve
from tests.test_examples import shop_agent
from tests.test_packaging import DISTRIBUTION, REPO, SERVER_ONLY, build_wheel, metadata, run

EXAMPLES = REPO / "examples"
WAIT = 30  # seconds any single wait may take
MB = 1_000_000
# a sanity bound against a server dependency slipping in (the server's virtualenv is over 200 MB); the README
# gives the measured figure
SIZE_BOUND = 100 * MB
# what `python -m venv` puts in every virtualenv (setuptools until Python 3.12), by their site-packages names
PIP_AND_SETUPTOOLS = ("pip", "setuptools", "pkg_resources", "_distutils_hack", "distutils")


def client_closure() -> set[str]:
    """The package modules `import aitp.client` loads: their import statements that run at import time."""
    found: set[str] = set()
    todo = ["aitp.client"]
    while todo:
        module = todo.pop()
        if module not in found:
            found.add(module)
            todo.extend(resolve(name) or "" for name in load_time_imports(module) if name.startswith("aitp."))
            # importing a module runs its packages' __init__ first
            parts = module.split(".")
            todo.extend(".".join(parts[:n]) for n in range(1, len(parts)) if ".".join(parts[:n]) in modules())
            found.discard("")
    return found


def load_time_imports(module: str) -> set[str]:
    """The dotted names `module` imports when it is imported: its module-level import statements (in `if` and
    `try` blocks too, but not under `if TYPE_CHECKING:`), not those inside functions, which run when called
    (`aitp.client._sign_in` imports `aitp.identity`, the `identity` extra, only when a key signs)."""
    path = modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                names.update([base, *(f"{base}.{alias.name}" for alias in node.names)])
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(ast.parse(path.read_text(), str(path)).body)
    return names


def third_party_imports(module: str) -> set[str]:
    """The top-level names of what `module` imports at import time from outside aitp and the standard library."""
    names = {name.split(".")[0] for name in load_time_imports(module)}
    return {name for name in names if name and name != "aitp" and name not in sys.stdlib_module_names}


def installed_closure(requirements: list[Requirement]) -> set[str]:
    """The distributions `requirements` install, theirs included (read from this interpreter's metadata)."""
    found: set[str] = set()
    todo = [(r.name, frozenset(r.extras)) for r in requirements]
    while todo:
        name, extras = todo.pop()
        if canonicalize_name(name) in found:
            continue
        found.add(canonicalize_name(name))
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("client-dist"))


def test_the_clients_imports_come_with_the_distribution_without_extras(wheel: Path) -> None:
    requirements = [Requirement(line) for line in metadata(wheel).get_all("Requires-Dist", [])]
    installed = installed_closure([r for r in requirements if r.marker is None])
    providers = importlib.metadata.packages_distributions()
    missing = {
        f"{module} imports {name}": providers.get(name, ["?"])
        for module in sorted(client_closure())
        for name in sorted(third_party_imports(module))
        if not {canonicalize_name(d) for d in providers.get(name, [])} & installed
    }
    assert missing == {}


def test_no_document_installs_aitp_from_the_package_index() -> None:
    """`aitp` on the public index is an unrelated, empty project: a command installing it by that name would
    fetch that one. This project installs from its checkout, as `aitp-thread-service`."""
    by_name = re.compile(r"pip install\s+(?:-\S+\s+)*['\"]?aitp(?:\[[^\]]*\])?['\"]?(?=[\s`]|$)", re.M)
    documents = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted(EXAMPLES.glob("*"))]
    found = {str(d.relative_to(REPO)): by_name.findall(d.read_text()) for d in documents if d.is_file()}
    assert {name: commands for name, commands in found.items() if commands} == {}


def clean_env() -> dict[str, str]:
    """This environment without what would lead a process to the checkout or to this interpreter's packages."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AITP_")}


def disk_usage(root: Path) -> int:
    """Bytes on disk of `root` and what is under it, as `du` counts them (symlinks not followed: lib64)."""
    total = root.lstat().st_blocks * 512
    for directory, dirs, files in os.walk(root):
        total += sum((Path(directory) / name).lstat().st_blocks * 512 for name in (*dirs, *files))
    return total


@pytest.fixture(scope="module")
def client_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (with its pip) holding the wheel, its dependencies fetched from the package index."""
    root = tmp_path_factory.mktemp("client") / "venv"
    env = clean_env()
    run(sys.executable, "-m", "venv", root, env=env)
    run(root / "bin" / "python", "-m", "pip", "install", "-q", wheel, env=env, cwd=root)
    return root


def installed_distributions(venv: Path) -> list[str]:
    """The (normalized) names of the distributions installed in `venv`, pip and setuptools included."""
    listing = "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
    names = json.loads(run(venv / "bin" / "python", "-c", listing, env=clean_env(), cwd=venv).stdout)
    return sorted({canonicalize_name(name) for name in names})


def test_the_client_only_install_is_small_and_serverless(client_venv: Path) -> None:
    distributions = installed_distributions(client_venv)
    size = disk_usage(client_venv)
    # the README's figure: shown with `pytest -s`, and in a failing test's report
    (site,) = (client_venv / "lib").glob("python3*/site-packages")
    tools = sum(disk_usage(p) for p in site.iterdir() if p.name.partition("-")[0] in PIP_AND_SETUPTOOLS)
    print(
        f"\nclient-only virtualenv: {size / MB:.1f} MB ({tools / MB:.1f} MB of it pip and setuptools), "
        f"{len(distributions)} packages: {', '.join(distributions)}"
    )
    assert not SERVER_ONLY & set(distributions), SERVER_ONLY & set(distributions)
    assert DISTRIBUTION in distributions
    assert size < SIZE_BOUND, f"{size / MB:.1f} MB"
    probe = "import aitp, aitp.client; print(aitp.__file__)"
    where = run(client_venv / "bin" / "python", "-c", probe, env=clean_env(), cwd="/").stdout.strip()
    assert Path(where).is_relative_to(client_venv), where  # the installed copy, not the checkout


def test_the_client_only_install_says_what_the_server_and_signing_in_need(client_venv: Path) -> None:
    """Its `aitp` command (the server's) and a sign-in with an actor's own key (the `identity` extra) each say
    in one line what to install, instead of an ImportError's traceback."""
    command = subprocess.run(
        [client_venv / "bin" / "aitp", "serve"], capture_output=True, text=True, env=clean_env(), cwd="/", timeout=60
    )
    assert command.returncode == 1 and "Traceback" not in command.stderr, command.stderr
    assert "pip install 'aitp-thread-service[server]'" in command.stderr
    sign = "from aitp.client import sign_in_proof; sign_in_proof({'kind': 'domain'}, 'key')"
    signing = subprocess.run(
        [client_venv / "bin" / "python", "-c", sign], capture_output=True, text=True, env=clean_env(), cwd="/"
    )
    assert signing.returncode == 1 and "aitp-thread-service[identity]" in signing.stderr, signing.stderr


def test_the_user_agent_helps_from_the_client_only_install(client_venv: Path) -> None:
    helped = run(client_venv / "bin" / "python", EXAMPLES / "user_agent.py", "--help", env=clean_env(), cwd="/")
    assert "--url" in helped.stdout and "--key" in helped.stdout


async def test_the_example_agents_trade_from_the_client_only_install(
    client_venv: Path, aitp_server: AitpServer
) -> None:
    """The shop and the shopper of examples/, both client-only, against the server this interpreter runs; with
    actors of their own, as the session's shared server may hold other tests' threads."""
    python = client_venv / "bin" / "python"
    shop, user = "client-only-shop.near", "client-only-user.near"
    url = aitp_server.base_url
    async with shop_agent(url, aitp_server.key(shop), python=python, env=clean_env(), cwd="/") as shop_log:
        shopper = await asyncio.create_subprocess_exec(
            python, EXAMPLES / "user_agent.py", "--url", url, "--key", aitp_server.key(user), "--shop", shop,
            "--timeout", str(WAIT), env=clean_env(), cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(shopper.communicate(), WAIT + 10)
    assert shopper.returncode == 0, f"{out.decode()}\n{err.decode()}\n" + "\n".join(shop_log)
    assert json.loads(out)["result"] == "success"
