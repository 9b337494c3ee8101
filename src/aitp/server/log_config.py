"""uvicorn's logging configuration as `aitp serve` runs it: no secret in any line (`aitp.redaction`)."""

from __future__ import annotations

from typing import Any

from uvicorn.config import LOGGING_CONFIG

from aitp.redaction import RedactSecrets


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration, with `RedactSecrets` on each of its handlers but the access log's,
    which is `aitp.server.access_log.AccessLog` (the same line, redacted by the handler itself, for less CPU)."""
    config: dict[str, Any] = {**LOGGING_CONFIG, "filters": {"redact_secrets": {"()": RedactSecrets}}}
    config["handlers"] = {
        name: {**handler, "filters": ["redact_secrets"]} for name, handler in LOGGING_CONFIG["handlers"].items()
    }
    config["handlers"]["access"] = {"class": "aitp.server.access_log.AccessLog", "stream": "ext://sys.stdout"}
    return config
