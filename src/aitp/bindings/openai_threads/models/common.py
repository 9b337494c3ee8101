"""Shapes shared by every resource: errors (the HTTP faces' envelope), list pages, deletion receipts."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from aitp.bindings.http.models import ErrorBody, ErrorResponse

__all__ = ["DeletedObject", "ErrorBody", "ErrorResponse", "ListPage"]

T = TypeVar("T")


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
