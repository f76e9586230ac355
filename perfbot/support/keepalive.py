"""Hold something that expires (a job's lease, a PR's lock) while a block of work runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from perfbot.errors import PerfbotError


class Lost(PerfbotError):
    """What was held expired or was taken while the block ran; the block was stopped."""


@dataclass(slots=True)
class _Keeping:
    """A block's keeper: whether the block ended, whether what it held was lost, and the
    task that refreshes it (None until the first refresh is due)."""

    ended: bool = False
    lost: bool = False
    keeper: asyncio.Task[None] | None = None


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
    loop = asyncio.get_running_loop()
    keeping = _Keeping()
    # When the block started, on the job's clock and on the loop's: the first refresh's
    # grace counts from then.
    began, began_on_loop = clock(), loop.time()

    async def keep() -> None:
        refreshed = began
        # The same moment on the loop's clock: it bounds a refresh that hangs (a database
        # failing over, a lock wait), which must not outlast the grace. Past it another
        # holder may have taken ``what`` while this block still ran.
        good_at = began_on_loop
        while True:
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
            if keeping.ended:
                return
            if not held:
                log.warning("%s was lost while held: stopping", what)
                keeping.lost = True
                if holder is not None:
                    holder.cancel()
                return
            await asyncio.sleep(every)

    def start_keeping() -> None:
        keeping.keeper = loop.create_task(keep())

    # A timer, not a task, until the first refresh is due: most blocks (a PR's update)
    # end before it, and a task started and cancelled for each cost more than its work.
    first = loop.call_later(every, start_keeping)
    try:
        yield
    except asyncio.CancelledError:
        if not keeping.lost or holder is None:
            raise
        holder.uncancel()  # our own cancellation, turned into Lost
        raise Lost(f"{what} was lost while held") from None
    finally:
        # Set before the keeper is cancelled: it stops then even if a refresh it awaited
        # swallowed the cancellation (library code may).
        keeping.ended = True
        first.cancel()
        keeper = keeping.keeper
        if keeper is not None:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
