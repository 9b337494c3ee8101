"""Shapes shared by every resource: errors, list pages, deletion receipts."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None
    unsupported_by: list[str] | None = Field(
        default=None,
        description="`capability_not_supported` only: the thread's actors that cannot read the capability message.",
    )


class ErrorResponse(BaseModel):
    """The OpenAI error envelope; `param` names the offending field."""

    error: ErrorBody


class ListPage(BaseModel, Generic[T]):
    """A cursor page: pass `last_id` as `after` (or `first_id` as `before`) for the next one."""

    object: Literal["list"] = "list"
    data: list[T]
    first_id: str | None
    last_id: str | None
    has_more: bool


class DeletedObject(BaseModel):
    model_config = ConfigDict(title="DeletedObject")

    id: str
    object: str
    deleted: Literal[True] = True
