"""``kept``: the keeper ends with its block, even when a refresh ends at that moment."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from perfbot.support.keepalive import Lost, kept
from tests.deadline import within


async def test_a_block_ending_as_a_refresh_returns_stops_its_keeper() -> None:
    loop = asyncio.get_running_loop()
    in_refresh = asyncio.Event()
    answer: asyncio.Future[bool] = loop.create_future()
    refreshes = 0

    async def refresh() -> bool:
        nonlocal refreshes
        refreshes += 1
        if refreshes > 1:
            return True  # a keeper left running refreshes on and on
        in_refresh.set()
        return await answer

    async def holder() -> None:
        keeper = kept(
            refresh,
            every=0.001,
            grace=60.0,
            clock=time.monotonic,
            what="the test's lease",
            log=logging.getLogger("test.keepalive"),
        )
        async with keeper:
            await in_refresh.wait()
            # The refresh returns and the block ends in the same turn of the loop: the
            # keeper's cancellation meets a refresh already done (asyncio.wait_for of
            # Python 3.11 then returns its result instead of raising).
            answer.set_result(True)

    await within(holder(), 5)
    assert refreshes == 1


def _kept(refresh: Callable[[], Awaitable[bool]], every: float, grace: float = 60.0) -> Any:
    return kept(
        refresh,
        every=every,
        grace=grace,
        clock=time.monotonic,
        what="the test's lease",
        log=logging.getLogger("test.keepalive"),
    )


async def test_a_block_shorter_than_the_refresh_period_refreshes_nothing() -> None:
    refreshes = 0

    async def refresh() -> bool:
        nonlocal refreshes
        refreshes += 1
        return True

    before = asyncio.all_tasks()
    async with _kept(refresh, every=0.1):
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.15)  # past the period: a keeper left behind would refresh now
    assert refreshes == 0
    assert asyncio.all_tasks() == before


async def test_a_long_block_is_refreshed_every_period_until_it_ends() -> None:
    refreshes: list[float] = []

    async def refresh() -> bool:
        refreshes.append(time.monotonic())
        return True

    async with _kept(refresh, every=0.02):
        while len(refreshes) < 3:
            await asyncio.sleep(0.005)
    done = len(refreshes)
    await asyncio.sleep(0.06)
    assert len(refreshes) == done  # none after the block
    assert all(b - a >= 0.015 for a, b in itertools.pairwise(refreshes))


async def test_what_was_lost_stops_the_block_with_lost() -> None:
    async def refresh() -> bool:
        return False

    reached_end = False

    async def block() -> None:
        nonlocal reached_end
        async with _kept(refresh, every=0.01):
            await asyncio.sleep(5)
            reached_end = True

    with pytest.raises(Lost, match="the test's lease was lost"):
        await block()
    assert not reached_end


async def test_a_failing_refresh_is_tried_again_within_its_grace_then_lost() -> None:
    calls = 0

    async def refresh() -> bool:
        nonlocal calls
        calls += 1
        raise OSError("the database hiccuped")

    async def block() -> None:
        async with _kept(refresh, every=0.01, grace=0.05):
            await within(asyncio.sleep(5), 2)

    with pytest.raises(Lost):
        await block()
    assert calls >= 2  # tried again while under its grace
