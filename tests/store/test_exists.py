"""`Store.exists()`: whether a store was created before, asked before opening it (the CLI refuses to
create a new, empty store by accident). Runs against every backend."""

from __future__ import annotations

from aitp.store import open_store
from tests.conftest import Backend


async def test_a_store_exists_once_it_has_been_opened(backend: Backend) -> None:
    fresh = open_store(backend.url)
    assert await fresh.exists() is False
    await fresh.open()
    try:
        assert await fresh.exists() is True
    finally:
        await fresh.close()
    assert await open_store(backend.url).exists() is True  # a new handle on the same store
