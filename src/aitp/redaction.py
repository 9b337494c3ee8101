"""No secret in a log line: what the server writes to its output is redacted first.

Browsers cannot set headers on a WebSocket: old clients sent their key as `?token=` (deprecated; the web UI
sends a one-time `?ticket=`); uvicorn's access log (HTTP) and its WebSocket log write the request's path with
its query, which put the full key in the log.
Every handler `aitp serve` logs through (the server's, `aitp.server.log_config`, and the root one) carries
`RedactSecrets` (the access log's handler, `aitp.server.access_log`, applies `redact` to each line itself),
which replaces, in the message, its arguments and its traceback:
- the value of a `token` or `ticket` query parameter (its name as the server decodes it: `%74oken=` too);
- anything shaped like an API key (`aitp_` and 40+ URL-safe characters), wherever it appears;
- in an absolute URL (httpx's "HTTP Request: POST <url>" line for every webhook and A2A attempt, the
  receivers' and agent cards' our own lines name): the password of its user info
  (`mongodb://user:[redacted]@host`; a user info without one, which may be a token, whole) and every query and
  fragment value, whatever the URL's owner put there (`?sig=`, `#code=`); the parameters' names are kept.
An argument that is not a string (an `httpx.URL`, an exception naming its URL) is redacted as it formats.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote_plus

REDACTED = "[redacted]"
SECRET_PARAMS = frozenset({"token", "ticket"})

# a query parameter: its value runs to the next '&' (the only separator the server splits on), '#', space
# or quote (a log line quotes the request line)
_PARAM = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&;#\s\"']+)=(?P<value>[^&#\s\"']*)")
_KEY = re.compile(r"aitp_[A-Za-z0-9_-]{40,}")


# an absolute URL, and where its query (or fragment) starts and each value in it
_URL = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?:(?P<userinfo>[^/\s?#@\"'<>]*)@)?(?P<rest>[^\s\"'<>]*)")
_TAIL = re.compile(r"[?#]")
_VALUE = re.compile(r"(?P<name>[?&;#][^=&;#]*)=[^&;#]*")
_PLAIN = (int, float, bool, type(None))  # arguments that format as no secret (and are kept, for `%d`)


def _url(match: re.Match[str]) -> str:
    userinfo = match["userinfo"]
    if userinfo is not None:  # a user name is kept beside its password; a lone one may be a token
        user, colon, _ = userinfo.partition(":")
        userinfo = f"{user}:{REDACTED}@" if colon else f"{REDACTED}@"
    rest = match["rest"]
    if tail := _TAIL.search(rest):
        rest = rest[: tail.start()] + _VALUE.sub(rf"\g<name>={REDACTED}", rest[tail.start() :])
    return f"{match['scheme']}{userinfo or ''}{rest}"


def _param(match: re.Match[str]) -> str:
    if unquote_plus(match["name"]).lower() in SECRET_PARAMS and match["value"]:
        return f"{match['lead']}{match['name']}={REDACTED}"
    return match[0]


def redact(text: str) -> str:
    """`text` with its secrets replaced by `[redacted]`."""
    if "=" in text:
        text = _PARAM.sub(_param, text)
    if "aitp_" in text:
        text = _KEY.sub("aitp_" + REDACTED, text)
    if "://" in text:
        text = _URL.sub(_url, text)
    return text


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, _PLAIN):
        return value
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a filter must not raise into the caller; formatting will report it
        return value
    redacted = redact(text)
    return value if redacted == text else redacted


class RedactSecrets(logging.Filter):
    """Redacts a record before any handler formats it (it never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        # arguments one by one: uvicorn's access formatter reads them (path, status, ...) as they are
        if isinstance(record.args, dict):
            record.args = {name: _redacted(value) for name, value in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_redacted(value) for value in record.args)
        if not isinstance(record.msg, str) or redact(record.msg) != record.msg:
            # a secret in the message itself (or a message that is not a string): the whole line, formatted
            record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redact_root_handlers() -> None:
    """Put `RedactSecrets` on the root logger's handlers (the service's own log lines, and libraries')."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())
