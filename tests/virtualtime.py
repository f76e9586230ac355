"""A clock that runs with real time and can be moved ahead at once, shared by perfbot (its
worker, its pacer) and the fake GitHub (the times it records), so a test of GitHub's pace
sees minutes of spacing in seconds.

``now()`` is real time plus a jump that only grows; ``sleep()`` returns once ``now()`` has
passed its deadline, whether real time got there or a jump did. The test moves the clock
(``jump_to``) only when everything that could happen before has happened: every running
job is asleep on this clock (``Quiet``), so a jump never skips over work in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


@dataclass
class _Sleeper:
    deadline: float
    loop: asyncio.AbstractEventLoop
    woken: asyncio.Event


@dataclass
class VirtualClock:
    jumped: float = 0.0
    _sleepers: list[_Sleeper] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return time.time() + self.jumped

    def datetime(self) -> datetime:
        """``now()`` as the fake GitHub's clock reads it."""
        return datetime.fromtimestamp(self.now(), UTC)

    async def sleep(self, seconds: float) -> None:
        deadline = self.now() + seconds
        sleeper = _Sleeper(deadline, asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._sleepers.append(sleeper)
        try:
            while (left := deadline - self.now()) > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await sleeper.woken.wait()
                sleeper.woken.clear()
        finally:
            with self._lock:
                self._sleepers.remove(sleeper)

    @property
    def asleep(self) -> int:
        with self._lock:
            return len(self._sleepers)

    def next_deadline(self) -> float | None:
        with self._lock:
            return min((s.deadline for s in self._sleepers), default=None)

    def jump_to(self, moment: float) -> None:
        """Move ``now()`` to ``moment`` at least, and wake the sleepers it reaches."""
        with self._lock:
            self.jumped += max(0.0, moment - self.now())
            for sleeper in self._sleepers:
                sleeper.loop.call_soon_threadsafe(sleeper.woken.set)


@dataclass(frozen=True)
class Quiet:
    """Whether a service on ``database`` has nothing to do before ``clock`` moves on: every
    running job asleep on the clock, and no queued job due."""

    clock: VirtualClock
    database: Path

    def jobs(self) -> tuple[int, float | None]:
        """(jobs running, the earliest due time of a queued one)."""
        with closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as conn:
            (running,) = conn.execute(
                "SELECT COUNT(*) FROM jobs WHERE status = 'running'"
            ).fetchone()
            (due,) = conn.execute("SELECT MIN(due_at) FROM jobs WHERE status = 'queued'").fetchone()
        return int(running), None if due is None else float(due)

    def __call__(self) -> bool:
        running, due = self.jobs()
        asleep = self.clock.asleep
        return running == asleep and (due is None or due > self.clock.now())

    def idle(self) -> bool:
        """No job running nor queued: the service has nothing left to do."""
        with closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as conn:
            (left,) = conn.execute(
                "SELECT COUNT(*) FROM jobs WHERE status IN ('running', 'queued')"
            ).fetchone()
        return int(left) == 0

    def next_moment(self) -> float | None:
        """The earliest moment something is waiting for: a sleeper's or a queued job's."""
        _, due = self.jobs()
        moments = [m for m in (self.clock.next_deadline(), due) if m is not None]
        return min(moments, default=None)
