"""Settings, read once from `AITP_*` environment variables (CLI flags override them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DEFAULT_STORE = "sqlite:///" + str(Path("aitp-data") / "aitp.db")


@dataclass(frozen=True)
class Settings:
    store_url: str = DEFAULT_STORE
    admin_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            store_url=env.get("AITP_STORE") or DEFAULT_STORE,
            admin_key=env.get("AITP_ADMIN_KEY") or None,
            host=env.get("AITP_HOST") or cls.host,
            port=int(env.get("AITP_PORT") or cls.port),
        )

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced, ignoring those left as None."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
