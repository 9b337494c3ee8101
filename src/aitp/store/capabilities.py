"""Capability versions registered through the API: the record and the small store that keeps them (one
implementation per backend). Shipped capabilities live in files, not here."""

from __future__ import annotations

import abc
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any


@dataclass
class CapabilityVersionRecord:
    """A registered capability version. (id, version) is unique and immutable: the first registration wins."""

    id: str
    version: str  # X.Y.Z
    schema: dict[str, Any]  # as submitted (JSON Schema or OpenAPI document)
    examples: list[dict[str, Any]]
    aliases: list[str]  # extra $schema URLs that mean this version
    title: str | None
    description: str | None
    openapi_root: str | None
    created_at: int
    created_by: str

    def document(self) -> str:
        """The stored JSON text of the version (both backends keep it as one string)."""
        fields = ("id", "version", "schema", "examples", "aliases", "title", "description", "openapi_root")
        return json.dumps({name: getattr(self, name) for name in fields}, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_document(cls, document: str, created_at: int, created_by: str) -> CapabilityVersionRecord:
        return cls(**json.loads(document), created_at=created_at, created_by=created_by)


class CapabilityStore(abc.ABC):
    async def register(self, record: CapabilityVersionRecord) -> CapabilityVersionRecord:
        """Store `record` unless (id, version) exists; returns the stored one (compare to see who won)."""
        await self._add(record)
        stored = await self._get(record.id, record.version)
        assert stored is not None, "a registered version is never deleted"
        return stored

    async def all(self, skip: Collection[tuple[str, str]] = ()) -> list[CapabilityVersionRecord]:
        """Every registered version but the (id, version) pairs in `skip`, oldest registration first. Only the
        new ones' documents are read: an instance following the store reads ids alone while nothing is new."""
        wanted = [key for key in await self._keys() if key not in skip]
        return await self._documents(wanted) if wanted else []

    @abc.abstractmethod
    async def _keys(self) -> list[tuple[str, str]]:
        """(id, version) of every registered version, oldest registration first."""

    @abc.abstractmethod
    async def _documents(self, keys: list[tuple[str, str]]) -> list[CapabilityVersionRecord]:
        """The versions named, in the order of `keys`."""

    @abc.abstractmethod
    async def _add(self, record: CapabilityVersionRecord) -> None:
        """Insert `record`, doing nothing if its (id, version) is registered already."""

    @abc.abstractmethod
    async def _get(self, capability_id: str, version: str) -> CapabilityVersionRecord | None: ...
