"""A job that loses its lease, or its PR's lock, stops instead of running beside another."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from perfbot.app import pulllock, routes
from perfbot.app.configcache import ConfigCache
from perfbot.app.context import JobContext
from perfbot.app.pulllock import PullLocked, pull_lock
from perfbot.app.worker import Worker
from perfbot.github.app import GitHubApp
from perfbot.sandbox.fakegithub import rsa_keypair
from perfbot.store.base import JobStatus, NewJob
from perfbot.store.sqlite import SQLiteStore
from perfbot.support.metrics import Metrics
from perfbot.support.retry import MAX_ATTEMPTS
from tests.deadline import within
from tests.harness import World


class FlakyStore(SQLiteStore):
    """SQLite, with lease extensions and lock refreshes that fail while told to (all of
    them, or only those of ``failing_owner``), counting what they do."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.failing = False
        self.failing_owner: str | None = None
        self.hanging_owner: str | None = None  # its extensions wait until the test ends
        self.unhang = asyncio.Event()
        self.extended = 0  # successful lease extensions
        self.refresh_failures = 0  # failed lock refreshes

    async def extend_lease(self, job_id: int, owner: str, lease_seconds: float, now: float) -> bool:
        if self.failing or owner == self.failing_owner:
            raise OSError("database unreachable")
        if owner == self.hanging_owner:
            await self.unhang.wait()
        held = await super().extend_lease(job_id, owner, lease_seconds, now)
        self.extended += held
        return held

    async def try_lock(self, key: str, owner: str, ttl_seconds: float, now: float) -> bool:
        if self.failing:
            self.refresh_failures += 1
            raise OSError("database unreachable")
        return await super().try_lock(key, owner, ttl_seconds, now)

    async def lock_expiry(self, key: str) -> float | None:
        def read(conn: sqlite3.Connection) -> float | None:
            row = conn.execute("SELECT expires_at FROM locks WHERE key = ?", (key,)).fetchone()
            return None if row is None else float(row[0])

        return await self._run(read)


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    opened = FlakyStore(str(tmp_path / "perfbot.db"))
    await opened.setup()
    yield opened
    await opened.close()


@dataclass
class Runs:
    """The runs of the handler of event ``test``: how each ended, and what lets them end."""

    log: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def starts(self) -> list[str]:
        return [entry.split(" ", 1)[1] for entry in self.log if entry.startswith("start")]


def handle_test_jobs(
    monkeypatch: pytest.MonkeyPatch, handler: Callable[[JobContext, Any], Awaitable[str]]
) -> None:
    """Jobs of event ``test`` (any payload) go to ``handler``, as their payload."""
    real_decode, real_route, real_handler = routes.decode, routes.route_of, routes.handler_of
    test_route = routes.Route(
        "test",
        frozenset(),
        None,
        str,  # type: ignore[arg-type]  # the test's jobs are their payload text
        lambda *_: "test",
        "test:handler",
    )

    def decode(kind: str, payload: str | bytes) -> Any:
        return payload if kind == "test" else real_decode(kind, payload)

    def route_of(job: Any) -> routes.Route:
        return test_route if isinstance(job, str) else real_route(job)

    def handler_of(job: Any) -> routes.Handler:
        return handler if isinstance(job, str) else real_handler(job)

    monkeypatch.setattr(routes, "decode", decode)
    monkeypatch.setattr(routes, "route_of", route_of)
    monkeypatch.setattr(routes, "handler_of", handler_of)


@pytest.fixture
def test_handler(monkeypatch: pytest.MonkeyPatch) -> Runs:
    """A handler of event ``test`` that runs until ``release`` is set, recording each run."""
    runs = Runs()

    async def handler(ctx: JobContext, payload: dict[str, Any]) -> str:
        runs.log.append(f"start {ctx.worker}")
        try:
            await runs.release.wait()
        except asyncio.CancelledError:
            runs.log.append(f"cancelled {ctx.worker}")
            raise
        runs.log.append(f"finished {ctx.worker}")
        return "released"

    handle_test_jobs(monkeypatch, handler)
    return runs


async def wait_for(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def holds(value: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    return lambda: asyncio.sleep(0, result=value())


def worker_on(store: FlakyStore, github: GitHubApp, metrics: Metrics) -> Worker:
    return Worker(
        store,
        github,
        concurrency=4,
        repo_disabled=lambda _: False,
        metrics=metrics,
        lease_seconds=0.6,
    )


async def test_a_run_that_lost_its_lease_stops_and_the_new_claim_finishes(
    store: FlakyStore, test_handler: Runs
) -> None:
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    metrics = Metrics()
    worker = worker_on(store, github, metrics)
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    worker.start()
    try:
        await wait_for(holds(lambda: bool(test_handler.starts())), 5)
        # The first run cannot extend its lease: it lapses, the job is claimed again, and
        # the first run stops.
        stale = store.failing_owner = test_handler.starts()[0]
        await wait_for(
            holds(
                lambda: len(test_handler.starts()) == 2 and f"cancelled {stale}" in test_handler.log
            ),
            10,
        )
        test_handler.release.set()

        async def done() -> bool:
            outcome = await store.job_outcome("d1")
            return outcome is not None and outcome.status is JobStatus.DONE

        await wait_for(done, 10)
    finally:
        await worker.stop()
        await github.close()

    first, second = test_handler.starts()
    assert first != second, "each claim runs under its own owner name"
    assert f"finished {first}" not in test_handler.log  # the stale run was stopped...
    assert test_handler.log[-1] == f"finished {second}"  # ...and the new claim finished
    outcome = await store.job_outcome("d1")
    assert outcome is not None
    assert (outcome.attempts, outcome.reason) == (2, "released")  # two claims, one completion
    text = metrics.exposition().decode()
    assert 'perfbot_jobs_total{event="test",outcome="done"} 1.0' in text
    assert 'perfbot_jobs_total{event="test",outcome="abandoned"} 1.0' in text


async def test_a_run_whose_lease_extension_hangs_stops_before_another_claim(
    store: FlakyStore, test_handler: Runs
) -> None:
    """A database that stops answering (a failover) must not keep a run going past its
    lease: the run stops within the grace, and the next claim runs alone."""
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    worker = worker_on(store, github, Metrics())
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    worker.start()
    try:
        await wait_for(holds(lambda: bool(test_handler.starts())), 5)
        stale = store.hanging_owner = test_handler.starts()[0]
        await wait_for(holds(lambda: len(test_handler.starts()) == 2), 10)
        # When the job was claimed again, the hung run had already stopped.
        second = test_handler.log.index(f"start {test_handler.starts()[1]}")
        assert f"cancelled {stale}" in test_handler.log[:second]
        test_handler.release.set()

        async def done() -> bool:
            outcome = await store.job_outcome("d1")
            return outcome is not None and outcome.status is JobStatus.DONE

        await wait_for(done, 10)
    finally:
        test_handler.release.set()
        store.unhang.set()
        await worker.stop()
        await github.close()
    assert f"finished {stale}" not in test_handler.log


async def test_a_job_whose_runs_keep_ending_without_an_outcome_is_given_up(
    store: FlakyStore, test_handler: Runs
) -> None:
    """A job that kills its process is taken over at once by the next one (presence):
    after MAX_ATTEMPTS claims that left no outcome it is given up, not run again."""
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    for n in range(MAX_ATTEMPTS):
        # Claimed by a process that then died: its lease is already over.
        assert await store.claim(f"dead:{n}:", -1.0, time.time()) is not None
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    worker = worker_on(store, github, Metrics())
    worker.start()
    try:

        async def ended() -> bool:
            outcome = await store.job_outcome("d1")
            return outcome is not None and outcome.status is not JobStatus.RUNNING

        await wait_for(ended, 10)
    finally:
        test_handler.release.set()
        await worker.stop()
        await github.close()
    outcome = await store.job_outcome("d1")
    assert outcome is not None
    assert outcome.status is JobStatus.FAILED
    assert outcome.attempts == MAX_ATTEMPTS + 1
    assert outcome.last_error is not None
    assert "without an outcome" in outcome.last_error
    assert test_handler.starts() == []  # given up before the handler, not after it


async def test_cpu_work_in_a_thread_and_a_slow_call_keep_the_lease(
    store: FlakyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job outliving its lease many times over (a big report parsed in a thread, then a
    slow GitHub call) keeps it by renewals: one attempt, never taken over."""
    renewals_per_phase = 5  # each phase outlasts the 0.6 s lease (renewed every 0.2 s)

    def parse(until: int) -> int:
        # Pure-Python CPU work, as a parse is, until the lease was renewed enough times.
        deadline, spins = time.monotonic() + 10, 0
        while store.extended < until and time.monotonic() < deadline:
            spins += sum(i * i for i in range(1000)) & 1
        return store.extended

    async def handler(ctx: JobContext, payload: dict[str, Any]) -> str:
        parsed = await asyncio.to_thread(parse, renewals_per_phase)
        # A slow call: the job awaits, the renewals go on.
        await wait_for(holds(lambda: store.extended >= parsed + renewals_per_phase), 10)
        return f"renewed {store.extended} times"

    handle_test_jobs(monkeypatch, handler)
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    metrics = Metrics()
    worker = worker_on(store, github, metrics)
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    worker.start()
    try:

        async def ended() -> bool:
            outcome = await store.job_outcome("d1")
            return outcome is not None and outcome.status in (JobStatus.DONE, JobStatus.FAILED)

        await wait_for(ended, 30)
    finally:
        await worker.stop()
        await github.close()
    outcome = await store.job_outcome("d1")
    assert outcome is not None
    assert outcome.status is JobStatus.DONE
    assert outcome.attempts == 1
    assert outcome.reason is not None
    assert outcome.reason.startswith("renewed ")
    assert int(outcome.reason.split()[1]) >= 2 * renewals_per_phase
    assert 'outcome="abandoned"' not in metrics.exposition().decode()


def job_context(store: FlakyStore, worker: str) -> JobContext:
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    return JobContext(
        delivery_id="d1",
        installation=github.installation(1),
        store=store,
        app_id=1,
        bot_login=lambda: asyncio.sleep(0, result="perfbot[bot]"),
        configs=ConfigCache(),
        repo_disabled=lambda _: False,
        now=time.time,
        worker=worker,
        log=logging.LoggerAdapter(logging.getLogger("test"), {}),
    )


@pytest.fixture
def short_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulllock, "LOCK_TTL_SECONDS", 1.0)
    monkeypatch.setattr(pulllock, "LOCK_REFRESH_SECONDS", 0.1)
    monkeypatch.setattr(pulllock, "LOCK_WAIT_SECONDS", 0.3)


@pytest.mark.usefixtures("short_lock")
async def test_a_pr_lock_survives_a_failed_refresh(store: FlakyStore) -> None:
    holder, contender = job_context(store, "w1"), job_context(store, "w2")
    async with pull_lock(holder, 500, 7):
        first_expiry = await store.lock_expiry("pull:500:7")
        assert first_expiry is not None
        store.failing = True
        # Two refreshes fail, well within the lock's lifetime...
        await wait_for(holds(lambda: store.refresh_failures >= 2), 5)
        store.failing = False

        async def refreshed_past_its_first_lifetime() -> bool:
            expiry = await store.lock_expiry("pull:500:7")
            return expiry is not None and expiry > first_expiry + pulllock.LOCK_TTL_SECONDS

        # ...then it is refreshed after the time it would have expired: only refreshes
        # kept it, and it is still held.
        await wait_for(refreshed_past_its_first_lifetime, 10)
        with pytest.raises(PullLocked):
            async with pull_lock(contender, 500, 7):
                pytest.fail("two jobs inside one PR's lock")


@pytest.mark.usefixtures("short_lock")
async def test_a_pr_lock_that_cannot_be_refreshed_stops_its_holder(store: FlakyStore) -> None:
    holder = job_context(store, "w1")
    reached_end = False
    expiry: float | None = None

    async def hold() -> None:
        nonlocal reached_end, expiry
        async with pull_lock(holder, 500, 7):
            expiry = await store.lock_expiry("pull:500:7")
            store.failing = True
            await asyncio.Event().wait()  # work that would go on forever
            reached_end = True

    with pytest.raises(PullLocked, match="lost the lock"):
        await within(hold(), 10)
    stopped_at = time.time()
    store.failing = False
    assert not reached_end
    # Stopped before the lock could be taken by others: its last refresh still held.
    assert expiry is not None
    assert stopped_at <= expiry


async def test_a_handlers_reason_is_kept_as_one_bounded_line(
    store: FlakyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reason may quote a name from a payload: newlines and length are not the handler's
    # to decide for the operator's view of the job.
    async def handler(ctx: JobContext, payload: dict[str, Any]) -> str:
        return "ignored: workflow 'a\nb'\r\n  " + "x" * 1000

    handle_test_jobs(monkeypatch, handler)
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    worker = worker_on(store, github, Metrics())
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    worker.start()
    try:

        async def done() -> bool:
            outcome = await store.job_outcome("d1")
            return outcome is not None and outcome.status is JobStatus.DONE

        await wait_for(done, 10)
    finally:
        await worker.stop()
        await github.close()
    outcome = await store.job_outcome("d1")
    assert outcome is not None
    assert outcome.reason is not None
    assert outcome.reason.startswith("ignored: workflow 'a b' xxx")
    assert len(outcome.reason) == 300
    assert outcome.reason.endswith("x…")
