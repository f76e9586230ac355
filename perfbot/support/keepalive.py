"""Hold something that expires (a job's lease, a PR's lock) while a block of work runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from perfbot.errors import PerfbotError


class Lost(PerfbotError):
    """What was held expired or was taken while the block ran; the block was stopped."""


@asynccontextmanager
async def kept(
    refresh: Callable[[], Awaitable[bool]],
    *,
    every: float,
    grace: float,
    clock: Callable[[], float],
    what: str,
    log: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> AsyncIterator[None]:
    """Run the block while ``refresh()`` keeps ``what`` held, every ``every`` seconds.

    ``refresh`` answers False once ``what`` is no longer this holder's. A refresh that
    fails (a database hiccup) is tried again while the last good one is under ``grace``
    seconds old. Once ``what`` is lost the block is cancelled, and ``Lost`` is raised in
    place of that cancellation: the caller stops rather than work beside a new holder.
    """
    holder = asyncio.current_task()
    lost = asyncio.Event()
    # Set when the block ends: the keeper stops then even if a refresh it awaited swallowed
    # the keeper's cancellation (library code may).
    ended = asyncio.Event()

    loop = asyncio.get_running_loop()

    async def keep() -> None:
        refreshed = clock()
        # The same moment on the loop's clock: it bounds a refresh that hangs (a database
        # failing over, a lock wait), which must not outlast the grace. Past it another
        # holder may have taken ``what`` while this block still ran.
        good_at = loop.time()
        while True:
            await asyncio.sleep(every)
            try:
                async with asyncio.timeout(max(good_at + grace - loop.time(), 0.0)):
                    held = await refresh()
            except TimeoutError:
                held = False
                log.warning("refreshing %s took longer than its grace", what)
            except Exception as exc:
                held = clock() - refreshed < grace
                log.warning("refreshing %s failed (%s)", what, type(exc).__name__)
            else:
                if held:
                    refreshed, good_at = clock(), loop.time()
            if ended.is_set():
                return
            if not held:
                log.warning("%s was lost while held: stopping", what)
                lost.set()
                if holder is not None:
                    holder.cancel()
                return

    keeper = asyncio.create_task(keep())
    try:
        yield
    except asyncio.CancelledError:
        if not lost.is_set() or holder is None:
            raise
        holder.uncancel()  # our own cancellation, turned into Lost
        raise Lost(f"{what} was lost while held") from None
    finally:
        ended.set()
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
