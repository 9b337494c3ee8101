"""What actors are doing in threads right now (an agent working on an answer), as stored for the moment it
matters, and the small store that keeps it (one implementation per backend).

An activity is not part of a thread: it is in no event log, no message, no inbox page. It is written here only
so that every instance sharing the store hears it: each instance's hub reads what was posted after its own
position (`since`), a few times a second while anyone there listens, and tells its live streams. Records are
kept for `KEEP_SECONDS`, then dropped: a position is never reused, so a reader never mistakes a new record
for one it read.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Literal

ActivityState = Literal["working", "idle"]
KEEP_SECONDS = 120.0  # how long a record stays readable after it was posted (far beyond its life)


@dataclass(frozen=True)
class ActivityRecord:
    """`actor` says it is `working` in `thread_id` until `expires_at` (unless it says more), or is `idle`.

    `audience`: the thread's members when it was posted (whose inbox streams hear it); `origin`: the
    instance that posted it, whose own streams were told at once; `position`: its place in the store's
    short log of activity, set by the store."""

    thread_id: str
    actor: str
    state: ActivityState
    expires_at: float  # Unix seconds: a working state's end; an idle one's time
    audience: tuple[str, ...]
    origin: str
    posted_at: float
    position: int = 0


class ActivityStore(abc.ABC):
    @abc.abstractmethod
    async def post(self, record: ActivityRecord) -> int:
        """Keep `record` (for `KEEP_SECONDS`); its position, above every position given before."""

    @abc.abstractmethod
    async def since(self, after: int, limit: int) -> list[ActivityRecord]:
        """At most `limit` records with a position above `after`, in position order (positions set)."""

    @abc.abstractmethod
    async def head(self) -> int:
        """A position now: every record posted from now on is above it."""
