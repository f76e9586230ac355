"""The App records both sides of every report in the measurement store, and forgets them:
with the repository, with the installation, and after the retention (end to end against
the fake GitHub); and the retention setting."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from perfbot.app.measurements import DAY_SECONDS
from perfbot.app.settings import Settings, SettingsError
from perfbot.model import Better, Scale
from perfbot.store import SQLiteStore
from perfbot.store.measurements import MeasurementRecord
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
