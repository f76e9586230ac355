"""A stopping worker claims nothing more: the jobs it runs finish, the queued ones wait
for the next process (``Worker.stop``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from perfbot.app.context import JobContext
from perfbot.app.worker import Worker
from perfbot.github.app import GitHubApp
from perfbot.sandbox.fakegithub import rsa_keypair
from perfbot.store.base import JobStatus, NewJob
from perfbot.store.sqlite import SQLiteStore
from tests.deadline import within
from tests.harness import World
from tests.test_leases import handle_test_jobs, holds, wait_for


async def test_a_worker_stopped_while_its_slots_are_busy_claims_no_other_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    release = asyncio.Event()

    async def handler(ctx: JobContext, payload: object) -> str:
        started.append(ctx.delivery_id)
        await release.wait()
        return "released"

    handle_test_jobs(monkeypatch, handler)
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    world = World.create()
    github = GitHubApp(world.fake.app_id, rsa_keypair().private_pem, world.fake.api_url)
    worker = Worker(store, github, concurrency=1, repo_disabled=lambda _: False)
    for n in (1, 2):
        job = NewJob(event="test", payload="{}", serial_key=f"pr-{n}", installation_id=1)
        assert await store.record_delivery(f"d{n}", "test", None, job, time.time())
    worker.start()
    try:
        await wait_for(holds(lambda: started == ["d1"]), 5)
        # The one slot is busy: the dispatcher waits for it. Then the worker is stopped,
        # and the running job ends.
        stopping = asyncio.create_task(worker.stop())
        await asyncio.sleep(0)  # stop() has begun
        assert worker._stopping.is_set()
        release.set()
        await within(stopping, 10)
    finally:
        await github.close()
    assert started == ["d1"]  # the second job was left in the queue
    left = await store.job_outcome("d2")
    assert left is not None
    assert left.status is JobStatus.QUEUED
    await store.close()
