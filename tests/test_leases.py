"""A job that loses its lease, or its PR's lock, stops instead of running beside another."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from perfbot.configcache import ConfigCache
from perfbot.github import GitHubApp
from perfbot.handlers import context
from perfbot.handlers.context import Busy, JobContext
from perfbot.metrics import Metrics
from perfbot.store.base import JobStatus, NewJob
from perfbot.store.sqlite import SQLiteStore
from perfbot.worker import HANDLERS, Worker
from tests.fakegithub import rsa_keypair
from tests.harness import World


class FlakyStore(SQLiteStore):
    """SQLite, with lease extensions and lock refreshes that fail while told to."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.failing = False

    async def extend_lease(self, job_id: int, owner: str, lease_seconds: float, now: float) -> bool:
        if self.failing:
            raise OSError("database unreachable")
        return await super().extend_lease(job_id, owner, lease_seconds, now)

    async def try_lock(self, key: str, owner: str, ttl_seconds: float, now: float) -> bool:
        if self.failing:
            raise OSError("database unreachable")
        return await super().try_lock(key, owner, ttl_seconds, now)


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    opened = FlakyStore(str(tmp_path / "perfbot.db"))
    await opened.setup()
    yield opened
    await opened.close()


@pytest.fixture
def test_handler(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A handler of event ``test`` that takes 1.5 s and records how each run ended."""
    runs: list[str] = []

    async def handler(ctx: JobContext, payload: dict[str, Any]) -> None:
        runs.append(f"start {ctx.worker}")
        try:
            await asyncio.sleep(1.5)
        except asyncio.CancelledError:
            runs.append(f"cancelled {ctx.worker}")
            raise
        runs.append(f"finished {ctx.worker}")

    monkeypatch.setitem(HANDLERS, "test", handler)
    return runs


async def wait_for(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_run_that_lost_its_lease_stops_and_the_new_claim_finishes(
    store: FlakyStore, test_handler: list[str]
) -> None:
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    metrics = Metrics()
    worker = Worker(
        store,
        github,
        concurrency=4,
        repo_disabled=lambda _: False,
        metrics=metrics,
        lease_seconds=0.6,
    )
    job = NewJob(event="test", payload="{}", serial_key="pr-1", installation_id=1)
    assert await store.record_delivery("d1", "test", None, job, time.time())
    worker.start()
    try:
        await wait_for(lambda: asyncio.sleep(0, result=bool(test_handler)), 5)
        store.failing = True  # the first run cannot extend its lease: it lapses
        await asyncio.sleep(0.8)
        store.failing = False

        async def done() -> bool:
            status = await store.job_status("d1")
            return status is not None and status[0] is JobStatus.DONE

        await wait_for(done, 10)
    finally:
        await worker.stop()
        await github.close()

    starts = [entry.split(" ", 1)[1] for entry in test_handler if entry.startswith("start")]
    assert len(starts) == 2
    first, second = starts
    assert first != second, "each claim runs under its own owner name"
    assert f"cancelled {first}" in test_handler  # the stale run was stopped...
    assert f"finished {first}" not in test_handler
    assert test_handler[-1] == f"finished {second}"  # ...and the new claim finished
    status = await store.job_status("d1")
    assert status is not None
    assert status[1] == 2  # two claims, one completion
    text = metrics.exposition().decode()
    assert 'perfbot_jobs_total{event="test",outcome="done"} 1.0' in text
    assert 'perfbot_jobs_total{event="test",outcome="abandoned"} 1.0' in text


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
    monkeypatch.setattr(context, "LOCK_TTL_SECONDS", 1.0)
    monkeypatch.setattr(context, "LOCK_REFRESH_SECONDS", 0.1)
    monkeypatch.setattr(context, "LOCK_WAIT_SECONDS", 0.3)


@pytest.mark.usefixtures("short_lock")
async def test_a_pr_lock_survives_a_failed_refresh(store: FlakyStore) -> None:
    holder, contender = job_context(store, "w1"), job_context(store, "w2")
    async with holder.pull_lock(500, 7):
        store.failing = True
        await asyncio.sleep(0.25)  # two refreshes fail, well within the lock's lifetime
        store.failing = False
        await asyncio.sleep(1.2)  # longer than the TTL: only refreshes kept it
        with pytest.raises(Busy):
            async with contender.pull_lock(500, 7):
                pytest.fail("two jobs inside one PR's lock")


@pytest.mark.usefixtures("short_lock")
async def test_a_pr_lock_that_cannot_be_refreshed_stops_its_holder(store: FlakyStore) -> None:
    holder = job_context(store, "w1")
    reached_end = False

    async def hold() -> None:
        nonlocal reached_end
        async with holder.pull_lock(500, 7):
            store.failing = True
            await asyncio.sleep(5)
            reached_end = True

    started = time.monotonic()
    with pytest.raises(Busy, match="lost the lock"):
        await hold()
    store.failing = False
    assert not reached_end
    assert time.monotonic() - started < 2  # stopped before the lock could be taken by others
