"""The App records both sides of every report in the measurement store, and forgets them:
with the repository, with the installation, and after the retention (end to end against
the fake GitHub); and the retention setting."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest

from perfbot.app import measurements
from perfbot.app.configcache import ConfigCache
from perfbot.app.context import JobContext
from perfbot.app.measurements import (
    DAY_SECONDS,
    record_report_measurements,
    report_records,
    series_keys,
)
from perfbot.app.settings import Settings, SettingsError
from perfbot.engine.read.sides import Series, SideReport
from perfbot.github.installation import Installation
from perfbot.github.types import PullInfo
from perfbot.model import Better, Scale
from perfbot.store import SQLiteStore
from perfbot.store.measurements import CommitSamples, MeasurementRecord, SeriesKey, commit_samples
from tests.harness import (
    INSTALLATION,
    REPO_ID,
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    regressed,
    wait_idle,
    wait_until,
)

HEAD = "a" * 40
BASE = "b" * 40
COLUMNS = (
    "repo_id, repo_full_name, installation_id, platform, metric, unit, better, scale, side,"
    " sha, run_id, run_attempt, workflow_name, event, branch, pr_number, from_fork, samples,"
    " settings"
)


@pytest.fixture
def world() -> World:
    world = World.create()
    world.pull(7, HEAD).base_sha = BASE
    return world


def post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> str:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


def post_run(client: httpx.Client, world: World, run_id: int) -> str:
    pull = world.fake.repo(world.repo).pulls[7]
    return post(client, *world.delivery(world.measured_run(pull, run_id)))


def rows(database: Path, where: str = "1 = 1") -> list[dict[str, Any]]:
    """The measurements stored in the service's database, read beside it."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        cursor = conn.execute(
            f"SELECT {COLUMNS} FROM measurements WHERE {where} ORDER BY side, metric"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_a_completed_run_records_both_sides_with_their_commits(
    world: World, tmp_path: Path
) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        delivery = post_run(client, world, 1001)
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the comment")
        wait_idle(client.get)
        assert_done(database, delivery, "up to date")

    stored = rows(database)
    head_values = regressed()
    assert len(stored) == 2 * len(ZPERF_BASE)
    for row in stored:
        base = row["side"] == "base"
        assert row | {"metric": None, "samples": None, "side": None} == {
            "repo_id": REPO_ID,
            "repo_full_name": "acme/widget",
            "installation_id": INSTALLATION,
            "platform": "qemu_x86",
            "metric": None,
            "unit": "Mbps",
            "better": "higher",
            "scale": "ratio",
            "side": None,
            "sha": BASE if base else HEAD,
            "run_id": 1001,
            "run_attempt": 1,
            "workflow_name": "net-perf",
            "event": "pull_request",
            "branch": "main" if base else "feature-7",
            "pr_number": 7,
            "from_fork": 0,
            "samples": None,
            "settings": "[]",
        }
        expected = (ZPERF_BASE if base else head_values)[row["metric"]]
        assert row["samples"] == f"[{round(expected, 4)!r}]"
    assert {row["side"] for row in stored} == {"base", "head"}


def test_a_redelivered_run_keeps_one_row_per_side_and_metric(world: World, tmp_path: Path) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        pull = world.fake.repo(world.repo).pulls[7]
        body, headers = world.delivery(world.measured_run(pull, 1001))
        first = post(client, body, headers)
        wait_idle(client.get)
        # GitHub's redelivery carries a new delivery id with the same body.
        again = {**headers, "X-GitHub-Delivery": first + "-again"}
        post(client, body, again)
        wait_idle(client.get)
        assert_done(database, first + "-again")
    assert len(rows(database)) == 2 * len(ZPERF_BASE)


def test_a_fork_run_is_recorded_as_from_a_fork(tmp_path: Path) -> None:
    world = World.create()
    world.pull(8, HEAD, fork=True)
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        pull = world.fake.repo(world.repo).pulls[8]
        post(client, *world.delivery(world.measured_run(pull, 1002)))
        wait_until(lambda: len(world.bot_comments(8)) == 1, what="the comment")
        wait_idle(client.get)
    stored = rows(database)
    assert stored
    assert {row["from_fork"] for row in stored} == {1}


def test_a_failure_to_record_never_stops_the_comment(world: World, tmp_path: Path) -> None:
    database = tmp_path / "db"
    asyncio.run(_setup(database))
    with contextlib.closing(sqlite3.connect(database)) as conn:
        conn.execute("DROP TABLE measurements")  # every insert fails now
        conn.commit()
    with in_process_service(world, database) as client:
        delivery = post_run(client, world, 1001)
        wait_until(lambda: len(world.bot_comments(7)) == 1, what="the comment")
        wait_idle(client.get)
        assert_done(database, delivery, "up to date")


@pytest.mark.parametrize("event", ["installation", "installation_repositories"])
def test_measurements_go_with_the_repository(world: World, tmp_path: Path, event: str) -> None:
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        post_run(client, world, 1001)
        wait_idle(client.get)
        assert rows(database)
        delivery = post(client, *world.uninstall_delivery(event, [REPO_ID]))
        wait_idle(client.get)
        assert_done(database, delivery, "forgot the pull requests of 1 repositories")
    assert rows(database) == []


def test_a_deleted_installation_takes_measurements_its_payload_does_not_list(
    world: World, tmp_path: Path
) -> None:
    # An installation on all repositories lists none when deleted.
    database = tmp_path / "db"
    asyncio.run(_record(database, [_old(REPO_ID + 1, at=time.time())]))
    with in_process_service(world, database) as client:
        post_run(client, world, 1001)
        wait_idle(client.get)
        assert len(rows(database)) == 2 * len(ZPERF_BASE) + 1
        delivery = post(client, *world.uninstall_delivery("installation", []))
        wait_idle(client.get)
        assert_done(database, delivery, f"forgot the measurements of installation {INSTALLATION}")
    assert rows(database) == []


def test_measurements_older_than_the_retention_are_purged(world: World, tmp_path: Path) -> None:
    database = tmp_path / "db"
    now = time.time()
    asyncio.run(
        _record(
            database,
            [_old(1, at=now - 31 * DAY_SECONDS), _old(2, at=now - 29 * DAY_SECONDS)],
        )
    )
    assert len(rows(database)) == 2
    with in_process_service(world, database, PERFBOT_MEASUREMENT_RETENTION_DAYS="30"):
        wait_until(lambda: len(rows(database)) == 1, what="the purge at start-up")
    assert [row["run_id"] for row in rows(database)] == [2]


def test_the_retention_defaults_to_180_days_and_takes_whole_days() -> None:
    env = {"PERFBOT_APP_ID": "1", "PERFBOT_PRIVATE_KEY": _PEM, "PERFBOT_WEBHOOK_SECRET": "s"}
    assert Settings.from_env(env).measurement_retention_days == 180
    setting = "PERFBOT_MEASUREMENT_RETENTION_DAYS"
    assert Settings.from_env({**env, setting: " 30 "}).measurement_retention_days == 30
    for bad in ("0", "3651", "1.5", "-3", "forever", "٣"):
        with pytest.raises(SettingsError, match=rf"^{setting} must be whole days from 1 to 3650"):
            Settings.from_env({**env, setting: bad})


_PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"


def _old(run_id: int, *, at: float) -> MeasurementRecord:
    return MeasurementRecord(
        repo_id=REPO_ID if run_id < REPO_ID else run_id,
        repo_full_name="acme/widget",
        installation_id=INSTALLATION,
        platform="qemu_x86",
        metric="tcp4_mbps",
        unit="Mbps",
        better=Better.HIGHER,
        scale=Scale.RATIO,
        side="base",
        sha=BASE,
        run_id=run_id,
        run_attempt=1,
        workflow_id=None,
        workflow_name="net-perf",
        event="pull_request",
        branch="main",
        pr_number=3,
        samples=(5.97,),
        settings=(),
        recorded_at=at,
    )


async def _setup(database: Path) -> None:
    store = SQLiteStore(str(database))
    try:
        await store.setup()
    finally:
        await store.close()


async def _record(database: Path, records: list[MeasurementRecord]) -> None:
    store = SQLiteStore(str(database))
    try:
        await store.setup()
        assert await store.record_measurements(records) == len(records)
    finally:
        await store.close()


# record_report_measurements on its own ---------------------------------------------------


@dataclass(frozen=True)
class _Run:
    id: int = 1001
    attempt: int = 2
    event: str = "pull_request"
    head_sha: str = HEAD
    head_branch: str = "feature-7"
    head_repo_id: int | None = REPO_ID
    repo_id: int = REPO_ID
    workflow_name: str = "net-perf"
    full_name: str = "acme/widget"


_PULL = PullInfo(
    number=7,
    state="open",
    head_sha=HEAD,
    head_ref="feature-7",
    head_repo_id=REPO_ID,
    base_repo_id=REPO_ID,
    base_ref="main",
    base_sha=BASE,
    labels=(),
)


def _side(metrics: int, samples: int = 1) -> SideReport:
    side = SideReport()
    for n in range(metrics):
        side.series[("qemu_x86", f"m{n:03d}")] = Series(
            "Mbps", Better.HIGHER, [float(n)] * samples, Scale.COUNT, (("streams", "1"),)
        )
    return side


async def _recorded(
    sides: tuple[SideReport, SideReport] | None,
    *,
    app_id: int = 4242,
    deleted: bool = False,
    run: _Run | None = None,
) -> tuple[int, list[CommitSamples]]:
    store = SQLiteStore(":memory:")
    await store.setup()
    try:
        if deleted:
            await store.set_suspended(INSTALLATION, True, 1.0, final=True)
        ctx = JobContext(
            delivery_id="d1",
            installation=cast(Installation, SimpleNamespace(id=INSTALLATION, calls_started=0)),
            store=store,
            app_id=app_id,
            bot_login=lambda: asyncio.sleep(0, "perfbot[bot]"),
            configs=ConfigCache(),
            repo_disabled=lambda _: False,
            now=lambda: 5_000.0,
            worker="w1",
            log=logging.LoggerAdapter(logging.getLogger("test"), {}),
        )
        stored = await record_report_measurements(ctx, run or _Run(), _PULL, sides)
        groups = await commit_samples(
            store,
            REPO_ID,
            "qemu_x86",
            "m000",
            (("streams", "1"),),
            exclude_run_id=None,
            max_commits=10,
            max_rows=10,
            include_forks=True,
        )
        return stored, groups
    finally:
        await store.close()


def test_each_side_is_recorded_at_its_commit_with_its_fingerprint() -> None:
    stored, groups = asyncio.run(_recorded((_side(3, samples=2), _side(3))))
    assert stored == 6
    # One time for both: the later row (head, written after base) first.
    assert groups == [
        CommitSamples(HEAD, ((0.0,),), 5_000.0),
        CommitSamples(BASE, ((0.0, 0.0),), 5_000.0),
    ]


def test_nothing_is_recorded_without_a_report_or_an_installation() -> None:
    assert asyncio.run(_recorded(None)) == (0, [])
    assert asyncio.run(_recorded((_side(3), _side(3)), deleted=True)) == (0, [])
    assert asyncio.run(_recorded((_side(3), _side(3))))[0] == 6  # the control


def test_a_deleted_fork_counts_as_a_fork() -> None:
    # No head repository any more: untrusted like any fork.
    run = _Run(head_repo_id=None)
    records = report_records(run, _PULL, (_side(1), _side(1)), INSTALLATION, 1.0)
    assert [r.from_fork for r in records] == [True, True]
    assert [r.from_fork for r in report_records(_Run(), _PULL, (_side(1), _side(1)), 1, 1.0)] == [
        False,
        False,
    ]


def test_a_flood_of_series_or_samples_is_cut_at_the_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(measurements, "MAX_RECORDED_ROWS", 5)
    records = report_records(_Run(), _PULL, (_side(4), _side(4)), INSTALLATION, 1.0)
    # Whole base side first, then the head side's first series, in name order.
    assert [(r.side, r.metric) for r in records] == [
        *(("base", f"m{n:03d}") for n in range(4)),
        ("head", "m000"),
    ]
    monkeypatch.setattr(measurements, "MAX_RECORDED_ROWS", 1000)
    monkeypatch.setattr(measurements, "MAX_RECORDED_SAMPLES", 25)
    records = report_records(_Run(), _PULL, (_side(4, samples=10), _side(4)), INSTALLATION, 1.0)
    assert sum(len(r.samples) for r in records) == 20


def test_series_keys_name_each_setting_a_metric_ran_with() -> None:
    base, head = _side(2), _side(2)
    head.series[("qemu_x86", "m001")].settings = (("streams", "4"),)
    assert series_keys((base, head)) == [
        SeriesKey("qemu_x86", "m000", (("streams", "1"),)),
        SeriesKey("qemu_x86", "m001", (("streams", "1"),)),
        SeriesKey("qemu_x86", "m001", (("streams", "4"),)),
    ]


def test_a_large_report_is_recorded_whole() -> None:
    # Over INLINE_SERIES: its rows are made in a thread, with the same result.
    assert measurements.INLINE_SERIES < 2 * 300
    stored, groups = asyncio.run(_recorded((_side(300), _side(300))))
    assert stored == 600
    assert [g.sha for g in groups] == [HEAD, BASE]
