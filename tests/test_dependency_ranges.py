"""The declared dependency ranges are kept true, and CI holds them to it.

- Every runtime requirement (the client's, the `identity` and `server` extras') has a lower bound: the lowest
  version the code was tried with (`.ci/lowest-versions` installs the lowest each range admits and runs a
  smoke suite on them).
- The server libraries whose private internals the code overrides or copies (uvicorn's protocols and logging,
  FastAPI's route handler, Starlette's request and middleware chain) have an upper bound: a release the code has
  not been tried with is not installed.
- CI installs exact pins (`.ci/constraints.txt`), each inside the declared ranges, through PIP_CONSTRAINT, so the
  README's test command runs unchanged; after the suite it runs the lowest-versions job.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "aitp-thread-service"
CONSTRAINTS = ROOT / ".ci" / "constraints.txt"
CI_RUN = ROOT / ".ci" / "run"
LOWEST = ROOT / ".ci" / "lowest-versions"
# the command that writes the constraints file, named in its header (rerun it after changing a range)
COMPILE = "uv pip compile pyproject.toml --extra test --universal -o .ci/constraints.txt"
# what the code reaches into beyond the libraries' public API (aitp.server, aitp.bindings.http)
INTERNALS_USED = {"uvicorn", "fastapi", "starlette"}
LOWER = {">=", ">", "==", "~=", "==="}
UPPER = {"<", "<=", "==", "~=", "==="}


def optional(extra: str) -> list[Requirement]:
    """The requirements of `extra`, without its references to the project's own other extras."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        lines = tomllib.load(fh)["project"]["optional-dependencies"][extra]
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) != PROJECT]


def base() -> list[Requirement]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return [Requirement(line) for line in tomllib.load(fh)["project"]["dependencies"]]


def runtime() -> list[Requirement]:
    """What an installed client or server runs on: the dependencies and the `identity` and `server` extras."""
    return [*base(), *optional("identity"), *optional("server")]


def pins() -> dict[str, list[tuple[Version, Requirement]]]:
    """The constraints file's pins by package name: (version, the pin with its environment marker)."""
    found: dict[str, list[tuple[Version, Requirement]]] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        pin = Requirement(line)
        (spec,) = pin.specifier
        assert spec.operator == "==" and "*" not in spec.version, f"not an exact pin: {line}"
        found.setdefault(canonicalize_name(pin.name), []).append((Version(spec.version), pin))
    return found


@pytest.mark.parametrize("requirement", runtime(), ids=str)
def test_every_runtime_requirement_has_a_lower_bound(requirement: Requirement) -> None:
    assert any(spec.operator in LOWER for spec in requirement.specifier), f"{requirement}: no lower bound"


@pytest.mark.parametrize("name", sorted(INTERNALS_USED))
def test_the_libraries_whose_internals_are_used_have_an_upper_bound(name: str) -> None:
    """Declared by name in the `server` extra (Starlette too, not only through FastAPI: the code reaches into it)
    and capped: their next release may change what the code overrides."""
    (requirement,) = [r for r in optional("server") if canonicalize_name(r.name) == name]
    assert any(spec.operator in UPPER for spec in requirement.specifier), f"{requirement}: no upper bound"


def test_the_constraints_pin_every_declared_requirement_inside_its_range() -> None:
    """Each requirement of the test extra's install (runtime and test tools) is pinned, to a version its range
    admits, for every environment the pins name (the file is resolved for any platform: markers)."""
    pinned = pins()
    outside = {}
    for requirement in [*runtime(), *optional("test")]:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not pinned in {CONSTRAINTS.name}"
        for version, pin in pinned[name]:
            if not requirement.specifier.contains(version, prereleases=True):
                outside[str(pin)] = str(requirement)
    assert outside == {}


def test_the_constraints_file_says_how_it_is_made() -> None:
    assert COMPILE in CONSTRAINTS.read_text()[:500]


def test_ci_installs_the_pins_and_then_runs_the_lowest_versions_job() -> None:
    """The README's command is run as written, the pins reaching pip through PIP_CONSTRAINT; the lowest-versions
    job follows the suite (and `--newest` runs the suite as a newcomer installs it, without pins)."""
    script = CI_RUN.read_text()
    assert "constraints=$PWD/.ci/constraints.txt" in script and 'PIP_CONSTRAINT="$constraints"' in script
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    suite = next(i for i, line in enumerate(commands) if 'bash -c "$command"' in line)
    assert any(".ci/lowest-versions" in line.split() for line in commands[suite + 1 :])


def test_the_lowest_versions_job_installs_the_lowest_direct_versions_and_runs_existing_tests() -> None:
    script = LOWEST.read_text()
    assert "--resolution lowest-direct" in script and "'.[test]'" in script
    smoke = re.search(r"^SMOKE=\(\n(.*?)^\)$", script, re.S | re.M)
    assert smoke, "no SMOKE=( ... ) list of test files"
    files = [word.split("::")[0] for word in shlex.split(smoke.group(1), comments=True)]
    assert files and [f for f in files if not (ROOT / f).exists()] == []
