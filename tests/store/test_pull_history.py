"""The history queries of the comment (issue 15), on every backend: a PR's head runs
(``pull_runs``) and a branch's trend (``branch_history``): bounded, of one repository,
never a fork's rows as the trend."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from perfbot.store import SQLiteStore, Store
from perfbot.store._series import PULL_RUNS
from perfbot.store.measurements import MAX_PULL_RUNS, MeasurementRecord, PullRun, SeriesKey
from tests.store.test_measurements import NOW, REPO, STREAMS_1, record

KEY = SeriesKey("lab", "tcp_rx.receiver_mbps", STREAMS_1)


def push(run_id: int, sha: str, at: float, *, repo_id: int = REPO) -> MeasurementRecord:
    return replace(
        record(run_id, side="push", sha=sha, at=at, repo_id=repo_id),
        branch="main",
        event="push",
        pr_number=None,
    )


async def test_pull_runs_are_the_prs_head_attempts_newest_first(store: Store) -> None:
    await store.record_measurements(
        [
            record(1, side="head", sha="h1" * 20, at=NOW),
            record(1, side="base", sha="b" * 40, at=NOW),
            record(1, side="head", sha="h1" * 20, at=NOW + 5, attempt=2),
            record(2, side="head", sha="h2" * 20, at=NOW + 10),
            record(2, side="head", sha="h2" * 20, at=NOW + 10, metric="udp.jitter_ms"),
            # Another PR, and the same PR number in another repository: neither is this PR's.
            replace(record(3, side="head", sha="x" * 40, at=NOW + 20), pr_number=4),
            record(4, side="head", sha="y" * 40, at=NOW + 30, repo_id=REPO + 1),
        ]
    )
    runs = await store.pull_runs(REPO, 3, max_runs=10)
    assert runs == [
        PullRun("h2" * 20, 2, 1, NOW + 10),
        PullRun("h1" * 20, 1, 2, NOW + 5),
        PullRun("h1" * 20, 1, 1, NOW),
    ]
    assert await store.pull_runs(REPO, 3, max_runs=1) == runs[:1]
    assert await store.pull_runs(REPO, 99, max_runs=5) == []


async def test_pull_runs_refuses_an_unbounded_read(store: Store) -> None:
    with pytest.raises(ValueError, match="max_runs"):
        await store.pull_runs(REPO, 3, max_runs=MAX_PULL_RUNS + 1)


async def test_branch_history_is_the_branchs_pushes_and_bases_never_a_forks(
    store: Store,
) -> None:
    await store.record_measurements(
        [
            push(
                10,
                "c1" * 20,
                NOW,
            ),
            push(11, "c2" * 20, NOW + 1),
            record(12, side="base", sha="c2" * 20, at=NOW + 2, samples=(930.0,)),
            # Not the trend: the PR's head side, a fork's base side, another branch's
            # push, another repository's push.
            record(12, side="head", sha="h" * 40, at=NOW + 2),
            record(13, side="base", sha="c3" * 20, at=NOW + 3, from_fork=True),
            replace(push(14, "d" * 40, NOW + 4), branch="release"),
            push(15, "e" * 40, NOW + 5, repo_id=REPO + 1),
        ]
    )
    trend = (await store.branch_history(REPO, "main", [KEY], max_commits=8, max_rows=100))[KEY]
    assert [c.sha for c in trend] == ["c2" * 20, "c1" * 20]
    assert trend[0].runs == ((930.0,), (941.25, 940.5))
    bounded = await store.branch_history(REPO, "main", [KEY], max_commits=1, max_rows=100)
    assert [c.sha for c in bounded[KEY]] == ["c2" * 20]
    other = await store.branch_history(REPO, "release", [KEY], max_commits=8, max_rows=100)
    assert [c.sha for c in other[KEY]] == ["d" * 40]
    assert await store.branch_history(REPO, "main", [], max_commits=8, max_rows=100) == {}
    # The watch's series: the branch's own pushes, never a PR's measure of its base.
    pushes = await store.branch_history(
        REPO, "main", [KEY], max_commits=8, max_rows=100, pushes_only=True
    )
    assert [c.runs for c in pushes[KEY]] == [((941.25, 940.5),), ((941.25, 940.5),)]


async def test_a_prs_runs_are_read_through_an_index(tmp_path: Path) -> None:
    """On SQLite the query plan reads the PR's rows by ``measurements_pull``, not a scan."""
    store = SQLiteStore(str(tmp_path / "db"))
    await store.setup()
    await store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "db")) as conn:
        statement = PULL_RUNS.compiled("sqlite")
        plan = conn.execute(
            f"EXPLAIN QUERY PLAN {statement.text}",
            statement.bind({"repo": REPO, "pr": 3, "runs": 5}),
        ).fetchall()
    assert any("USING INDEX measurements_pull" in str(row[-1]) for row in plan), plan


async def test_a_prs_earlier_pushes_are_read_in_one_query(store: Store) -> None:
    """Each commit's newest attempt but the current commit's and run's, newest first, each
    with every series it recorded (what the comment's history re-judges)."""
    await store.record_measurements(
        [
            record(1, side="head", sha="h1" * 20, at=NOW),
            record(1, side="base", sha="b" * 40, at=NOW),
            record(1, side="head", sha="h1" * 20, at=NOW + 5, attempt=2),
            record(2, side="head", sha="h2" * 20, at=NOW + 10),
            record(2, side="base", sha="b" * 40, at=NOW + 10),
            record(2, side="head", sha="h2" * 20, at=NOW + 10, metric="udp.jitter_ms"),
            record(3, side="head", sha="h3" * 20, at=NOW + 20),  # the current commit
            record(5, side="head", sha="h4" * 20, at=NOW + 25),  # the current run
            replace(record(4, side="head", sha="x" * 40, at=NOW + 30), pr_number=4),
        ]
    )
    pushes = await store.pull_pushes(REPO, 3, sha="h3" * 20, run_id=5, max_pushes=9)
    assert [push for push, _ in pushes] == [
        PullRun("h2" * 20, 2, 1, NOW + 10),
        PullRun("h1" * 20, 1, 2, NOW + 5),
    ]
    assert sorted((s.side, s.metric) for s in pushes[0][1]) == [
        ("base", "tcp_rx.receiver_mbps"),
        ("head", "tcp_rx.receiver_mbps"),
        ("head", "udp.jitter_ms"),
    ]
    stored = await store.run_measurements(REPO, 2, 1)
    assert sorted(pushes[0][1], key=repr) == sorted(stored, key=repr)
    assert [s.side for s in pushes[1][1]] == ["head"]  # attempt 2 recorded the head only
    one = await store.pull_pushes(REPO, 3, sha="h3" * 20, run_id=5, max_pushes=1)
    assert [push for push, _ in one] == [PullRun("h2" * 20, 2, 1, NOW + 10)]
    assert await store.pull_pushes(REPO, 99, sha="h3" * 20, run_id=5, max_pushes=9) == []
