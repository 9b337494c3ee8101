"""aitp's pytest plugin (`aitp.pytest_plugin`) as an agent developer meets it: pytest run on a suite of its own
in a directory of its own (pytester, in a subprocess: the plugin comes through its entry point, with no
conftest of ours), in pytest-asyncio's strict mode, its default.

The suite is the guide's (docs/agents.md, "Testing your agent": each `<!-- pytest: FILE -->` block written to
FILE, as it is) and tests of what the guide promises: `aitp_server_env`'s settings reach the server and the
shell's `AITP_*` variables do not; a failing test's report shows what the server logged during that test, and
a passing one's shows nothing. They share the session's server: one start. The guide's test also runs in
pytest-asyncio's auto mode, without its mark (one more start).
"""

from __future__ import annotations

import re

import pytest

from tests.support.docs import ROOT, marked_blocks

pytest_plugins = ["pytester"]

GUIDE = ROOT / "docs" / "agents.md"
BLOCKS = marked_blocks(GUIDE, "pytest")
WAIT = 180  # seconds the inner pytest run may take

# run after the guide's test_shop.py (files run in name order), on the same server
PROMISES = """
import httpx


def test_the_settings_of_aitp_server_env_reach_the_server(aitp_server):
    # the guide's conftest.py sets AITP_STRICT_ROLES: the creator of a thread posting as "assistant" is refused
    headers = {"Authorization": f"Bearer {aitp_server.key('reader.near')}"}
    thread = httpx.post(f"{aitp_server.base_url}/v1/threads", json={}, headers=headers)
    assert thread.status_code == 200, thread.text
    url = f"{aitp_server.base_url}/v1/threads/{thread.json()['id']}/messages"
    sent = httpx.post(url, json={"role": "assistant", "content": "hello"}, headers=headers)
    assert (sent.status_code, sent.json()["error"]["code"]) == (400, "role_mismatch"), sent.text


def test_a_failure_shows_what_the_server_logged_meanwhile(aitp_server):
    headers = {"Authorization": f"Bearer {aitp_server.key('reader.near')}"}
    httpx.get(f"{aitp_server.base_url}/v1/threads/thread_asked_by_the_failing_test", headers=headers)
    assert False, "failing on purpose"
"""


def test_the_guide_has_a_conftest_and_a_test() -> None:
    assert sorted(BLOCKS) == ["conftest.py", "test_shop.py"]
    assert all(block.language == "python" for block in BLOCKS.values())


def test_an_agent_developers_suite_runs_on_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a shell's setting that would keep the server from starting (an address this machine does not have)
    monkeypatch.setenv("AITP_HOST", "203.0.113.7")
    for name, block in BLOCKS.items():
        pytester.path.joinpath(name).write_text(block.code + "\n")
    pytester.path.joinpath("test_then_the_promises.py").write_text(PROMISES)

    # in name order (no pytest-randomly, were it installed): the failing test comes after the others
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", timeout=WAIT)

    output = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    assert "FAILED test_then_the_promises.py::test_a_failure_shows_what_the_server_logged_meanwhile" in output
    # one log section, the failing test's, holding its own request and none of the tests before it
    sections = re.findall(r"-+ aitp serve log \(http://127\.0\.0\.1:\d+\) during this test -+\n(.*?)\n=", output, re.S)
    assert len(sections) == 1, output
    assert '"GET /v1/threads/thread_asked_by_the_failing_test HTTP/1.1" 404' in sections[0], output
    assert "contact_policy" not in sections[0] and '"POST /v1/threads HTTP/1.1"' not in sections[0], output


def test_in_auto_mode_the_guides_test_needs_no_mark(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    code = BLOCKS["test_shop.py"].code
    unmarked = re.sub(r"^@pytest\.mark\.asyncio\b.*\n", "", code, flags=re.M)
    assert unmarked != code
    pytester.path.joinpath("test_shop.py").write_text(unmarked + "\n")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=WAIT)

    result.assert_outcomes(passed=1)
