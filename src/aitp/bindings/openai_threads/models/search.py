"""Search of the caller's threads: each thread found with the message that matched (AITP)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from aitp.bindings.openai_threads.models.threads import Thread


class MessageMatch(BaseModel):
    """The newest message of the thread that has every word searched for."""

    id: str = Field(description="The message's id (`GET /v1/threads/{thread_id}/messages/{id}`).")
    created_at: int
    actor: str = Field(description="Who wrote it.")
    snippet: str = Field(
        description="A short plain-text excerpt around the first word found (Markdown and tags left out; '…' "
        "where it was cut)."
    )


class ThreadSearchResult(BaseModel):
    object: Literal["thread.search_result"] = "thread.search_result"
    thread: Thread
    message: MessageMatch


class ThreadSearchResults(BaseModel):
    """Threads found, newest match first; `has_more`: more threads matched than `limit`."""

    object: Literal["list"] = "list"
    data: list[ThreadSearchResult]
    has_more: bool
