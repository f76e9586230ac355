"""The default branch's watch, end to end in one service against the fake GitHub: forty
measured pushes to main with a −6 % step at commit 25 on a metric whose noise is ±1 %,
beside a noisy metric that never moves, open exactly one issue naming commit 25 and the
metric; it is edited, never duplicated, by later pushes and by a second replica; a reader's
``/perfbot accept`` gets 😕 and a writer's closes it; a return to the old level closes an
issue with a comment; a fork's push never feeds the series; ``watch: false`` opens nothing."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import httpx

from perfbot.app.watch_issues import ISSUE_LABEL
from perfbot.engine.show.watch import marker
from perfbot.sandbox.fakegithub import Issue
from perfbot.sandbox.fakegithub import Run as FakeRun
from tests.harness import REPO_ID, World, assert_done, in_process_service, wait_idle, zip_of

STEPPED = "udp_500M.receiver_mbps"
NOISY = "tcp_rx.receiver_mbps"
WRITER, READER = "wendy", "rita"


def levels(count: int, *, step_at: int = 25, back_at: int | None = None) -> list[float]:
    """The stepped metric's level at each commit: 500, then −6 % from ``step_at`` on (and
    back from ``back_at`` on)."""
    return [
        500.0 * (0.94 if step_at <= i and (back_at is None or i < back_at) else 1.0)
        for i in range(count)
    ]


def report(level: float, index: int, *, noisy_seed: int = 0) -> bytes:
    rng = random.Random(index * 7919 + noisy_seed)
    metrics = [
        {"name": STEPPED, "value": level * (1 + rng.gauss(0, 0.01)), "unit": "Mbps"},
        {"name": NOISY, "value": 900 * (1 + rng.gauss(0, 0.04)), "unit": "Mbps"},
    ]
    document = {"perfbot": 1, "platform": "qemu_x86", "metrics": metrics}
    return zip_of({"head/qemu_x86/report.json": json.dumps(document)})


def push(world: World, run_id: int, sha: str, data: bytes, *, fork: bool = False) -> FakeRun:
    head_repo = ("mallory/widget", 999) if fork else None
    run = world.fake.add_run(world.repo, run_id, sha, "main", event="push", head_repo=head_repo)
    world.fake.add_artifact(world.repo, run, "perf-report", data)
    return run


def post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> str:
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


def measured_main(
    world: World, client: httpx.Client, values: Sequence[float], *, first_run: int = 3000
) -> list[str]:
    """One commit on main per value, each measured by a push run; their shas."""
    shas = []
    for index, level in enumerate(values):
        (commit,) = world.commits(f"commit {first_run + index}")
        post(
            client,
            *world.delivery(push(world, first_run + index, commit.sha, report(level, index))),
        )
        shas.append(commit.sha)
    return shas


def watch_issues(world: World) -> list[Issue]:
    return [i for i in world.repo.issues.values() if ISSUE_LABEL in i.labels]


def watch_reasons(database: Path) -> list[str]:
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT reason FROM jobs WHERE event = 'perfbot_watch' AND status = 'done' ORDER BY id"
        )
        return [str(row[0]) for row in rows]


def test_a_step_on_main_opens_one_issue_that_later_pushes_edit(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        shas = measured_main(world, client, levels(40))
        wait_idle(client.get, 60, database=database)
    (issue,) = watch_issues(world)
    assert issue.app_id == world.fake.app_id
    assert issue.state == "open"
    assert issue.title.startswith(f"perfbot: `{STEPPED}` on `qemu_x86` −")
    assert issue.title.endswith(f"since `{shas[25][:7]}`")
    assert issue.body is not None
    assert issue.body.startswith(marker(shas[25]))
    assert NOISY not in issue.body  # the noisy metric never moved
    reasons = watch_reasons(database)
    assert len(reasons) == 40
    assert sum("1 issue opened" in r for r in reasons) == 1
    # Every push after it looks at the issue again: edited, or unchanged when a job before
    # it had already judged up to the branch's head (jobs run after several pushes land).
    assert sum("1 issue edited" in r or "1 issue unchanged" in r for r in reasons) >= 10
    assert sum("1 issue edited" in r for r in reasons) >= 1

    # Five more pushes, on a second replica of the same database: edited, not duplicated.
    with in_process_service(world, database) as replica:
        more = measured_main(world, replica, [500.0 * 0.94] * 5, first_run=3040)
        wait_idle(replica.get, 60, database=database)
    (again,) = watch_issues(world)
    assert again.number == issue.number
    assert again.body is not None
    assert again.body.startswith(marker(shas[25]))
    assert f"{len(shas) - 25 + len(more)} commits" in again.body  # the new level grew
    assert sum("1 issue opened" in r for r in watch_reasons(database)) == 1


def test_accept_by_a_reader_is_refused_and_by_a_writer_closes_the_issue(tmp_path: Path) -> None:
    world = World.create()
    world.fake.add_collaborator(world.repo, WRITER, "write")
    world.fake.add_collaborator(world.repo, READER, "read")
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        shas = measured_main(world, client, levels(40))
        wait_idle(client.get, 60, database=database)
        (issue,) = watch_issues(world)
        refused, body, headers = world.comment_delivery(issue.number, "/perfbot accept", READER)
        post(client, body, headers)
        wait_idle(client.get, 30, database=database)
        assert [r.content for r in refused.reactions] == ["confused"]
        assert world.repo.issues[issue.number].state == "open"
        accepted, body, headers = world.comment_delivery(
            issue.number, "/perfbot accept -- larger buffers", WRITER
        )
        accept_delivery = post(client, body, headers)
        wait_idle(client.get, 30, database=database)
        assert_done(database, accept_delivery, "accepted by wendy: 1 change(s)")
        closed = world.repo.issues[issue.number]
        assert (closed.state, closed.state_reason) == ("closed", "completed")
        said = world.fake.bot_comments(world.repo, issue.number)[-1].body
        assert said.startswith("Accepted by <code>wendy</code>: larger buffers.")
        assert [r.content for r in accepted.reactions] == ["rocket"]
        # The new level is the baseline now: more pushes at it open nothing.
        measured_main(world, client, [500.0 * 0.94] * 6, first_run=3040)
        wait_idle(client.get, 60, database=database)
    assert len(watch_issues(world)) == 1
    assert shas


def test_a_return_to_the_old_level_closes_the_issue_with_a_comment(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        measured_main(world, client, levels(36))
        wait_idle(client.get, 60, database=database)
        (issue,) = watch_issues(world)
        assert issue.state == "open"
        measured_main(world, client, [500.0] * 15, first_run=3036)
        wait_idle(client.get, 60, database=database)
    closed = world.repo.issues[issue.number]
    assert closed.state == "closed"
    said = world.fake.bot_comments(world.repo, issue.number)[-1].body
    assert "is back where it was" in said


def test_a_forks_push_never_feeds_the_series(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        (commit,) = world.commits("a fork's pretend main")
        fork_run = push(world, 2999, commit.sha, report(10.0, 0), fork=True)
        fork = post(client, *world.delivery(fork_run))
        measured_main(world, client, [500.0] * 20)
        wait_idle(client.get, 60, database=database)
        assert_done(database, fork, "ignored: push run 2999 is not of acme/widget itself")
    assert watch_issues(world) == []
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        runs = {row[0] for row in conn.execute("SELECT DISTINCT run_id FROM measurements")}
    assert 2999 not in runs
    assert len(runs) == 20


def test_watch_false_opens_nothing_and_says_so(tmp_path: Path) -> None:
    world = World.create({".github/perfbot.yml": "watch: false\n"})
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        (commit,) = world.commits("one")
        delivery = post(client, *world.delivery(push(world, 3000, commit.sha, report(500.0, 0))))
        measured_main(world, client, levels(40), first_run=3001)
        wait_idle(client.get, 60, database=database)
        assert_done(database, delivery, "recorded 2 series", "watch off")
    assert watch_issues(world) == []
    assert watch_reasons(database) == []
    assert REPO_ID


def pr_report(level: float) -> bytes:
    """A PR's report of the two metrics, both sides at ``level`` for the stepped one."""
    files = {}
    for side in ("base", "head"):
        metrics = [
            {"name": STEPPED, "value": level, "unit": "Mbps"},
            {"name": NOISY, "value": 900.0, "unit": "Mbps"},
        ]
        document = {"perfbot": 1, "platform": "qemu_x86", "metrics": metrics}
        files[f"{side}/qemu_x86/report.json"] = json.dumps(document)
    return zip_of(files)


def test_a_prs_comment_says_its_target_branch_changed_level(tmp_path: Path) -> None:
    world = World.create()
    database = tmp_path / "db"
    with in_process_service(world, database) as client:
        shas = measured_main(world, client, levels(40))
        wait_idle(client.get, 60, database=database)
        (issue,) = watch_issues(world)
        pull = world.pull(7, "f" * 40)
        post(client, *world.delivery(world.measured_run(pull, 5000, report=pr_report(470.0))))
        wait_idle(client.get, 30, database=database)
    (comment,) = world.fake.bot_comments(world.repo, 7)
    expected = (
        f"> ℹ️ <code>main</code> changed level at <code>{shas[25][:7]}</code> for a metric "
        f"of this report ([issue {issue.number}](https://github.com/acme/widget/issues/"
        f"{issue.number})): a move shown here may be that change, not this PR's."
    )
    assert expected in comment.body
