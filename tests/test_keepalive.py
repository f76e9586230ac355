"""``kept``: the keeper ends with its block, even when a refresh ends at that moment."""

from __future__ import annotations

import asyncio
import logging
import time

from perfbot.support.keepalive import kept
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
