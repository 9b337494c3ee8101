"""The README's set-up promise: exactly two commands, and CI runs the test one verbatim; and every setting the
server reads has its row in the configuration table (docs/configuration.md, which the README points to)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()


def _marked_command(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```sh\n(.+?)\n```", README, re.S)
    assert match, f"README.md lacks the <!-- {marker} --> block"
    return match.group(1).strip()


def test_readme_has_exactly_one_serve_and_one_test_command() -> None:
    assert README.count("<!-- serve-command -->") == 1
    assert README.count("<!-- test-command -->") == 1
    serve, test = _marked_command("serve-command"), _marked_command("test-command")
    assert "\n" not in serve and "\n" not in test
    assert serve.endswith("aitp serve")
    assert "'.[test]'" in test and "pytest" in test


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci and 'bash -c "$command"' in ci


def test_ci_runs_it_in_a_newcomers_shell() -> None:
    """No virtualenv active and no `aitp` on PATH: a test relying on either fails in CI, as on a fresh machine."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "env -u VIRTUAL_ENV" in ci and "command -v aitp" in ci and "pyvenv.cfg" in ci


def test_no_test_looks_for_the_projects_commands_on_path() -> None:
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text()
        for name in ("aitp", "py-spy"):
            assert f'which("{name}")' not in text, f"{path} finds {name} through PATH: use sys.executable"


def test_the_readme_points_to_the_configuration_table() -> None:
    assert "(docs/configuration.md)" in README
    for variable in ("AITP_STORE", "AITP_ADMIN_KEY", "AITP_HOST", "AITP_PORT"):
        assert f"`{variable}`" in README


def test_configuration_table_names_every_setting() -> None:
    from aitp.config import Settings

    for variable in ("AITP_STORE", "AITP_ADMIN_KEY", "AITP_HOST", "AITP_PORT"):
        assert f"| `{variable}`" in CONFIGURATION
    assert Settings.from_env({}).store_url == "sqlite:///aitp-data/aitp.db"
    assert "`sqlite:///aitp-data/aitp.db`" in CONFIGURATION


def test_every_environment_setting_is_in_the_configuration_table() -> None:
    """Each `AITP_*` variable the settings read has its row (so a new limit cannot go undocumented)."""
    source = (ROOT / "src" / "aitp" / "config.py").read_text()
    variables = set(re.findall(r'"(AITP_[A-Z0-9_]+)"', source))
    assert len(variables) > 20
    missing = sorted(v for v in variables if f"| `{v}`" not in CONFIGURATION)
    assert missing == []
