"""Reading a thread's event log (the live push streams the same log)."""

from __future__ import annotations

from aitp.principals import Principal
from aitp.runtime import Runtime
from aitp.services.access import readable_thread
from aitp.services.paging import LogPage, log_page


async def list_events(rt: Runtime, principal: Principal, thread_id: str, *, after: int, limit: int) -> LogPage:
    await readable_thread(rt, principal, thread_id)
    return log_page(await rt.store.list_events(thread_id, after=after, limit=limit + 1), limit)
