"""The test command lints, checks the formatting and type-checks, as pyproject.toml configures ruff and mypy
(both come with the `test` extra): ruff over the Python of src, tests, bench and examples, mypy over src/aitp.
.pre-commit-config.yaml runs the same commands before a commit. Each runs from the interpreter running the
tests, never through PATH; mypy keeps its cache in .mypy_cache (a few seconds warm, ~15 s cold)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
LINTED = ("src", "tests", "bench", "examples")
CHECKS = {
    "lint": ("ruff", "check", *LINTED),
    "format": ("ruff", "format", "--check", *LINTED),
    "types": ("mypy", "src/aitp"),
}


@pytest.mark.parametrize("check", CHECKS)
def test_check_passes(check: str) -> None:
    command = [sys.executable, "-m", *CHECKS[check]]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"`python -m {' '.join(CHECKS[check])}` failed:\n{result.stdout}{result.stderr}"


def test_pre_commit_runs_the_same_checks() -> None:
    """Each hook is a local one running the project's own tool (`python -m`, the `test` extra's version) on
    what this test checks: the same commands, ruff given the changed files among the linted folders."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert all(repo["repo"] == "local" for repo in config["repos"])
    assert all(hook["language"] == "system" and hook["entry"].startswith("python -m ") for hook in hooks)
    entries = {tuple(hook["entry"].split()[2:]): hook for hook in hooks}
    linted = "^(" + "|".join(LINTED) + ")/"
    assert entries.keys() == {
        CHECKS["lint"][: -len(LINTED)],
        CHECKS["format"][: -len(LINTED)],
        CHECKS["types"],
    }
    for command, hook in entries.items():
        if command[0] == "ruff":
            assert hook["files"] == linted and hook.get("pass_filenames", True)
        else:
            assert hook["pass_filenames"] is False


def test_test_extra_brings_the_tools() -> None:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        test_extra = tomllib.load(fh)["project"]["optional-dependencies"]["test"]
    assert {"ruff", "mypy"} <= {Requirement(r).name for r in test_extra}
