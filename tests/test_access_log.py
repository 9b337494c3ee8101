"""The access log (`aitp.server.access_log`): one line per HTTP request, uvicorn's line, its secrets redacted.

Specification: `aitp serve` writes, for every HTTP request, `INFO:     <client> - "<method> <path?query>
HTTP/<version>" <status> <phrase>` to its output as the request is answered (not at exit), with a key in
the query (`?token=`) redacted; the line is the one uvicorn's own access formatter writes.
"""

from __future__ import annotations

import io
import logging
import re
import time
from pathlib import Path

import httpx
import pytest
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter

from aitp.server.access_log import AccessLog, AccessLogger
from aitp.testing import start_server
from tests.conftest import ADMIN_KEY


def lines_within(log: Path, pattern: str, seconds: float = 10) -> list[str]:
    """The lines of `log` matching `pattern`, once there is one (or none after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        found = [line for line in log.read_text(errors="replace").splitlines() if re.search(pattern, line)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_each_request_is_logged_as_it_is_answered_with_its_key_redacted(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = start_server(f"sqlite:///{tmp_path / 'aitp.db'}", log, {"AITP_ADMIN_KEY": ADMIN_KEY})
    try:
        key = "aitp_" + "k" * 43
        assert httpx.get(f"{server.base_url}/docs").status_code == 200
        assert httpx.get(f"{server.base_url}/v1/threads?after=1&token={key}").status_code == 401
        client = r"127\.0\.0\.1:\d+"
        # read while the server runs: the lines are out as the requests are answered
        docs = lines_within(log, r'"GET /docs HTTP/1\.1"')
        refused = lines_within(log, r'"GET /v1/threads\?')
    finally:
        server.stop()
    assert len(docs) == 1 and re.fullmatch(rf'INFO:     {client} - "GET /docs HTTP/1\.1" 200 OK', docs[0])
    expected = rf'INFO:     {client} - "GET /v1/threads\?after=1&token=\[redacted\] HTTP/1\.1" 401 Unauthorized'
    assert len(refused) == 1 and re.fullmatch(expected, refused[0]), refused
    assert key not in log.read_text()


@pytest.mark.parametrize("status", [200, 401, 404, 599])
def test_the_line_is_uvicorns(status: int) -> None:
    args = ("10.0.0.7:51234", "POST", "/a2a/shop?x=%20y", "1.1", status)
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None)
    fmt = LOGGING_CONFIG["formatters"]["access"]["fmt"]
    uvicorns = AccessFormatter(fmt, use_colors=False).format(record)
    assert AccessLog(stream=io.StringIO()).line(record) == uvicorns + "\n"


def test_a_line_goes_through_the_logger_when_more_than_the_access_log_takes_its_records() -> None:
    logger = logging.getLogger("tests.access")
    logger.propagate, logger.level = False, logging.INFO
    access, seen = AccessLog(stream=io.StringIO()), []
    logger.handlers = [access]
    args = ("10.0.0.7:51234", "GET", "/health", "1.1", 200)
    AccessLogger(logger).info('%s - "%s %s HTTP/%s" %d', *args)  # straight to the access log
    other = logging.Handler()
    other.emit = seen.append  # type: ignore[method-assign]
    logger.addHandler(other)
    AccessLogger(logger).info('%s - "%s %s HTTP/%s" %d', *args)  # through the logger: both see it
    logger.setLevel(logging.WARNING)
    AccessLogger(logger).info('%s - "%s %s HTTP/%s" %d', *args)  # below the level: nobody
    line = 'INFO:     10.0.0.7:51234 - "GET /health HTTP/1.1" 200 OK\n'
    assert access.stream.getvalue() == line * 2  # type: ignore[attr-defined]
    assert [record.args for record in seen] == [args]
