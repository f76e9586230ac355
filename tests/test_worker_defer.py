"""A job waiting for its turn goes back to the queue without spending an attempt
(``Worker._defer`` → ``Store.defer``): the watch's ``Paced`` (its repository's minute), the
pacer's ``WaitForTurn`` (an installation's rate limit spent until its reset) and the
pacer's admission (an installation's writes booked far ahead). A rate limit met by a write
is a retry, and counts. Each job is claimed and run through ``Worker.run_job`` by hand,
on a clock of the test's own, more times than ``MAX_ATTEMPTS`` allows for failures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from perfbot.app import routes
from perfbot.app.watch_issues import Paced
from perfbot.app.worker import Worker
from perfbot.github.app import GitHubApp
from perfbot.github.errors import RateLimited, WaitForTurn
from perfbot.github.pacing import MemoryBook, Pacer, installation_key
from perfbot.store.base import Job, JobStatus
from perfbot.store.sqlite import SQLiteStore
from perfbot.support.metrics import Metrics
from perfbot.support.retry import MAX_ATTEMPTS
from tests.harness import INSTALLATION, World
from tests.test_jobs import previous

LEASE = 60.0
START = 1_000_000.0


class Bench:
    def __init__(self, store: SQLiteStore, github: GitHubApp) -> None:
        self.store = store
        self.github = github
        self.now = START
        self.metrics = Metrics()
        self.worker = Worker(
            store,
            github,
            concurrency=1,
            repo_disabled=lambda _: False,
            metrics=self.metrics,
            clock=lambda: self.now,
        )

    async def queue(self, delivery: str) -> None:
        job = previous("installation suspend")
        assert await self.store.record_delivery(delivery, "installation", "suspend", job, self.now)

    async def claim(self) -> Job | None:
        return await self.store.claim("test:1", LEASE, self.now)

    async def run_claimed(self) -> Job:
        job = await self.claim()
        assert job is not None
        await self.worker.run_job(job, job.lease_owner)
        return job

    def deferred(self) -> float:
        value = self.metrics.registry.get_sample_value(
            "perfbot_jobs_deferred_total", {"event": "installation"}
        )
        return value or 0.0


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    world = World.create()
    store = SQLiteStore(str(tmp_path / "db"))
    await store.setup()
    github = world.github_app()
    try:
        yield Bench(store, github)
    finally:
        await github.close()
        await store.close()


def raising(error: Exception) -> Callable[[Any], Callable[..., Any]]:
    def handler_of(_job: Any) -> Callable[..., Any]:
        async def handler(*_args: Any) -> str:
            raise error

        return handler

    return handler_of


@pytest.mark.parametrize(
    "error",
    [
        Paced("1 issue opened; the rest waits for the repository's minute", 60.0),
        WaitForTurn("installation:1: GitHub's rate limit is spent until its reset", 60.0),
    ],
    ids=["paced", "wait-for-turn"],
)
async def test_a_job_waiting_for_its_turn_is_deferred_without_spending_an_attempt(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    monkeypatch.setattr(routes, "handler_of", raising(error))
    await bench.queue("turn")
    for turn in range(MAX_ATTEMPTS + 2):
        job = await bench.run_claimed()
        assert job.attempts == 1  # the deferred claims were handed back, each time
        outcome = await bench.store.job_outcome("turn")
        assert outcome is not None
        assert (outcome.status, outcome.attempts) == (JobStatus.QUEUED, 0)
        assert outcome.last_error == str(error)
        assert await bench.claim() is None  # not due before its turn
        bench.now += 60.0
        assert bench.deferred() == turn + 1
    # Its turn comes: it runs to the end.
    monkeypatch.undo()
    await bench.run_claimed()
    outcome = await bench.store.job_outcome("turn")
    assert outcome is not None
    assert (outcome.status, outcome.attempts) == (JobStatus.DONE, 1)
    assert await bench.store.is_suspended(INSTALLATION)


async def test_a_rate_limit_met_by_a_write_is_a_retry_and_counts(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes, "handler_of", raising(RateLimited("GitHub rate limit", 5.0)))
    await bench.queue("limited")
    await bench.run_claimed()
    outcome = await bench.store.job_outcome("limited")
    assert outcome is not None
    assert (outcome.status, outcome.attempts) == (JobStatus.QUEUED, 1)
    assert bench.deferred() == 0


async def test_an_installation_booked_far_ahead_waits_in_the_queue(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    pacer = Pacer(MemoryBook(), clock=lambda: bench.now)
    bench.github.pacer = pacer
    ran: list[object] = []

    def handler_of(_job: Any) -> Callable[..., Any]:
        async def handler(*_args: Any) -> str:
            ran.append(_args)
            return "ran"

        return handler

    monkeypatch.setattr(routes, "handler_of", handler_of)
    await bench.queue("booked")
    for _ in range(MAX_ATTEMPTS + 2):
        # GitHub's block (or writes booked) 100 s ahead, each time the job comes back.
        await pacer.block(installation_key(INSTALLATION), bench.now + 100.0)
        job = await bench.run_claimed()
        assert job.attempts == 1
        outcome = await bench.store.job_outcome("booked")
        assert outcome is not None
        assert (outcome.status, outcome.attempts) == (JobStatus.QUEUED, 0)
        assert outcome.last_error == f"waits for installation {INSTALLATION}'s turn"
        assert ran == []
        bench.now += 90.0
        assert await bench.claim() is None  # due once the block is near (95 s)
        bench.now += 5.0
    await bench.run_claimed()
    outcome = await bench.store.job_outcome("booked")
    assert outcome is not None
    assert (outcome.status, outcome.reason) == (JobStatus.DONE, "ran")
    assert len(ran) == 1
