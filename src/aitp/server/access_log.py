"""The access log: one line per HTTP request (client, method, path with its query, status), as uvicorn
writes it, with its secrets redacted (`aitp.redaction`), for a fraction of the CPU.

uvicorn's own handler cost a SendMessage ~6% of the server's CPU (py-spy, bench/a2a_send.py): its
formatter copies every record and formats it through `logging.Formatter`, the redaction filter rebuilds its
arguments, and every line is flushed to the stream on its own (a write system call per request).
- `AccessLog`, the handler of `uvicorn.access` in `aitp serve`'s logging configuration, reads uvicorn's five
  arguments as they are, redacts the finished line once, and flushes what was written once per turn of the
  event loop: the lines of the requests answered in that turn go out in one write, still as they are
  answered. On a terminal the line keeps uvicorn's colours (its formatter).
- `AccessLogger` is that logger as our HTTP protocol (`aitp.server.http_protocol`) hands it to uvicorn: while an
  `AccessLog` alone takes the logger's records, a line goes straight to it, without the `LogRecord` the
  logger makes (most of what remained); otherwise (other handlers, filters, a level above INFO) through
  the logger as before. `access_log=False` still turns the log off (uvicorn then calls neither).
"""

from __future__ import annotations

import asyncio
import http
import logging
import sys
from typing import IO, Any

from uvicorn.logging import AccessFormatter

from aitp.redaction import redact

PREFIX = "INFO:     "  # uvicorn's level prefix for INFO (the level padded to 8, then a space)
UVICORN_FORMAT = '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'  # its access line


def _phrase(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} "


_STATUS = {status.value: _phrase(status.value) for status in http.HTTPStatus}


def _line(prefix: str, client: object, method: object, path: object, version: object, status: Any) -> str:
    code = _STATUS.get(status) or _phrase(int(status))
    return redact(f'{prefix}{client} - "{method} {path} HTTP/{version}" {code}\n')


class AccessLog(logging.Handler):
    """Writes uvicorn's access records to `stream` (stdout by default), redacted, flushed once per loop turn."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stdout
        self._flush_on: asyncio.AbstractEventLoop | None = None  # the loop a flush is scheduled on
        # a person is reading a terminal: the line as uvicorn colours it (the cost matters less there)
        isatty = getattr(self.stream, "isatty", None)
        self.colours = AccessFormatter(UVICORN_FORMAT, use_colors=True) if isatty and isatty() else None

    def line(self, record: logging.LogRecord) -> str:
        """The line written for `record`: uvicorn's access line, or any other record's message."""
        args = record.args
        prefix = PREFIX if record.levelno == logging.INFO else f"{record.levelname}:".ljust(len(PREFIX))
        if self.colours is not None:
            return redact(self.colours.format(record) + "\n")
        if isinstance(args, tuple) and len(args) == 5:
            return _line(prefix, *args)
        return redact(prefix + record.getMessage() + "\n")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.line(record))
        except Exception:  # noqa: BLE001 - logging's own policy: report the failure, never raise it
            self.handleError(record)
            return
        self._flush_soon()

    def write(self, msg: str, args: tuple[Any, ...]) -> None:
        """Write uvicorn's access line for `args` (as `AccessLogger` hands them over, no record made)."""
        try:
            with self.lock:  # type: ignore[union-attr]  # made by Handler.__init__
                self.stream.write(_line(PREFIX, *args))
        except Exception:  # noqa: BLE001 - as emit: reported, never raised into the response being sent
            self.handleError(logging.makeLogRecord({"name": "uvicorn.access", "msg": msg, "args": args}))
            return
        self._flush_soon()

    def _flush_soon(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in the server's loop (start-up, another thread): at once
            self.flush()
            return
        if self._flush_on is not loop:  # (a loop that closed before its turn ended is not waited for)
            self._flush_on = loop
            loop.call_soon(self._flush_scheduled)

    def _flush_scheduled(self) -> None:
        self._flush_on = None
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - as StreamHandler's flush in emit: reported, not raised into the loop
            self.handleError(logging.makeLogRecord({"name": "uvicorn.access", "msg": "(flushing the access log)"}))

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            flush = getattr(self.stream, "flush", None)
            if flush is not None:
                flush()


class AccessLogger:
    """`uvicorn.access` as uvicorn's HTTP protocol uses it (`info`), straight to a lone `AccessLog`."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def _direct(self) -> AccessLog | None:
        """The handler a line may go straight to: the only one the logger's INFO records reach, and
        nothing in the logger's way that a record would meet (filters, a level, propagation)."""
        logger = self.logger
        if logger.disabled or logger.filters or logger.propagate or len(logger.handlers) != 1:
            return None
        handler = logger.handlers[0]
        if type(handler) is not AccessLog or handler.filters or handler.colours is not None:
            return None
        if handler.level > logging.INFO or not logger.isEnabledFor(logging.INFO):
            return None
        return handler

    def info(self, msg: str, *args: Any) -> None:
        handler = self._direct() if len(args) == 5 else None
        if handler is None:
            self.logger.info(msg, *args)
        else:
            handler.write(msg, args)
