"""The documentation site (mkdocs.yml: docs/, with the README as its home page) builds with `--strict`: a link
to a page that does not exist, an anchor no heading makes, or a page left out of the nav fails the build, and so
this test. Each kind of breakage is made in a copy of the docs to show the build does fail on it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WAIT = 120  # seconds a build may take


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the Material banner: not a warning of this site's
        capture_output=True,
        text=True,
        timeout=WAIT,
        stdin=subprocess.DEVNULL,
    )


def test_the_site_builds_with_no_broken_link(tmp_path: Path) -> None:
    result = build(ROOT / "mkdocs.yml", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    # the README is the home page; every page of docs/ is built (and the nav names each: see below)
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").glob("*.md"))
    assert (tmp_path / "index.html").is_file()
    assert [p for p in pages if not (tmp_path / p / "index.html").is_file()] == []
    assert 'id="quick-tour-curl"' in (tmp_path / "index.html").read_text()


def test_the_readme_links_into_the_docs_as_github_reads_them() -> None:
    """Relative links of the README go into docs/ (the site's hook drops that prefix): a link relative to the
    docs directory would work on the site and be broken on GitHub."""
    targets = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())
    relative = [t for t in targets if not re.match(r"[a-z]+:|#", t)]
    assert relative and [t for t in relative if not t.startswith("docs/")] == []
    assert [t for t in relative if not (ROOT / t.partition("#")[0]).exists()] == []


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The site's sources, copied: mkdocs.yml, the README and docs/."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", project)
    shutil.copy(ROOT / "README.md", project)
    shutil.copytree(ROOT / "docs", project / "docs")
    return project


BREAKAGES = {
    "a link to a page that does not exist": ("docs/api.md", "[gone](no-such-page.md)", "no-such-page.md"),
    "an anchor no heading makes": ("docs/api.md", "[gone](webhooks.md#no-such-heading)", "no-such-heading"),
    "an anchor of the page itself": ("docs/webhooks.md", "[gone](#no-such-heading)", "no-such-heading"),
    "a README link into docs/ to nothing": ("README.md", "[gone](docs/no-such-page.md)", "no-such-page.md"),
    "a README link outside docs/": ("README.md", "[gone](LICENSE)", "LICENSE"),
    "a page left out of the nav": ("docs/orphan.md", "# Orphan", "orphan.md"),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_the_build_fails_on(breakage: str, copy: Path, tmp_path: Path) -> None:
    path, text, named = BREAKAGES[breakage]
    with (copy / path).open("a") as file:
        file.write(f"\n{text}\n")
    result = build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0, f"the build passed with {breakage}:\n{result.stderr}"
    assert "WARNING" in result.stderr and named in result.stderr, result.stderr
