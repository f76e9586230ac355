"""Confirm before red (issue 13 item 5): a stochastic regression beyond tolerance is measured
once more before the comment calls it, and both attempts' runs decide."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import httpx
import pytest

from perfbot.engine.judge.confirm import CONFIRMED, CONFIRMING, NOT_REPRODUCED
from perfbot.sandbox.fakegithub import Run
from tests.harness import (
    World,
    assert_done,
    in_process_service,
    regressed,
    report_zip,
    wait_idle,
    zip_of,
)

BASE = "b" * 40
HEAD = "c" * 40
RUN = 7001
STEADY = [100.0, 100.05, 99.95]
DROPPED = [90.0, 90.05, 89.95]  # −10 %: beyond the 5 % tolerance, far beyond the noise
DROPPED_AGAIN = [90.02, 89.98, 90.04]  # the second attempt's own runs, as low


def suite(values: list[float]) -> str:
    """Three runs of a lab's stochastic suite (perfbot JSON: not a deterministic tool)."""
    metric = {"name": "udp.receiver_mbps", "values": values, "unit": "Mbps", "better": "higher"}
    return json.dumps({"perfbot": 1, "platform": "lab-board", "metrics": [metric]})


def report(head: list[float]) -> bytes:
    return zip_of(
        {"base/lab-board/suite.json": suite(STEADY), "head/lab-board/suite.json": suite(head)}
    )


def row(world: World, number: int = 7) -> str:
    (comment,) = world.bot_comments(number)
    return next(line for line in comment.splitlines() if "udp.receiver" in line)


def deliver(client: httpx.Client, world: World, run: Run) -> str:
    body, headers = world.delivery(run)
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    wait_idle(client.get)
    return headers["X-GitHub-Delivery"]


def second_attempt(world: World, run: Run, head: list[float]) -> Run:
    """GitHub ran the run again (perfbot asked): attempt 2 finished with a new report."""
    assert run.run_attempt == 2
    run.status, run.conclusion = "completed", "success"
    world.fake.add_artifact(world.repo, run, "perf-report", report(head))
    return run


@pytest.fixture
def world() -> World:
    world = World.create()
    world.pull(7, HEAD).base_sha = BASE
    return world


def first_attempt(world: World, head: list[float] = DROPPED) -> Run:
    pull = world.fake.repo(world.repo).pulls[7]
    return world.measured_run(pull, RUN, report=report(head))


def test_a_stochastic_regression_is_confirmed_by_a_second_attempt(
    world: World, tmp_path: Path
) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        run = first_attempt(world)
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
        # Not red yet: perfbot asked GitHub for attempt 2, and the comment says so.
        assert world.fake.reruns == [RUN]
        assert CONFIRMING in row(world)
        assert "🔴" not in row(world)
        assert "⏳ Confirming 1 regression beyond tolerance" in world.bot_comments(7)[0]
        (check,) = world.fake.check_runs.values()
        assert check.conclusion != "failure"

        delivery = deliver(client, world, second_attempt(world, run, DROPPED_AGAIN))
        assert_done(database, delivery, "up to date")
    # Both attempts' six runs per side were compared: the regression held.
    assert "🔴" in row(world)
    assert CONFIRMED in row(world)
    assert "1 confirmed, 0 not reproduced" in world.bot_comments(7)[0]
    assert world.fake.reruns == [RUN]  # one automatic re-run, not two


def test_a_regression_the_second_attempt_does_not_reproduce_is_not_red(
    world: World, tmp_path: Path
) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        run = first_attempt(world)
        deliver(client, world, run)
        assert world.fake.reruns == [RUN]
        delivery = deliver(client, world, second_attempt(world, run, STEADY))
        assert_done(database, delivery, "up to date")
    assert "🔴" not in row(world)
    assert NOT_REPRODUCED in row(world)
    assert "0 confirmed, 1 not reproduced" in world.bot_comments(7)[0]


def test_a_head_commit_is_re_run_automatically_once_at_most(world: World, tmp_path: Path) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        deliver(client, world, first_attempt(world))
        # Another run of the same head commit (a second measurement workflow, or a push of
        # the same commit): no second automatic re-run; the regression is called at once.
        pull = world.fake.repo(world.repo).pulls[7]
        other = world.measured_run(pull, RUN + 1, report=report(DROPPED))
        delivery = deliver(client, world, other)
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == [RUN]
    assert "🔴" in row(world)
    assert "re-run to confirm once already" in world.bot_comments(7)[0]


def test_a_re_run_a_person_asked_for_is_not_combined(world: World, tmp_path: Path) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        pull = world.fake.repo(world.repo).pulls[7]
        # Attempt 2 that perfbot never asked for: judged alone, and it is a first look at
        # no regression, so nothing is re-run either.
        run = world.measured_run(pull, RUN, report=report(STEADY))
        run.run_attempt = 2
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == []
    assert CONFIRMED not in row(world)
    assert NOT_REPRODUCED not in row(world)


def test_a_fork_is_never_re_run_automatically(tmp_path: Path) -> None:
    world = World.create()
    world.pull(7, HEAD, fork=True).base_sha = BASE
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        delivery = deliver(client, world, first_attempt(world))
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == []
    assert "🔴" in row(world)
    assert "a fork's PR is not re-run automatically" in world.bot_comments(7)[0]


def test_confirm_off_calls_the_regression_at_once(tmp_path: Path) -> None:
    world = World.create({".github/perfbot.yml": "confirm: false\n"})
    world.pull(7, HEAD).base_sha = BASE
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        delivery = deliver(client, world, first_attempt(world))
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == []
    assert "🔴" in row(world)
    assert "Confirming" not in world.bot_comments(7)[0]


def test_a_deterministic_regression_needs_no_confirmation(world: World, tmp_path: Path) -> None:
    # zperf under QEMU icount repeats its numbers exactly: a drop is real at once.
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        pull = world.fake.repo(world.repo).pulls[7]
        run = world.measured_run(pull, RUN, report=report_zip(regressed()))
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
    assert world.fake.reruns == []
    (comment,) = world.bot_comments(7)
    assert "🔴" in comment
    assert "Confirming" not in comment


def test_a_confirming_attempt_without_a_report_of_its_own_confirms_nothing(
    world: World, tmp_path: Path
) -> None:
    # GitHub lists a run's artifacts across attempts: an attempt 2 that uploaded nothing
    # shows attempt 1's report again, which must not "confirm" itself.
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        run = first_attempt(world)
        deliver(client, world, run)
        run.status, run.conclusion = "completed", "success"  # no new artifact
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
    (comment,) = world.bot_comments(7)
    assert "uploaded no report of its own" in comment
    assert CONFIRMED not in row(world)
    assert "🔴" in row(world)  # called on the one attempt


def test_a_confirming_attempt_with_no_artifact_at_all_calls_the_first_attempt(
    world: World, tmp_path: Path
) -> None:
    # Attempt 2 was cancelled before it uploaded anything, and GitHub lists no artifact:
    # the held regression is called on attempt 1 (rebuilt from the store), not left
    # "confirming…" for ever; and nothing of it is recorded a second time.
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        run = first_attempt(world)
        deliver(client, world, run)
        for artifact in world.fake.artifacts.values():
            artifact.expired = True
        run.status, run.conclusion = "completed", "cancelled"
        delivery = deliver(client, world, run)
        assert_done(database, delivery, "up to date")
    (comment,) = world.bot_comments(7)
    assert "Attempt 2 uploaded no report of its own" in comment
    assert "🔴" in row(world)
    assert CONFIRMING not in row(world)
    with contextlib.closing(sqlite3.connect(database)) as conn:
        attempts = conn.execute("SELECT DISTINCT run_attempt FROM measurements").fetchall()
    assert attempts == [(1,)]
