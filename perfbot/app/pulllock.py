"""A pull request's lock: one job at a time reads and writes a PR's comment and state (and
the same for a branch's watch issues, ``branch_lock``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from perfbot.app.context import JobContext
from perfbot.errors import PerfbotError
from perfbot.support.keepalive import Lost, kept
from perfbot.support.lending import lent

# A PR's lock is refreshed while held, so it can be short: when its process dies, the
# PR waits at most this long for the next job.
LOCK_TTL_SECONDS = 15.0
LOCK_REFRESH_SECONDS = LOCK_TTL_SECONDS / 5
LOCK_WAIT_SECONDS = 20.0


class PullLocked(PerfbotError):
    """Another job holds the pull request's lock for too long, or this one lost it: the job
    is run again later (lock contention, not a GitHub outage)."""

    retryable = True


def pull_lock(ctx: JobContext, repo_id: int, number: int) -> AbstractAsyncContextManager[None]:
    """Serialise everything that reads and writes one PR's comment and state."""
    return _held(ctx, f"pull:{repo_id}:{number}", f"pull request {number}")


def branch_lock(ctx: JobContext, repo_id: int, branch: str) -> AbstractAsyncContextManager[None]:
    """Serialise everything that reads and writes a branch's watch issues and changes (the
    watch after a push run, and a person's ``/perfbot accept``)."""
    return _held(ctx, f"branch:{repo_id}:{branch}", f"the watch of {branch}")


@asynccontextmanager
async def _held(ctx: JobContext, key: str, what: str) -> AsyncIterator[None]:
    """Hold ``key`` while the block runs, refreshed. Should it be lost (refreshes failing
    for most of its lifetime, or another job holding it), the block is cancelled and
    ``PullLocked`` is raised: the job goes back to the queue rather than write beside
    another one."""
    store, now = ctx.store, ctx.now
    # ``worker`` names this claim of the job, so a stale run never shares the lock.
    owner = f"{ctx.worker}:{ctx.delivery_id}"
    if not await store.try_lock(key, owner, LOCK_TTL_SECONDS, now()):
        # Only waiting: the job's worker slot serves another job meanwhile. The holder may
        # have lent its own while it waits for a write slot, and need one back to go on.
        async with lent(LOCK_WAIT_SECONDS):
            waited = 0.0
            while not await store.try_lock(key, owner, LOCK_TTL_SECONDS, now()):
                if waited >= LOCK_WAIT_SECONDS:
                    raise PullLocked(f"{what} is being updated by another job")
                await asyncio.sleep(0.05)
                waited += 0.05
        ctx.forget_suspension()  # the wait may have been long: the next gate reads afresh
    lock = kept(
        lambda: store.try_lock(key, owner, LOCK_TTL_SECONDS, now()),
        every=LOCK_REFRESH_SECONDS,
        grace=LOCK_TTL_SECONDS - 2 * LOCK_REFRESH_SECONDS,
        clock=now,
        what=f"the lock of {key}",
        log=ctx.log,
    )
    try:
        async with lock:
            yield
    except Lost:
        raise PullLocked(f"lost the lock of {what} while updating it") from None
    finally:
        await store.unlock(key, owner)
