"""Actor profiles as stored: the record an actor sets about itself, and the small store that keeps them (one
implementation per backend)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class ProfileRecord:
    """What an actor says about itself to the people it meets: a name, a picture, a line of text and the colour
    of its brand.

    One per actor id, replaced whole by each write. Fields are plain and explicit (no free-form bag) so
    that other faces (a future A2A binding) read the same record the web UI shows."""

    actor: str
    display_name: str | None
    avatar_url: str | None  # an https URL or a small data:image URL, checked by the service
    description: str | None
    updated_at: int
    accent_color: str | None = None  # "#rrggbb": the brand colour a business shows its customers


class ProfileStore(abc.ABC):
    @abc.abstractmethod
    async def put(self, profile: ProfileRecord) -> None:
        """Create or replace the profile of `profile.actor`."""

    @abc.abstractmethod
    async def get(self, actor: str) -> ProfileRecord | None: ...

    @abc.abstractmethod
    async def many(self, actors: Sequence[str]) -> dict[str, ProfileRecord]:
        """The profiles of those of `actors` that have one (one read), by actor id."""
