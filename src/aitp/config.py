"""Settings, read once from `AITP_*` environment variables (CLI flags override them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

DEFAULT_STORE = "sqlite:///" + str(Path("aitp-data") / "aitp.db")


@dataclass(frozen=True)
class Settings:
    store_url: str = DEFAULT_STORE
    admin_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    capabilities_dir: str | None = None  # None: the repository's capabilities/ directory
    web_dir: str | None = None  # None: the repository's web/ directory (the chat UI)
    unknown_capabilities: Literal["reject", "accept"] = "reject"
    stream_buffer: int = 1024  # events buffered per live subscriber before it is closed as too slow
    keepalive_seconds: float = 15.0  # SSE comment / WebSocket ping interval
    poll_interval: float = 0.1  # seconds between reads of the shared event log while idle (other instances)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            store_url=env.get("AITP_STORE") or DEFAULT_STORE,
            admin_key=env.get("AITP_ADMIN_KEY") or None,
            host=env.get("AITP_HOST") or cls.host,
            port=int(env.get("AITP_PORT") or cls.port),
            capabilities_dir=env.get("AITP_CAPABILITIES_DIR") or None,
            web_dir=env.get("AITP_WEB_DIR") or None,
            unknown_capabilities=_unknown_policy(env.get("AITP_UNKNOWN_CAPABILITIES") or "reject"),
            stream_buffer=int(env.get("AITP_STREAM_BUFFER") or cls.stream_buffer),
            keepalive_seconds=float(env.get("AITP_KEEPALIVE_SECONDS") or cls.keepalive_seconds),
            poll_interval=float(env.get("AITP_POLL_INTERVAL") or cls.poll_interval),
        )

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced, ignoring those left as None."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _unknown_policy(value: str) -> Literal["reject", "accept"]:
    if value not in ("reject", "accept"):
        raise ValueError(f"AITP_UNKNOWN_CAPABILITIES must be 'reject' or 'accept', not {value!r}")
    return "accept" if value == "accept" else "reject"
