"""The measurement store, on every backend: recording report sides once, reading a series'
samples grouped by commit for the noise model, retention and deletion.

The migration of a database of the previous version is at the end, for each backend.
"""

from __future__ import annotations

import json
import math
import sqlite3
import struct
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from perfbot.model import Better, Scale
from perfbot.store import PostgresStore, SQLiteStore, Store
from perfbot.store._schema import MIGRATIONS, PG_MIGRATIONS
from perfbot.store.measurements import (
    MAX_HISTORY_COMMITS,
    CommitSamples,
    MeasurementRecord,
    RunSeries,
    SeriesKey,
    commit_samples,
    samples_from_text,
    samples_text,
    settings_from_text,
    settings_text,
)
from tests.store.helpers import pg_migrate_to

NOW = 1_000_000.0
REPO = 500
BASE_SHA = "b" * 40
STREAMS_1 = (("protocol", "tcp"), ("streams", "1"))


def record(
    run_id: int = 1,
    *,
    side: str = "base",
    sha: str = BASE_SHA,
    platform: str = "lab",
    metric: str = "tcp_rx.receiver_mbps",
    samples: tuple[float, ...] = (941.25, 940.5),
    settings: tuple[tuple[str, str], ...] = STREAMS_1,
    attempt: int = 1,
    at: float = NOW,
    repo_id: int = REPO,
    installation_id: int | None = 7,
    from_fork: bool = False,
) -> MeasurementRecord:
    assert side in ("base", "head", "push")
    return MeasurementRecord(
        repo_id=repo_id,
        repo_full_name=f"acme/r{repo_id}",
        installation_id=installation_id,
        platform=platform,
        metric=metric,
        unit="Mbps",
        better=Better.HIGHER,
        scale=Scale.RATIO,
        side=side,  # type: ignore[arg-type]  # checked above
        sha=sha,
        run_id=run_id,
        run_attempt=attempt,
        workflow_id=11,
        workflow_name="Network performance",
        event="pull_request",
        branch="main" if side == "base" else "feature",
        pr_number=None if side == "push" else 3,
        samples=samples,
        settings=settings,
        recorded_at=at,
        from_fork=from_fork,
        runner_name="lab-runner-2",
        runner_labels=("self-hosted", "perf-iperf3"),
    )


async def history(
    store: Store,
    *,
    exclude: int | None = None,
    commits: int = 10,
    rows: int = 100,
    platform: str = "lab",
    metric: str = "tcp_rx.receiver_mbps",
    settings: tuple[tuple[str, str], ...] = STREAMS_1,
    forks: bool = False,
) -> list[CommitSamples]:
    return await commit_samples(
        store,
        REPO,
        platform,
        metric,
        settings,
        exclude_run_id=exclude,
        max_commits=commits,
        max_rows=rows,
        include_forks=forks,
    )


def shas(groups: list[CommitSamples]) -> list[str]:
    return [group.sha for group in groups]


async def test_samples_are_grouped_by_commit_most_recent_first(store: Store) -> None:
    new = await store.record_measurements(
        [
            record(1, samples=(10.0, 10.5), at=NOW),
            record(1, side="head", sha="h1" * 20, samples=(9.0,), at=NOW),
            record(2, samples=(10.25,), at=NOW + 10),  # another PR against the same base
            record(3, sha="c" * 40, samples=(11.0, 11.5, 11.25), at=NOW + 5),
        ]
    )
    assert new == 4

    groups = await history(store)

    assert groups == [
        CommitSamples(BASE_SHA, ((10.25,), (10.0, 10.5)), NOW + 10),
        CommitSamples("c" * 40, ((11.0, 11.5, 11.25),), NOW + 5),
        CommitSamples("h1" * 20, ((9.0,),), NOW),
    ]


async def test_recording_a_side_twice_keeps_one_row(store: Store) -> None:
    first = [record(1), record(1, side="head", sha="h" * 40)]
    assert await store.record_measurements(first) == 2
    # A redelivered event, or the job run again: the same rows, later.
    again = [replace(r, recorded_at=NOW + 60, samples=(1.0,)) for r in first]
    assert await store.record_measurements(again) == 0
    # A re-run of the run is a new attempt: new rows.
    assert await store.record_measurements([record(1, attempt=2, samples=(942.0,))]) == 1

    groups = await history(store)
    assert [g.runs for g in groups] == [((942.0,), (941.25, 940.5)), ((941.25, 940.5),)]


async def test_the_run_being_judged_is_not_its_own_evidence(store: Store) -> None:
    await store.record_measurements(
        [
            record(1, samples=(1.0,)),
            record(2, samples=(2.0,), at=NOW + 1),
            record(2, attempt=2, samples=(2.5,), at=NOW + 2),
        ]
    )

    groups = await history(store, exclude=2)

    assert groups == [CommitSamples(BASE_SHA, ((1.0,),), NOW)]
    assert [g.runs for g in await history(store)] == [((2.5,), (2.0,), (1.0,))]


async def test_history_is_bounded_in_commits_and_rows(store: Store) -> None:
    # Five commits, the newest measured three times; one row per run.
    records = [record(n, sha=f"{n:040x}", at=NOW + n) for n in range(1, 5)]
    records += [
        record(10 + n, sha="f" * 40, samples=(float(n),), at=NOW + 10 + n) for n in range(3)
    ]
    await store.record_measurements(records)

    two_commits = await history(store, commits=2)
    assert shas(two_commits) == ["f" * 40, f"{4:040x}"]
    assert two_commits[0].runs == ((2.0,), (1.0,), (0.0,))

    four_rows = await history(store, rows=4)  # the three of f…f, then commit 4
    assert shas(four_rows) == ["f" * 40, f"{4:040x}"]
    assert sum(len(g.runs) for g in four_rows) == 4

    with pytest.raises(ValueError, match="max_commits"):
        await history(store, commits=MAX_HISTORY_COMMITS + 1)
    with pytest.raises(ValueError, match="max_rows"):
        await history(store, rows=0)


async def test_a_series_is_one_platform_metric_and_settings(store: Store) -> None:
    await store.record_measurements(
        [
            record(1, samples=(1.0,)),
            record(2, samples=(2.0,), settings=(("protocol", "tcp"), ("streams", "4"))),
            record(3, samples=(3.0,), platform="other"),
            record(4, samples=(4.0,), metric="tcp_rx.retransmits"),
            record(5, samples=(5.0,), repo_id=REPO + 1),
        ]
    )

    assert [g.runs for g in await history(store)] == [((1.0,),)]
    # The fingerprint matches by content, whatever the order it was written in.
    reordered = (("streams", "4"), ("protocol", "tcp"))
    assert [g.runs for g in await history(store, settings=reordered)] == [((2.0,),)]
    assert await history(store, settings=()) == []


async def test_fork_measurements_are_read_only_when_asked_for(store: Store) -> None:
    # A fork's author controls its artifact, base side included: not noise evidence by default.
    await store.record_measurements([record(1, samples=(1.0,)), record(2, from_fork=True)])

    assert [g.runs for g in await history(store)] == [((1.0,),)]
    assert len((await history(store, forks=True))[0].runs) == 2


async def test_a_reports_metrics_come_in_one_call(store: Store) -> None:
    metrics = [f"case{n}.receiver_mbps" for n in range(120)]
    await store.record_measurements(
        [
            record(run, metric=metric, samples=(float(run), float(n)), at=NOW + run)
            for run in (1, 2, 3)
            for n, metric in enumerate(metrics)
        ]
    )
    keys = [SeriesKey("lab", metric, STREAMS_1) for metric in metrics]
    unknown = SeriesKey("lab", "never.measured", ())

    answer = await store.measurement_history(
        REPO, [*keys, unknown, keys[0]], exclude_run_id=3, max_commits=5, max_rows=50
    )

    assert set(answer) == {*keys, unknown}
    assert answer[unknown] == []
    assert answer[keys[7]] == [CommitSamples(BASE_SHA, ((2.0, 7.0), (1.0, 7.0)), NOW + 2)]
    assert (
        await store.measurement_history(REPO, [], exclude_run_id=None, max_commits=1, max_rows=1)
        == {}
    )


async def test_text_from_an_artifact_is_stored_as_it_came(store: Store) -> None:
    # Names and settings are the artifact's: quotes, Unicode, a NUL (PostgreSQL replaces it).
    odd = (("label", 'x"y\\z'), ("µ", "1"))
    await store.record_measurements([record(1, metric="ümlaut 'q'", settings=odd)])
    assert len(await history(store, metric="ümlaut 'q'", settings=odd)) == 1

    await store.record_measurements([record(2, metric="nul\x00name")])
    assert len(await history(store, metric="nul\x00name")) == 1


async def test_old_measurements_are_purged(store: Store) -> None:
    await store.record_measurements([record(n, sha=f"{n:040x}", at=NOW + n) for n in range(1, 7)])

    assert await store.purge_measurements(NOW + 4) == 3
    assert await store.purge_measurements(NOW + 4) == 0

    assert shas(await history(store)) == [f"{n:040x}" for n in (6, 5, 4)]


async def test_purging_many_rows_goes_in_batches(store: Store) -> None:
    count = 12_000  # over two batches of 5,000
    await store.record_measurements(
        [record(n // 100, metric=f"m{n % 100}", at=NOW) for n in range(count)]
    )
    assert await store.purge_measurements(NOW + 1) == count
    assert await history(store, metric="m1") == []


async def test_measurements_go_with_their_repository(store: Store) -> None:
    await store.record_measurements(
        [record(1, repo_id=REPO), record(2, repo_id=REPO + 1), record(3, repo_id=REPO + 2)]
    )

    await store.forget_repositories([REPO, REPO + 2])

    assert await history(store) == []
    kept = await commit_samples(
        store,
        REPO + 1,
        "lab",
        "tcp_rx.receiver_mbps",
        STREAMS_1,
        exclude_run_id=None,
        max_commits=1,
        max_rows=1,
    )
    assert len(kept) == 1


async def test_measurements_go_with_their_installation(store: Store) -> None:
    await store.record_measurements(
        [record(1, installation_id=7), record(2, installation_id=8, at=NOW + 1)]
    )

    await store.forget_installation(7)

    assert [g.runs for g in await history(store)] == [((941.25, 940.5),)]
    assert (await history(store))[0].newest_recorded_at == NOW + 1


def test_settings_text_is_canonical() -> None:
    a = settings_text((("streams", "4"), ("protocol", "tcp")))
    assert a == settings_text((("protocol", "tcp"), ("streams", "4")))
    assert a == '[["protocol","tcp"],["streams","4"]]'
    assert settings_from_text(a) == (("protocol", "tcp"), ("streams", "4"))
    assert settings_text(()) == "[]"


# Names and values a fingerprint may hold: every class of character JSON escapes or not.
TRICKY = (
    "",
    "a b",
    '"',
    "\\",
    "\x00\x01\x1f\x7f",
    "\n\r\t\b\f",
    "é",
    "日本",
    "\u2028\u2029",
    "😀",
    "\ud800",
)


def test_settings_text_stays_the_text_the_store_matches() -> None:
    """The store matches a fingerprint by its text: it is json's, character for character,
    whatever the names and values hold (a lone surrogate included)."""
    for name in TRICKY:
        for value in TRICKY:
            settings = ((name, value), ("z", name + value), (f"{name}1", "4"))
            pairs = sorted([str(n), str(v)] for n, v in settings)
            expected = json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)
            assert settings_text(settings) == expected
            if "\ud800" not in name + value:  # what the store can hold
                assert settings_from_text(expected) == tuple(map(tuple, pairs))


def test_samples_text_reads_back_exactly() -> None:
    samples = (941.25, 1e-7, -4.9305051314766004e-05, 1e22, 5e-324, -0.0, 3)
    text = samples_text(samples)
    assert [_bits(x) for x in samples_from_text(text)] == [_bits(float(x)) for x in samples]
    assert json.loads(text) == [float(x) for x in samples]  # as an older perfbot reads it
    # Never a null: what is not finite is written as json writes it.
    assert samples_text((1.0, math.nan, math.inf, -math.inf)) == "[1.0,NaN,Infinity,-Infinity]"


@pytest.mark.parametrize(
    ("text", "samples"),
    [
        ("[941.25,940.5]", (941.25, 940.5)),
        ("[1, 2]", (1.0, 2.0)),  # ints, spaced: read as floats
        ("[0.1,5e-324,-0.0,1.7976931348623157e+308]", (0.1, 5e-324, -0.0, 1.7976931348623157e308)),
        # What Python's json writes and reads, and orjson refuses: read as ever.
        ("[NaN,Infinity,-Infinity,1e400]", (math.nan, math.inf, -math.inf, math.inf)),
        ("[123456789012345678901234567890]", (1.2345678901234568e29,)),
    ],
)
def test_every_stored_samples_text_reads_back(text: str, samples: tuple[float, ...]) -> None:
    read = samples_from_text(text)
    assert all(type(x) is float for x in read)
    assert [_bits(x) for x in read] == [_bits(x) for x in samples]


def _bits(x: float) -> bytes:
    """A float exactly (-0.0 is not 0.0), any NaN as one."""
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


# A database of the previous version -----------------------------------------------------


async def test_a_version_7_sqlite_database_gains_the_measurements(tmp_path: Path) -> None:
    path = str(tmp_path / "perfbot.db")
    with sqlite3.connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        for number, statements in enumerate(MIGRATIONS[:7], start=1):
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))
        conn.execute(
            "INSERT INTO pulls (repo_id, number, updated_at) VALUES (?, 3, ?)", (REPO, NOW)
        )
        conn.execute("COMMIT")
    conn.close()
    store = SQLiteStore(path)
    try:
        await store.setup()
        assert await store.get_pull(REPO, 3) is not None
        assert await store.record_measurements([record(1)]) == 1
        assert len(await history(store)) == 1
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        (version,) = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    conn.close()
    assert version == len(MIGRATIONS) >= 8


async def test_a_version_7_postgresql_database_gains_the_measurements(pg_url: str) -> None:
    conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with conn, conn.transaction():
        await pg_migrate_to(conn, 7)
        await conn.execute(
            "INSERT INTO pulls (repo_id, number, updated_at) VALUES (%s, 3, %s)", (REPO, NOW)
        )
    store = PostgresStore(pg_url)
    try:
        await store.setup()
        assert await store.get_pull(REPO, 3) is not None
        assert await store.record_measurements([record(1)]) == 1
        assert len(await history(store)) == 1
    finally:
        await store.close()
    check = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
    async with check:
        cur = await check.execute("SELECT MAX(version) FROM schema_version")
        row = await cur.fetchone()
    assert row is not None
    assert row[0] == len(PG_MIGRATIONS) >= 8


async def test_one_attempt_of_a_run_reads_back_whole(store: Store) -> None:
    # A confirmation combines the first attempt's samples with the second's.
    await store.record_measurements(
        [
            record(9, samples=(10.0, 10.5)),
            record(9, side="head", sha="h9" * 20, samples=(9.0,)),
            record(9, side="head", sha="h9" * 20, samples=(8.0,), attempt=2),
            record(10, samples=(11.0,)),
        ]
    )
    first = await store.run_measurements(REPO, 9, 1)
    assert sorted(first, key=lambda s: s.side) == [
        RunSeries(
            "base", "lab", "tcp_rx.receiver_mbps", STREAMS_1, (10.0, 10.5), "Mbps", Better.HIGHER
        ),
        RunSeries("head", "lab", "tcp_rx.receiver_mbps", STREAMS_1, (9.0,), "Mbps", Better.HIGHER),
    ]
    assert [s.samples for s in await store.run_measurements(REPO, 9, 2)] == [(8.0,)]
    assert await store.run_measurements(REPO, 9, 3) == []
    assert await store.run_measurements(REPO + 1, 9, 1) == []
