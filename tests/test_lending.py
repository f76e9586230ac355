"""A job that only waits lends its worker slot (``perfbot.support.lending``, the worker's
``_LendableSlot``): the slot is free inside the wait, taken back after it, and never
given twice, however many of the job's tasks wait at once. The service end to end:
tests/test_pacing.py (one worker, two installations' jobs overlapping)."""

from __future__ import annotations

import asyncio

from perfbot.app.worker import _LendableSlot
from perfbot.support.lending import LEND_AFTER_SECONDS, lending, lent


async def test_a_wait_frees_the_slot_and_takes_it_back_after() -> None:
    slots = asyncio.Semaphore(1)
    await slots.acquire()
    slot = _LendableSlot(slots)
    lending(slot.lent)
    async with lent(1.0):
        assert not slots.locked()  # another job may take it now
        await slots.acquire()  # and does
        slots.release()  # and is done
    assert slots.locked()  # taken back
    slot.give_back()
    assert not slots.locked()
    await slots.acquire()
    assert slots.locked()  # given back once: one slot, not two


async def test_a_short_wait_keeps_the_slot() -> None:
    slots = asyncio.Semaphore(1)
    await slots.acquire()
    lending(_LendableSlot(slots).lent)
    async with lent(LEND_AFTER_SECONDS / 2):
        assert slots.locked()


async def test_without_a_worker_a_wait_lends_nothing() -> None:
    # perfbot comment's pacer: no lender in the context.
    async with lent(5.0):
        pass


async def test_the_jobs_tasks_waiting_at_once_lend_it_once_and_take_it_back_once() -> None:
    slots = asyncio.Semaphore(1)
    await slots.acquire()
    slot = _LendableSlot(slots)
    lending(slot.lent)
    inside = asyncio.Event()
    leave = asyncio.Event()

    async def wait(first: bool) -> None:
        async with lent(1.0):
            if first:
                inside.set()
            await leave.wait()

    # Child tasks inherit the lender, as the job's own tasks do.
    first = asyncio.create_task(wait(True))
    await inside.wait()
    second = asyncio.create_task(wait(False))
    await asyncio.sleep(0)
    await slots.acquire()  # the one lent slot, taken by another job
    assert slots.locked()  # and not a second one
    leave.set()
    await asyncio.sleep(0)
    slots.release()  # the other job ends
    await asyncio.gather(first, second)
    assert slots.locked()  # taken back by the job
    slot.give_back()
    await slots.acquire()
    assert slots.locked()  # exactly one slot in all


async def test_a_job_cancelled_while_it_waits_for_its_slot_gives_nothing_back() -> None:
    slots = asyncio.Semaphore(1)
    await slots.acquire()
    slot = _LendableSlot(slots)
    lending(slot.lent)
    lent_now, leave = asyncio.Event(), asyncio.Event()

    async def wait() -> None:
        async with lent(1.0):
            lent_now.set()
            await leave.wait()

    task = asyncio.create_task(wait())
    await lent_now.wait()
    await slots.acquire()  # another job holds the slot: the waiter cannot take it back
    leave.set()
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    slot.give_back()  # nothing held: nothing given
    assert slots.locked()
    slots.release()
    assert not slots.locked()
