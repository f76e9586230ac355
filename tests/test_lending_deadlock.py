"""A job that lends its worker slot must not hold what the jobs given its slot wait for:
else they hold every slot, waiting for it, and it waits for a slot (a deadlock, with the
leases still renewed, so no other process takes the jobs over)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from perfbot.app.worker import _LendableSlot
from perfbot.github.pacing import MemoryBook, Pacer
from perfbot.support.lending import lending


class SteppedClock:
    """Virtual time that moves only when every task is asleep on it."""

    def __init__(self) -> None:
        self.at = 1000.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.at

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.at + seconds, future))
        await future

    async def run(self, tasks: list[asyncio.Task[None]], until: Callable[[], bool]) -> bool:
        """Move time on while anything sleeps; whether ``until`` came true."""
        for _ in range(200):
            for _ in range(50):
                await asyncio.sleep(0)
            if until():
                return True
            if not self._sleepers:
                return False  # nothing asleep, nothing done: stuck
            deadline = min(d for d, _ in self._sleepers)
            self.at = max(self.at, deadline)
            due = [s for s in self._sleepers if s[0] <= self.at]
            self._sleepers = [s for s in self._sleepers if s[0] > self.at]
            for _, future in due:
                future.set_result(None)
        return False


async def test_jobs_of_one_installation_behind_a_slow_write_do_not_deadlock_two_workers() -> None:
    # Two workers; one installation's four jobs (never more than three at once, as the
    # pacer's admission has it), each with one write; GitHub takes 2.5 s to answer the first.
    clock = SteppedClock()
    pacer = Pacer(MemoryBook(), clock=clock.now, sleep=clock.sleep)
    slots = asyncio.Semaphore(2)
    key = "installation:1"
    done: list[str] = []

    def job(name: str, answer_after: float) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            await slots.acquire()  # the dispatcher's claim
            slot = _LendableSlot(slots)
            lending(slot.lent)
            try:

                async def send() -> None:
                    if answer_after:
                        await clock.sleep(answer_after)

                await pacer.write(key, False, send)
                done.append(name)
            finally:
                slot.give_back()

        return run

    first = asyncio.create_task(job("first", 2.5)())
    others = [asyncio.create_task(job(name, 0.0)()) for name in ("a", "b")]
    tasks = [first, *others]
    # The fourth starts once the first has ended (its installation's third at once).
    assert await clock.run(tasks, first.done)
    tasks.append(asyncio.create_task(job("c", 0.0)()))
    finished = await clock.run(tasks, lambda: all(t.done() for t in tasks))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert finished, f"deadlocked: only {done} wrote"
    assert sorted(done) == ["a", "b", "c", "first"]
