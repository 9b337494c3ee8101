"""Actor profiles: what an actor says about itself."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The avatar_url forms `services.profiles` accepts, for the OpenAPI document: blank (clears it), an http(s) URL
# with a host and no control characters, or a base64 data: URL of an image type it knows (around either, spaces)
AVATAR_URL = (
    r"^\s*(|[Hh][Tt][Tt][Pp][Ss]?://[^/?#\x00-\x1f\x7f][^\x00-\x1f\x7f]*"
    r"|data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+)\s*$"
)

# the accent_color forms `services.profiles` accepts: blank (clears it) or #rrggbb in either case
ACCENT_COLOR = r"^\s*(|#[0-9A-Fa-f]{6})\s*$"


class ProfileInput(BaseModel):
    """An actor's profile as it sets it (`PUT`): the whole record, an omitted or blank field cleared."""

    model_config = ConfigDict(extra="forbid")
    display_name: str | None = Field(None, max_length=80, description="The name people see, e.g. 'Ada Lovelace'.")
    avatar_url: str | None = Field(
        None,
        max_length=70_000,
        description="An http(s) image URL, or a base64 data: PNG, JPEG, GIF or WebP of at most 48 KiB.",
        json_schema_extra={"pattern": AVATAR_URL},  # documented only: `services.profiles` checks it
    )
    description: str | None = Field(None, max_length=500, description="A line or two about the actor.")
    accent_color: str | None = Field(
        None,
        max_length=100,
        description="The brand colour a business shows its customers, written #rrggbb (e.g. '#1a7f5a').",
        json_schema_extra={"pattern": ACCENT_COLOR},  # documented only: `services.profiles` checks it
    )


Kind = Literal["domain", "near", "customer", "local"]


class Verification(BaseModel):
    """What proves who an actor is: a domain's published key, a NEAR account's key, the shop that vouches for
    its customer, or (local) nothing but the admin of this server."""

    kind: Kind
    identifier: str = Field(
        description="The verified identifier: a host name, a NEAR account, a customer id, or the local id."
    )
    verified_at: int | None = Field(
        description="The sign-in that proved it; for a customer, the last session its shop asked for (null for local "
        "actors)."
    )
    key_id: str | None = Field(description="The key it proved it with: a JWK kid or a NEAR public key.")
    vouched_by: str | None = Field(
        None, description="Customers only: the shop that signed the customer in (`<customer>@<shop>`)."
    )


class Profile(BaseModel):
    """What an actor says about itself (every field null until it sets one, `updated_at` 0), and what the
    server knows of it: whether it is verified, and how."""

    object: Literal["actor.profile"] = "actor.profile"
    actor: str
    display_name: str | None
    avatar_url: str | None
    description: str | None
    accent_color: str | None = Field(description="The brand colour, #rrggbb, or null.")
    updated_at: int
    verified: bool = Field(description="True for domain and NEAR actors that proved who they are.")
    verification: Verification


class ProfileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Profile]
