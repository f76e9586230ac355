"""Push runs on the default branch are recorded in the measurement store and post nothing
(end to end against the fake GitHub); every other push run ends DONE with its reason."""

from __future__ import annotations

import contextlib
import csv
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest

from perfbot.app import routes
from perfbot.app.download import download_report
from perfbot.app.handlers import push as push_handler
from perfbot.app.job_payloads import encode
from perfbot.app.jobs import PullRunCompleted, PushRunCompleted, Run
from perfbot.app.measurements import learned_noise
from perfbot.app.triage import parse_delivery
from perfbot.cli import main
from perfbot.engine.read.sides import ReportFile, read_side
from perfbot.github.types import PullInfo
from perfbot.sandbox.fakegithub import Run as FakeRun
from perfbot.store import open_store
from perfbot.store.export import HistoryQuery
from tests import hostile
from tests.harness import (
    FORK_REPO_ID,
    INSTALLATION,
    REPO_ID,
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    wait_idle,
    zip_of,
    zperf_log,
)
from tests.test_handlers import Bench

MAIN_SHAS = [f"{index:x}" * 40 for index in range(1, 6)]


def post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> str:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


def push_run(
    world: World,
    run_id: int,
    sha: str,
    *,
    branch: str = "main",
    files: dict[str, str | bytes] | None = None,
    name: str = "net-perf",
) -> FakeRun:
    run = world.fake.add_run(world.repo, run_id, sha, branch, event="push", name=name)
    values = push_values(run_id)
    report = files if files is not None else {"head/qemu_x86/zperf.log": zperf_log(values)}
    world.fake.add_artifact(world.repo, run, "perf-report", zip_of(report))
    return run


def push_values(run_id: int) -> dict[str, float]:
    """main's values in run ``run_id``: a few per mille of noise around ZPERF_BASE."""
    return {metric: value * (1 + run_id % 7 / 1000) for metric, value in ZPERF_BASE.items()}


def rows(database: Path) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        cursor = conn.execute(
            "SELECT side, sha, branch, event, pr_number, run_id, platform, metric, samples"
            " FROM measurements ORDER BY run_id, metric"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_push_runs_on_main_are_recorded_and_post_nothing(tmp_path: Path) -> None:
    world = World.create()
    world.pull(7, "a" * 40)  # an open PR: nothing may land on it either
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        deliveries = [
            post(client, *world.delivery(push_run(world, 2000 + index, sha)))
            for index, sha in enumerate(MAIN_SHAS)
        ]
        wait_idle(client.get)
        for delivery, sha in zip(deliveries, MAIN_SHAS, strict=True):
            reason = assert_done(database, delivery, "recorded 4 series of main@", sha[:7])
            assert reason is not None
            assert reason.endswith("(push run): nothing to comment; watch queued")
    assert world.fake.comments == {}
    assert world.fake.check_runs == {}
    stored = rows(database)
    assert len(stored) == 5 * len(ZPERF_BASE)
    assert {(r["side"], r["branch"], r["event"], r["pr_number"]) for r in stored} == {
        ("push", "main", "push", None)
    }
    assert {r["sha"] for r in stored} == set(MAIN_SHAS)
    first = [r for r in stored if r["run_id"] == 2000]
    assert {r["metric"]: json.loads(r["samples"]) for r in first} == {
        metric: [round(value, 4)] for metric, value in push_values(2000).items()
    }
    exported_history(database)


def exported_history(database: Path) -> None:
    """`perfbot history` exports the five push runs' rows as CSV, JSON and SVG."""
    out = database.parent
    common = ["history", "--repo", "acme/widget", "--database", str(database), "--output"]
    assert main([*common, str(out / "h.csv")]) == 0
    assert main([*common, str(out / "h.json"), "--format", "json", "--branch", "main"]) == 0
    svg_args = ["--format", "svg", "--metric", "tcp4*", "--platform", "qemu_x86"]
    assert main([*common, str(out / "h.svg"), *svg_args]) == 0

    with (out / "h.csv").open(newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 5 * len(ZPERF_BASE)
    assert [row["sha"] for row in table[:: len(ZPERF_BASE)]] == MAIN_SHAS  # oldest first
    tcp4 = [row for row in table if row["metric"] == "tcp4_mbps"]
    assert [float(row["median"]) for row in tcp4] == [
        round(push_values(2000 + index)["tcp4_mbps"], 4) for index in range(5)
    ]
    assert {(r["repository"], r["branch"], r["side"], r["pr_number"], r["n"]) for r in table} == {
        ("acme/widget", "main", "push", "", "1")
    }
    assert tcp4[0]["run_id"] == "2000"
    assert tcp4[0]["run_attempt"] == "1"
    assert tcp4[0]["platform"] == "qemu_x86"
    assert tcp4[0]["unit"] == "Mbps"
    assert tcp4[0]["recorded_at"].endswith("Z")

    document = json.loads((out / "h.json").read_text())
    assert document["truncated"] is False
    assert [row["sha"] for row in document["rows"]] == [row["sha"] for row in table]
    assert document["rows"][0]["samples"] == [float(table[0]["samples"])]

    root = ElementTree.parse(out / "h.svg").getroot()
    names = {element.tag.rpartition("}")[2] for element in root.iter()}
    assert "script" not in names
    texts = [element.text or "" for element in root.iter() if element.tag.endswith("text")]
    assert [sha[:7] for sha in MAIN_SHAS] == [t for t in texts if t in {s[:7] for s in MAIN_SHAS}]
    assert any("tcp4_mbps" in t for t in texts)


@pytest.mark.parametrize(
    ("branch", "files", "name", "config", "words"),
    [
        ("feature-x", None, "net-perf", None, ("not on the default branch (main)",)),
        ("main", None, "build", "workflows: [net-perf]\n", ("'build'", "not a configured")),
        ("main", None, "net-perf", "enabled: false\n", ("disabled", "configuration")),
        (
            "main",
            {"base/qemu_x86/zperf.log": zperf_log(ZPERF_BASE)},
            "net-perf",
            None,
            ("not recorded", "base/ but no head/"),
        ),
        ("main", {"../evil": "x"}, "net-perf", None, ("not recorded",)),
    ],
)
def test_other_push_runs_record_nothing(
    tmp_path: Path,
    branch: str,
    files: dict[str, str | bytes] | None,
    name: str,
    config: str | None,
    words: tuple[str, ...],
) -> None:
    world = World.create({".github/perfbot.yml": config} if config else None)
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        run = push_run(world, 3000, MAIN_SHAS[0], branch=branch, files=files, name=name)
        delivery = post(client, *world.delivery(run))
        wait_idle(client.get)
        assert_done(database, delivery, *words)
    assert rows(database) == []
    assert world.fake.comments == {}
    assert world.fake.check_runs == {}


def test_a_root_level_report_is_one_run(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    files: dict[str, str | bytes] = {"qemu_x86/zperf.log": zperf_log(ZPERF_BASE)}
    with in_process_service(world, database) as client:
        delivery = post(client, *world.delivery(push_run(world, 4000, MAIN_SHAS[1], files=files)))
        wait_idle(client.get)
        assert_done(database, delivery, "recorded 4 series of main@")
    assert {(r["side"], r["platform"]) for r in rows(database)} == {("push", "qemu_x86")}


def test_triage_queues_completed_push_runs_only_with_the_default_branch(tmp_path: Path) -> None:
    world = World.create()
    run = push_run(world, 5000, MAIN_SHAS[2])
    body, headers = world.delivery(run)
    queued = routes.job_for(parse_delivery({k.lower(): v for k, v in headers.items()}, body))
    assert queued is not None
    job = routes.decode(queued.event, queued.payload)
    assert isinstance(job, PushRunCompleted)
    assert (job.run.event, job.run.head_branch, job.run.default_branch) == ("push", "main", "main")
    started, started_headers = world.delivery(run, action="requested")
    lowered = {k.lower(): v for k, v in started_headers.items()}
    assert routes.job_for(parse_delivery(lowered, started)) is None


def test_a_version_2_workflow_run_job_still_runs() -> None:
    job = PullRunCompleted(
        "completed",
        Run(
            id=1,
            attempt=1,
            number=1,
            event="pull_request",
            status="completed",
            conclusion="success",
            head_sha="a" * 40,
            head_branch="feature",
            head_repo_id=500,
            run_repo_id=500,
            repo_id=500,
            owner="acme",
            name="widget",
            workflow_name="net-perf",
            workflow_path=".github/workflows/net-perf.yml",
            html_url="",
            hinted_pulls=(7,),
        ),
    )
    document = json.loads(encode(job))
    assert document["version"] == 3
    del document["run"]["default_branch"]
    document["version"] = 2
    assert routes.decode("workflow_run", json.dumps(document)) == job


# --- the safety checks of a PR run, on a push run (handler level) ---------------------------


def bench_push(bench: Bench, *, head_repo: tuple[str, int] | None = None, report: bytes) -> Any:
    run = bench.fake.add_run(bench.world.repo, 6000, MAIN_SHAS[3], "main", head_repo, event="push")
    bench.fake.add_artifact(bench.world.repo, run, "perf-report", report)
    return bench.run_payload(run)


async def stored_rows(bench: Bench) -> list[Any]:
    return await bench.store.export_measurements(HistoryQuery("acme/widget"))


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    """tests/test_handlers.py's bench: a handler run on the fake GitHub with a store."""
    world = World.create()
    store = open_store(str(tmp_path / "db"))
    await store.setup()
    github = world.github_app()
    try:
        yield Bench(world, store, github)
    finally:
        await github.close()
        await store.close()


GOOD = zip_of({"head/qemu_x86/zperf.log": zperf_log(ZPERF_BASE)})


async def test_a_push_run_is_recorded_by_its_handler(bench: Bench) -> None:
    reason = await bench.run("workflow_run", bench_push(bench, report=GOOD))
    assert reason == (
        f"recorded 4 series of main@{MAIN_SHAS[3][:7]} (push run): nothing to comment; watch queued"
    )
    assert {(row.side, row.sha) for row in await stored_rows(bench)} == {("push", MAIN_SHAS[3])}
    assert bench.writes() == []


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("suspended", f"installation {INSTALLATION} is suspended or uninstalled"),
        ("operator", "the operator disabled acme/widget"),
        ("fork", "is not of acme/widget itself"),
        ("bomb", "not recorded"),
        ("many members", "not recorded"),
    ],
)
async def test_a_push_run_passes_every_check_of_a_pr_run(
    bench: Bench, how: str, words: str
) -> None:
    report = {"bomb": hostile.bomb(4 * 1024 * 1024), "many members": hostile.many_members(3000)}
    head_repo = ("mallory/widget", FORK_REPO_ID) if how == "fork" else None
    payload = bench_push(bench, head_repo=head_repo, report=report.get(how, GOOD))
    if how == "suspended":
        await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
    if how == "operator":
        bench.disabled.add("acme/widget")
    reason = await bench.run("workflow_run", payload)
    assert words in reason
    assert await stored_rows(bench) == []
    assert bench.writes() == []


async def test_suspended_while_the_report_downloads_records_nothing(bench: Bench) -> None:
    payload = bench_push(bench, report=GOOD)
    real = download_report

    async def read_then_suspend(*args: Any) -> Any:
        contents = await real(*args)
        await bench.store.set_suspended(INSTALLATION, True, bench.clock[0])
        return contents

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(push_handler, "download_report", read_then_suspend)
        reason = await bench.run("workflow_run", payload)
    assert reason == (
        f"push run 6000 of main@{MAIN_SHAS[3][:7]} not recorded: installation {INSTALLATION}"
        " is suspended or uninstalled"
    )
    assert await stored_rows(bench) == []


async def test_push_runs_of_one_commit_teach_a_pr_its_noise(bench: Bench) -> None:
    """Four push runs of main@BASE scatter a little: a PR against that commit learns the
    scatter (the lead's learned_noise reads every side of the commit, push rows too)."""
    base_sha = MAIN_SHAS[4]
    for run_id in range(6100, 6104):
        values = push_values(run_id)
        run = bench.fake.add_run(bench.world.repo, run_id, base_sha, "main", event="push")
        report = zip_of({"head/qemu_x86/zperf.log": zperf_log(values)})
        bench.fake.add_artifact(bench.world.repo, run, "perf-report", report)
        reason = await bench.run("workflow_run", bench.run_payload(run), delivery=f"d{run_id}")
        assert reason.startswith("recorded 4 series")
    pull = PullInfo(7, "open", "a" * 40, "feature-7", REPO_ID, REPO_ID, "main", base_sha, ())
    pr_run = routes.decode(
        "workflow_run",
        json.dumps(
            bench.run_payload(bench.world.measured_run(bench.world.pull(7, "a" * 40), 6200))
        ),
    )
    assert isinstance(pr_run, PullRunCompleted)
    side = read_side([ReportFile("qemu_x86/zperf.log", zperf_log(ZPERF_BASE).encode())])
    installation = bench.github.installation(INSTALLATION)
    ctx = bench.context("noise", installation)
    async with installation:
        knowledge = await learned_noise(ctx, pr_run.run, pull, (side, side))
    assert set(knowledge) == {("qemu_x86", metric) for metric in ZPERF_BASE}
    noise = knowledge[("qemu_x86", "tcp4_mbps")]
    assert noise.evidence == f"4 measurements of main@{base_sha[:7]}"
    assert noise.sigma > 0
