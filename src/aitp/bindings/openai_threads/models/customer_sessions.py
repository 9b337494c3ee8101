"""Customer sessions: a shop's short-lived keys for the customers it signed in on its own website."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CreateCustomerSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer: str = Field(
        min_length=1,
        max_length=64,
        description="The shop's own id for its customer: 1 to 64 letters, digits, '.', '_' or '-', starting with a "
        "letter or digit (e.g. '4821'). The customer's actor id is `<customer>@<shop>`.",
        json_schema_extra={"pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},  # documented: the service checks it
    )
    shop: str | None = Field(
        None, min_length=1, max_length=254, description="Admin keys only: the shop whose customer it is."
    )
    display_name: str | None = Field(
        None, max_length=80, description="The customer's name, as the shop knows it: set as its profile name."
    )
    expires_in: int | None = Field(
        None, strict=True, ge=60, le=86_400, description="Seconds the session's key is valid (default 3600)."
    )
    upgrade_from: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The key of the shop's anonymous visitor who has just signed in: its threads move to the "
        "customer, and the key ends.",
    )


class CustomerSession(BaseModel):
    """A key of the shop's customer (shown once), refused from `expires_at` on: the shop's page asks again."""

    object: Literal["customer_session"] = "customer_session"
    actor: str = Field(description="The customer's actor id, `<customer>@<shop>`.")
    shop: str
    key: str
    expires_at: int = Field(description="Unix seconds from which the key is refused (401 `expired_api_key`).")


class CreateAnonymousSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shop: str = Field(min_length=1, max_length=254, description="The shop the visitor is on (it must allow it).")


class CustomerSessionSettingsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    anonymous: bool | None = Field(
        None,
        strict=True,
        description="Whether visitors not signed in get sessions as the shop's customers (left out: unchanged).",
    )
    embed_origins: list[str] | None = Field(
        None,
        max_length=20,
        description="The sites that may frame the shop's chat, e.g. ['https://sunnysocks.example'] (left out: "
        "unchanged; empty: a domain shop's own host over https, no site for other shops).",
    )
    shop: str | None = Field(None, min_length=1, max_length=254, description="Admin keys only: whose settings.")


class CustomerSessionSettings(BaseModel):
    """A shop's customer session settings."""

    object: Literal["customer_session.settings"] = "customer_session.settings"
    shop: str
    anonymous: bool = Field(description="Whether visitors not signed in get sessions as the shop's customers.")
    embed_origins: list[str] = Field(description="The sites that may frame the shop's chat, as listed.")
    frame_ancestors: list[str] = Field(
        description="The sites that may frame it now: those listed, else a domain shop's own host over https."
    )
