"""perfbot.app.measurements.learned_noise asks the store for the right history.

The store's own tests prove that ``measurement_history`` leaves fork rows and the excluded
run out when asked; these prove that the App asks so. Found by review: switching either
argument off in learned_noise (scripts/mutants.py fork-rows-learned, own-run-learned) left
every App-level test passing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from perfbot.app.context import JobContext
from perfbot.app.jobs import Run
from perfbot.app.measurements import learned_noise, report_records
from perfbot.engine.read.sides import Series, SideReport
from perfbot.github.types import PullInfo
from perfbot.model import Better
from perfbot.store import open_store
from perfbot.store.base import Store

BASE = "b" * 40
KEY = ("lab-board", "tcp.receiver_mbps")
QUIET = [100.0, 100.1, 99.9, 100.05]  # what trusted runs of the base commit measured
WILD = [50.0, 150.0, 20.0, 300.0]  # a fork's claim about that same commit


def run(run_id: int, *, fork: bool = False, attempt: int = 1) -> Run:
    return Run(
        id=run_id,
        attempt=attempt,
        number=run_id,
        event="pull_request",
        status="completed",
        conclusion="success",
        head_sha=f"{run_id:040x}",
        head_branch=f"feature-{run_id}",
        head_repo_id=900 if fork else 500,
        run_repo_id=500,
        repo_id=500,
        owner="acme",
        name="widget",
        workflow_name="net-perf",
        workflow_path=".github/workflows/net-perf.yml",
        html_url=f"https://github.test/acme/widget/actions/runs/{run_id}",
        hinted_pulls=(run_id,),
    )


def pull(number: int) -> PullInfo:
    return PullInfo(number, "open", f"{number:040x}", "f", 500, 500, "main", BASE, ())


def sides(base: list[float]) -> tuple[SideReport, SideReport]:
    report = SideReport()
    report.series[KEY] = Series("Mbps", Better.HIGHER, list(base))
    head = SideReport()
    head.series[KEY] = Series("Mbps", Better.HIGHER, [100.0])
    return report, head


class Context:
    """What learned_noise uses of a JobContext."""

    app_id = 1

    def __init__(self, store: Store) -> None:
        self.store = store
        self.log = logging.getLogger("test")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = open_store(str(tmp_path / "db"))
    await store.setup()
    try:
        yield store
    finally:
        await store.close()


async def record(store: Store, measured: Run, base: list[float]) -> None:
    records = report_records(measured, pull(measured.number), sides(base), 1, 1000.0)
    assert await store.record_measurements(records) == len(records)


async def test_a_forks_claims_about_the_base_commit_teach_nothing(store: Store) -> None:
    await record(store, run(1), QUIET)
    await record(store, run(2, fork=True), WILD)
    judged = run(3)
    ctx = cast(JobContext, Context(store))
    knowledge = await learned_noise(ctx, judged, pull(3), sides([100.0]))
    noise = knowledge[KEY]
    assert noise.evidence == "4 measurements of main@bbbbbbb"
    assert noise.sigma < 0.01  # the trusted run's scatter, not the fork's


async def test_the_run_being_judged_is_not_evidence_of_its_own_noise(store: Store) -> None:
    await record(store, run(1), QUIET)
    # Attempt 1 of the run now judged at attempt 2 (a re-run): its rows are no evidence.
    judged = run(4)
    await record(store, judged, WILD)
    ctx = cast(JobContext, Context(store))
    knowledge = await learned_noise(ctx, replace(judged, attempt=2), pull(4), sides([100.0]))
    assert knowledge[KEY].evidence == "4 measurements of main@bbbbbbb"
    assert knowledge[KEY].sigma < 0.01
