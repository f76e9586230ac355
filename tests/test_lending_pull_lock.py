"""A job that waits for a PR's lock does not hold the worker slot the lock's holder needs
back: with one worker, the holder lent its slot while it waited for its write slot, and a
job of another serial key (a command on the same PR) took it to wait for the lock."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any, cast

import pytest

from perfbot.app import pulllock
from perfbot.app.context import JobContext
from perfbot.app.pulllock import pull_lock
from perfbot.app.worker import _LendableSlot
from perfbot.support.lending import lending, lent
from tests.deadline import within


class Locks:
    """The store's ``try_lock`` and ``unlock``, in memory."""

    def __init__(self) -> None:
        self.holders: dict[str, str] = {}

    async def try_lock(self, key: str, owner: str, ttl_seconds: float, now: float) -> bool:
        return self.holders.setdefault(key, owner) == owner

    async def unlock(self, key: str, owner: str) -> None:
        if self.holders.get(key) == owner:
            del self.holders[key]


class Ctx:
    def __init__(self, store: Locks, name: str) -> None:
        self.store, self.now, self.worker, self.delivery_id = store, time.time, name, name
        self.log = logging.getLogger("test")

    def forget_suspension(self) -> None:
        pass  # no suspension is checked here


async def test_a_job_waiting_for_a_prs_lock_lends_its_slot_to_the_locks_holder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pulllock, "LOCK_WAIT_SECONDS", 1.0)  # then PullLocked: a retry
    slots = asyncio.Semaphore(1)
    store = Locks()
    holding, done = asyncio.Event(), []

    async def job(name: str, wait: float) -> None:
        await slots.acquire()  # the dispatcher's claim
        slot = _LendableSlot(slots)
        lending(slot.lent)
        try:
            async with pull_lock(cast("JobContext", Ctx(store, name)), 1, 7):
                holding.set()
                async with lent(wait):  # the pacer's wait for the next write slot
                    await asyncio.sleep(wait)
            done.append(name)
        finally:
            slot.give_back()

    def run(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.create_task(coro)

    holder = run(job("run", 0.2))
    await holding.wait()
    command = run(job("command", 0.0))
    await within(asyncio.gather(holder, command), 10)
    assert done == ["run", "command"]  # the command waited for the lock, and got it
