"""Actor profiles: what an actor says about itself."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ProfileInput(BaseModel):
    """An actor's profile as it sets it (`PUT`): the whole record, an omitted or blank field cleared."""

    model_config = ConfigDict(extra="forbid")
    display_name: str | None = Field(None, max_length=80, description="The name people see, e.g. 'Ada Lovelace'.")
    avatar_url: str | None = Field(
        None,
        max_length=70_000,
        description="An http(s) image URL, or a base64 data: PNG, JPEG, GIF or WebP of at most 48 KiB.",
    )
    description: str | None = Field(None, max_length=500, description="A line or two about the actor.")


class Profile(BaseModel):
    """What an actor says about itself; every field null until it sets one (`updated_at` 0)."""

    object: Literal["actor.profile"] = "actor.profile"
    actor: str
    display_name: str | None
    avatar_url: str | None
    description: str | None
    updated_at: int


class ProfileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Profile]
