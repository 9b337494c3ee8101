"""aitp.tasks.cancel: how the service ends what it started."""

from __future__ import annotations

import asyncio
import logging

import pytest

from aitp.tasks import cancel


async def test_every_task_given_has_ended_when_cancel_returns() -> None:
    tasks = [asyncio.create_task(asyncio.sleep(60)) for _ in range(3)]
    await cancel([*tasks, None])
    assert all(task.cancelled() for task in tasks)


async def test_a_task_that_had_failed_is_logged_and_the_others_still_end(caplog: pytest.LogCaptureFixture) -> None:
    async def fail() -> None:
        raise ValueError("broken follower")

    failed = asyncio.create_task(fail(), name="follower")
    await asyncio.sleep(0)
    sleeping = asyncio.create_task(asyncio.sleep(60))
    with caplog.at_level(logging.ERROR, logger="aitp.tasks"):
        await cancel([failed, sleeping])
    assert sleeping.cancelled()
    assert "follower" in caplog.text and "broken follower" in caplog.text


async def test_the_callers_own_cancellation_is_not_swallowed_while_it_waits() -> None:
    async def stubborn() -> None:  # takes a while to end once cancelled (e.g. a commit under way)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)
            raise

    slow = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(cancel([slow]))
    await asyncio.sleep(0.05)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    await asyncio.wait([slow])


async def test_a_task_that_lost_its_cancellation_is_cancelled_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """As a heartbeat loop does when a library swallowed the CancelledError (Python 3.11's wait_for race)."""
    monkeypatch.setattr("aitp.tasks.RECANCEL_AFTER", 0.05)
    lost = 0

    async def heartbeat() -> None:
        nonlocal lost
        while True:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                if lost == 0:  # the first one is eaten, as inside the library's await
                    lost += 1
                    continue
                raise

    beating = asyncio.create_task(heartbeat(), name="heartbeat")
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="aitp.tasks"):
        await cancel([beating])
    assert beating.cancelled() and lost == 1
    assert "heartbeat went on after being cancelled" in caplog.text
