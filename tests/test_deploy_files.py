"""Static checks of the deployment files (Dockerfile, docker-compose.yml).

No Docker engine is available to the test suite, so these tests read the files
and verify that they agree with each other and with the repository layout.
"""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import tomllib
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE_FILE = ROOT / "docker-compose.yml"


# --------------------------------------------------------------------------- helpers


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """Return (INSTRUCTION, arguments) pairs, joining backslash continuations."""
    instructions: list[tuple[str, str]] = []
    buffer = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue  # comment lines inside a continuation are ignored by Docker
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        keyword, _, args = buffer.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        buffer = ""
    if buffer.strip():
        keyword, _, args = buffer.strip().partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    return instructions


def _instruction_args(name: str) -> list[str]:
    return [args for keyword, args in _dockerfile_instructions() if keyword == name]


def _exec_form(args: str) -> list[str]:
    """Parse a JSON (exec form) argument list, or shell-split a shell-form one."""
    if args.startswith("["):
        value = json.loads(args)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value)
        return value
    return shlex.split(args)


def _dockerfile_cmd() -> list[str]:
    cmds = _instruction_args("CMD")
    assert cmds, "Dockerfile has no CMD"
    return _exec_form(cmds[-1])  # only the last CMD takes effect


def _option(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _copy_sources() -> list[str]:
    """Source paths of every COPY/ADD from the build context (not --from stages)."""
    sources: list[str] = []
    for keyword, args in _dockerfile_instructions():
        if keyword not in ("COPY", "ADD"):
            continue
        parts = _exec_form(args)
        flags = [p for p in parts if p.startswith("--")]
        if any(f.startswith("--from") for f in flags):
            continue
        paths = [p for p in parts if not p.startswith("--")]
        assert len(paths) >= 2, f"malformed {keyword}: {args}"
        sources.extend(paths[:-1])
    return sources


@pytest.fixture(scope="module")
def compose() -> dict:
    with COMPOSE_FILE.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict) -> dict:
    return compose["services"]


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def _healthcheck_text(service: dict) -> str:
    test = service["healthcheck"]["test"]
    return " ".join(test) if isinstance(test, list) else str(test)


def _container_ports(service: dict) -> set[int]:
    ports: set[int] = set()
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            spec = str(entry).split("/")[0]
            ports.add(int(spec.rsplit(":", 1)[-1]))
    return ports


# --------------------------------------------------------------------------- compose


def test_compose_file_parses_as_a_mapping_with_services(compose):
    """docker-compose.yml is valid YAML with a `services` mapping."""
    assert isinstance(compose.get("services"), dict)


def test_compose_defines_exactly_mongo_and_aitp(services):
    """The stack consists of a MongoDB service and the aitp service, nothing else."""
    assert set(services) == {"mongo", "aitp"}


def test_mongo_runs_as_a_replica_set_member(services):
    """mongod is started with --replSet (aitp needs transactions/change streams)."""
    command = services["mongo"]["command"]
    argv = command if isinstance(command, list) else shlex.split(command)
    assert any(arg == "--replSet" or arg.startswith("--replSet=") for arg in argv)
    assert str(services["mongo"]["image"]).startswith("mongo:")


def test_mongo_healthcheck_initiates_the_replica_set(services):
    """The mongo healthcheck calls rs.initiate when the set is not yet initiated."""
    text = _healthcheck_text(services["mongo"])
    assert "mongosh" in text
    assert "rs.status()" in text
    assert "rs.initiate(" in text
    repl_set = _option(
        services["mongo"]["command"]
        if isinstance(services["mongo"]["command"], list)
        else shlex.split(services["mongo"]["command"]),
        "--replSet",
    )
    assert f'"{repl_set}"' in text or f"'{repl_set}'" in text, "initiated set name must match --replSet"
    assert "mongo:27017" in text, "replica set member host must be reachable by the aitp service"


def test_aitp_is_built_from_the_repository_dockerfile(services):
    """aitp builds from the repo root with the Dockerfile, which exists."""
    build = services["aitp"]["build"]
    assert build["context"] == "."
    dockerfile = build.get("dockerfile", "Dockerfile")
    assert (ROOT / build["context"] / dockerfile).resolve() == DOCKERFILE
    assert DOCKERFILE.is_file()


def test_aitp_store_points_at_the_mongo_replica_set(services):
    """AITP_STORE is a mongodb:// URL on the `mongo` service with replicaSet= set."""
    url = _environment(services["aitp"])["AITP_STORE"]
    parts = urlsplit(url)
    assert parts.scheme == "mongodb"
    assert parts.hostname == "mongo"
    assert parts.hostname in services
    repl_set = parse_qs(parts.query).get("replicaSet")
    assert repl_set and repl_set[0], "replicaSet= query parameter is required"
    mongo_cmd = services["mongo"]["command"]
    argv = mongo_cmd if isinstance(mongo_cmd, list) else shlex.split(mongo_cmd)
    assert repl_set[0] == _option(argv, "--replSet")


def test_aitp_admin_key_must_be_provided(services):
    """AITP_ADMIN_KEY uses ${VAR:?message} so compose refuses to start without it."""
    value = _environment(services["aitp"])["AITP_ADMIN_KEY"]
    assert re.fullmatch(r"\$\{AITP_ADMIN_KEY:\?[^}]*\}", value), value


def test_aitp_waits_for_a_healthy_mongo(services):
    """aitp depends on mongo with condition service_healthy."""
    depends_on = services["aitp"]["depends_on"]
    assert isinstance(depends_on, dict), "long depends_on syntax is needed for conditions"
    assert depends_on["mongo"]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", ["mongo", "aitp"])
def test_every_service_has_a_healthcheck(services, name):
    """Both services declare a healthcheck test."""
    healthcheck = services[name].get("healthcheck")
    assert healthcheck and healthcheck.get("test")
    assert not healthcheck.get("disable", False)


def test_aitp_healthcheck_probes_the_health_endpoint(services):
    """The aitp compose healthcheck requests /health on the published container port."""
    text = _healthcheck_text(services["aitp"])
    (port,) = _container_ports(services["aitp"])
    assert f"127.0.0.1:{port}/health" in text


# --------------------------------------------------------------------------- Dockerfile


def test_dockerfile_is_based_on_python_311_slim():
    """The image builds on python:3.11-slim."""
    froms = _instruction_args("FROM")
    assert froms and froms[-1].split()[0] == "python:3.11-slim"


def test_dockerfile_cmd_serves_on_all_interfaces_at_the_published_port(services):
    """CMD runs `aitp serve --host 0.0.0.0 --port N`, N being published and EXPOSEd."""
    cmd = _dockerfile_cmd()
    assert cmd[:2] == ["aitp", "serve"]
    assert _option(cmd, "--host") == "0.0.0.0"
    port = int(_option(cmd, "--port"))
    assert port in _container_ports(services["aitp"])
    exposed = {int(p.split("/")[0]) for args in _instruction_args("EXPOSE") for p in args.split()}
    assert port in exposed


def test_dockerfile_runs_as_a_non_root_user():
    """The final USER is neither root nor uid 0."""
    users = _instruction_args("USER")
    assert users, "Dockerfile must switch to a non-root USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


def test_dockerfile_defaults_to_sqlite_on_the_data_volume():
    """Standalone image stores data in SQLite under the /data volume."""
    envs = " ".join(_instruction_args("ENV"))
    assert "AITP_STORE=sqlite:////data/aitp.db" in envs
    volumes = " ".join(_instruction_args("VOLUME"))
    assert "/data" in volumes


def test_dockerfile_healthcheck_probes_the_health_endpoint():
    """HEALTHCHECK requests /health on the served port with python's urllib."""
    checks = _instruction_args("HEALTHCHECK")
    assert checks
    port = _option(_dockerfile_cmd(), "--port")
    assert "urllib" in checks[-1]
    assert f"http://127.0.0.1:{port}/health" in checks[-1]


def test_dockerfile_installs_the_package_without_pip_cache():
    """The package, server included (its `server` extra), is installed from the copied sources with --no-cache-dir."""
    runs = " ".join(_instruction_args("RUN"))
    assert re.search(r"pip install --no-cache-dir [\"']?\.\[server\][\"']?(\s|$)", runs)


def test_dockerfile_copies_the_expected_sources():
    """Project metadata, README, the license (the wheel carries it), code, wire schemas and the shipped files the
    wheel packs are copied."""
    sources = {s.rstrip("/") for s in _copy_sources()}
    assert {"pyproject.toml", "README.md", "LICENSE", "src", "schemas", "capabilities", "web"} <= sources


def test_dockerfile_relies_on_the_installed_package_for_shipped_files():
    """The installed wheel carries the capabilities and the UI: no directory overrides are needed."""
    settings = " ".join(_instruction_args("ENV"))
    assert "AITP_CAPABILITIES_DIR" not in settings and "AITP_WEB_DIR" not in settings


@pytest.mark.parametrize("source", _copy_sources() if DOCKERFILE.is_file() else [])
def test_every_copied_path_exists_in_the_repository(source):
    """Each COPY source exists, so `docker build` cannot fail on a missing path."""
    assert (ROOT / source).exists(), f"Dockerfile COPYs {source!r}, which is missing"


def test_dockerignore_keeps_copied_sources_in_the_build_context():
    """.dockerignore excludes local state but none of the paths the Dockerfile copies."""
    ignored = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", "aitp-data", "tests", "bench"} <= ignored
    for source in _copy_sources():
        assert source.rstrip("/") not in ignored


def test_cmd_console_script_is_declared_in_pyproject():
    """The `aitp` executable used by CMD is a [project.scripts] entry point."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        pyproject = tomllib.load(fh)
    scripts = pyproject.get("project", {}).get("scripts", {})
    assert _dockerfile_cmd()[0] in scripts
