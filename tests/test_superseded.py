"""An older result must never replace a newer one on the PR (``_superseded`` in
``perfbot/app/handlers/workflow_run.py``, asked under the PR's lock just before writing).

Two orders make a result older: attempt 1 of a run is older than attempt 2 of the same run,
and a run of an earlier head commit is older than a run of the head the PR moved to, when
the later head was proven after the earlier one. Each test lets the older job finish last,
then checks the comment as the fake GitHub holds it (it still shows the newer result, and
nothing more was written) and how the older job ended (its reason says why it posted
nothing), so that an absence is told from a crash.

Through the queue, the jobs of one PR's head branch never run side by side (their serial
key), so an older job finishes last when its delivery comes late (after an outage, by the
missed-delivery sweep, say): ``test_a_late_first_attempt_*``, on one service and across
two replicas on one store. Such a late attempt 1 reads the run's newest report, attempt
2's (GitHub lists a run's artifacts across attempts); without the guard it writes the
comment and the check run again, and the PR's state says attempt 1. A late run of an
earlier head is stopped before, by the PR proof (``test_service.py``).

Two jobs of one PR overlap only when that serialisation fails (a replica stalled past its
lease); the older job may then hold its own, older numbers, and the guard is what keeps
them off the PR. Those overlaps are played with the handlers called directly on one store,
the older job's report download held until the newer job has posted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from perfbot.sandbox.fakegithub import Hold, Run
from tests.deadline import within
from tests.harness import (
    ZPERF_BASE,
    ServiceClient,
    World,
    assert_done,
    in_process_service,
    regressed,
    report_zip,
    wait_idle,
    wait_until,
)
from tests.pg import pg_database, pg_server, pg_url
from tests.test_handlers import NEXT_HEAD, Bench, bench, until

__all__ = ["bench", "pg_database", "pg_server", "pg_url"]  # fixtures, used by name

HEAD = "a" * 40
SUPERSEDED = "not posted: PR 7 already shows a newer result"
# What the comment says of each report: the older one regressed tcp4 by 10 %, the newer
# one changed nothing.
OLDER_SAYS = ("1 regression", "🔴 **−10.00 %**")
NEWER_SAYS = "no change beyond the noise floor"


def _retried(world: World, run: Run) -> None:
    """``run`` re-run: attempt 2, which uploads its own report (nothing changed)."""
    run.run_attempt = 2
    world.fake.add_artifact(world.repo, run, "perf-report", report_zip({**ZPERF_BASE}))


def _post(client: ServiceClient, body: bytes, headers: dict[str, str]) -> None:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    assert response.json() == {"status": "queued"}


def _assert_shows_the_newer_result(world: World) -> str:
    (body,) = world.bot_comments(7)
    assert NEWER_SAYS in body
    assert not any(said in body for said in OLDER_SAYS), body
    return body


@dataclass
class Shared:
    """The store of the service (or of both replicas), read beside it by the test."""

    backend: str
    database: Path  # the SQLite file (the service's ``database`` either way)
    url: str  # PERFBOT_DATABASE_URL

    def _row(self, query: str, *params: object) -> tuple[Any, ...] | None:
        """The first row of ``query`` (``{}`` marks each parameter)."""
        if self.backend == "postgres":
            with psycopg.connect(self.url) as conn:
                return conn.execute(query.format("%s"), params).fetchone()
        uri = f"file:{self.database}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            row: tuple[Any, ...] | None = conn.execute(query.format("?"), params).fetchone()
        return row

    def reported(self, number: int) -> tuple[int, int]:
        """(run, attempt) whose result PR ``number``'s state says the comment shows."""
        query = "SELECT reported_run_id, reported_run_attempt FROM pulls WHERE number = {}"
        row = self._row(query, number)
        assert row is not None, f"PR {number} has no state"
        return int(row[0]), int(row[1])

    def job(self, delivery_id: str) -> tuple[str, str | None, str] | None:
        """(status, reason, claim owner) of the job of ``delivery_id``."""
        query = "SELECT status, reason, lease_owner FROM jobs WHERE delivery_id = {}"
        row = self._row(query, delivery_id)
        return None if row is None else (str(row[0]), row[1], str(row[2]))

    def done(self, delivery_id: str) -> tuple[str, str]:
        """Waits for the job of ``delivery_id`` to end; (reason, the worker that ran it)."""
        wait_until(
            lambda: (self.job(delivery_id) or ("",))[0] in ("done", "failed"),
            15,
            f"the job of {delivery_id}",
        )
        found = self.job(delivery_id)
        assert found is not None
        status, reason, owner = found
        assert status == "done", f"{delivery_id}: {status} ({reason})"
        # A claim's owner is host:pid:worker:claim; one process here, so the worker tells.
        return reason or "", owner.rsplit(":", 1)[0]


# --- through the queue: a late delivery ----------------------------------------------------


def test_a_late_first_attempt_does_not_replace_the_second_attempts_result(
    tmp_path: Path,
) -> None:
    """Attempt 1's completion arrives only after attempt 2's result is on the PR (its
    delivery failed, and came back with the missed-delivery sweep, say)."""
    world = World.create()
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001, report=report_zip(regressed()))
    first = world.delivery(run, delivery_id="attempt-1")  # sent now, received late
    _retried(world, run)
    second = world.delivery(run, delivery_id="attempt-2")
    assert b'"run_attempt": 1' in first[0]
    assert b'"run_attempt": 2' in second[0]
    store = Shared("sqlite", tmp_path / "db", str(tmp_path / "db"))
    with in_process_service(world, store.database) as client:
        _post(client, *second)
        wait_idle(client.get)
        assert_done(client.database, "attempt-2", "is up to date")
        assert store.reported(7) == (1001, 2)
        shown = _assert_shows_the_newer_result(world)
        writes = len(world.fake.write_calls())
        (check,) = world.fake.check_runs_for(world.repo, HEAD)
        check_output = dict(check.output)

        _post(client, *first)
        wait_idle(client.get)
    assert_done(client.database, "attempt-1", SUPERSEDED)
    assert store.reported(7) == (1001, 2)
    assert world.bot_comments(7) == [shown]
    assert world.fake.write_calls()[writes:] == []  # neither the comment nor the check run
    assert [c.output for c in world.fake.check_runs_for(world.repo, HEAD)] == [check_output]


@pytest.fixture(params=["sqlite", "postgres"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    database = tmp_path / "perfbot.db"
    if request.param == "sqlite":
        return Shared("sqlite", database, str(database))
    # Asked for here, not as an argument: the SQLite run needs no PostgreSQL server.
    url: str = request.getfixturevalue("pg_url")
    return Shared("postgres", database, url)


def test_a_late_first_attempt_on_another_replica_does_not_replace_the_second(
    replicas: Shared,
) -> None:
    """Replica A posts attempt 2; attempt 1 arrives late and replica B, on the same store,
    runs it: B must see A's newer result and leave it. A has one worker, kept busy with
    another PR's job (its download held), so the late job is surely B's."""
    world = World.create()
    pull = world.pull(7, HEAD)
    run = world.measured_run(pull, 1001, report=report_zip(regressed()))
    first = world.delivery(run, delivery_id="attempt-1")
    _retried(world, run)
    second = world.delivery(run, delivery_id="attempt-2")
    other = world.delivery(world.measured_run(world.pull(8, "c" * 40), 2001), delivery_id="pr-8")
    database_url = {"PERFBOT_DATABASE_URL": replicas.url}
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(
            in_process_service(world, replicas.database, PERFBOT_WORKERS="1", **database_url)
        )
        _post(a, *second)
        said, posted_by = replicas.done("attempt-2")
        assert "is up to date" in said
        assert replicas.reported(7) == (1001, 2)
        shown = _assert_shows_the_newer_result(world)
        writes = len(world.fake.write_calls())

        held: Hold = world.fake.hold_next("/blobs/")
        stack.callback(held.release)  # before replica A stops, should the test fail
        _post(a, *other)
        wait_until(held.reached.is_set, 15, "PR 8's report download")  # A's one worker
        b = stack.enter_context(in_process_service(world, replicas.database, **database_url))
        _post(b, *first)
        said, late_by = replicas.done("attempt-1")
        assert late_by != posted_by, "the late attempt ran on the replica that posted"
        assert said == SUPERSEDED
        assert replicas.reported(7) == (1001, 2)
        assert world.bot_comments(7) == [shown]
        assert world.fake.write_calls()[writes:] == []

        held.release()
        said, _ = replicas.done("pr-8")
        assert "is up to date" in said  # the control: A went on working
    assert world.bot_comments(7) == [shown]


# --- overlapping jobs: the handlers on one store ------------------------------------------


def _proven(caplog: pytest.LogCaptureFixture) -> int:
    """How many jobs have proven PR 7 (each says so in the handlers' log, then takes the
    time of the proof before its next await)."""
    return sum("PR 7 proven" in message for message in caplog.messages)


@contextlib.asynccontextmanager
async def _in_flight(
    bench: Bench, payload: dict[str, Any], delivery: str, hold: Hold
) -> AsyncIterator[asyncio.Future[str]]:
    """The job of ``payload`` running as a task (its download held by ``hold``); released
    and, if still running, cancelled when the block ends."""
    task = asyncio.ensure_future(bench.run("workflow_run", payload, delivery))
    try:
        yield task
    finally:
        hold.release()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_first_attempt_finishing_after_the_second_is_not_posted(
    bench: Bench, caplog: pytest.LogCaptureFixture
) -> None:
    """Attempt 1 read its own report (attempt 2 had uploaded nothing yet), and its job
    is still under way when attempt 2's result is posted."""
    caplog.set_level(logging.INFO, logger="test.handlers")
    run = bench.world.measured_run(bench.pull(), 1001, report=report_zip(regressed()))
    hold = bench.fake.hold_next("/blobs/")
    async with _in_flight(bench, bench.run_payload(run), "attempt-1", hold) as older:
        await until(hold.reached.is_set, "attempt 1's report download")
        await until(lambda: _proven(caplog) == 1, "attempt 1's proof")
        _retried(bench.world, run)
        newer = await bench.run("workflow_run", bench.run_payload(run), "attempt-2")
        assert "is up to date" in newer
        shown = _assert_shows_the_newer_result(bench.world)
        writes = len(bench.writes())
        hold.release()
        said = await within(older, 10)
    assert said == SUPERSEDED
    assert bench.world.bot_comments(7) == [shown]
    assert bench.writes()[writes:] == []


async def test_an_earlier_heads_run_finishing_after_the_later_heads_is_not_posted(
    bench: Bench, caplog: pytest.LogCaptureFixture
) -> None:
    """The run of the PR's first head is proven, then its report download hangs; the PR
    moves on, and the run of the new head is proven and posted meanwhile."""
    caplog.set_level(logging.INFO, logger="test.handlers")
    pull = bench.pull()
    run = bench.world.measured_run(pull, 1001, report=report_zip(regressed()))
    hold = bench.fake.hold_next("/blobs/")
    async with _in_flight(bench, bench.run_payload(run), "earlier-head", hold) as older:
        await until(hold.reached.is_set, "the earlier head's report download")
        await until(lambda: _proven(caplog) == 1, "the earlier head's proof")
        bench.clock[0] += 60.0  # the later head is proven after the earlier one
        pull.head_sha = NEXT_HEAD
        later = bench.world.measured_run(pull, 1002, report=report_zip({**ZPERF_BASE}))
        newer = await bench.run("workflow_run", bench.run_payload(later), "later-head")
        assert "is up to date" in newer
        shown = _assert_shows_the_newer_result(bench.world)
        assert f"<code>{NEXT_HEAD[:7]}</code>" in shown
        assert "previous commit" not in shown
        writes = len(bench.writes())
        hold.release()
        said = await within(older, 10)
    assert said == SUPERSEDED
    assert bench.world.bot_comments(7) == [shown]
    assert bench.writes()[writes:] == []
