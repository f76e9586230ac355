"""A watch issue's life beyond the plan: what people and GitHub do to it. An issue closed
by hand accepts its level; a deleted one is opened again while its change stands; a
repository without issues records its changes once; a job that stopped after opening an
issue finds it by its marker (perfbot's own only) and one perfbot closed is reopened; a
write GitHub refuses leaves the other issues written; the series is judged up to the
branch's head whatever run's job it is, in first-parent order read page by page.
Handlers called directly, on one store."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest

from perfbot.app.watch_issues import ISSUE_LABEL, Paced
from perfbot.engine.show.watch import marker
from perfbot.github.errors import GitHubError
from perfbot.sandbox.fakegithub import Issue
from tests.harness import REPO_ID, zip_of
from tests.test_handlers import Bench, bench
from tests.test_watch_pacing import watch_payload

__all__ = ["bench"]

METRIC = "udp.receiver_mbps"


def report(index: int, level: float, metric: str = METRIC) -> bytes:
    rng = random.Random(index)
    value = level * (1 + rng.gauss(0, 0.01))
    document = {"perfbot": 1, "platform": "qemu_x86", "metrics": [{"name": metric, "value": value}]}
    return zip_of({"head/qemu_x86/report.json": json.dumps(document)})


def step(count: int, at: int = 25) -> list[float]:
    return [100.0 * (0.94 if i >= at else 1.0) for i in range(count)]


async def record(
    bench: Bench, levels: Sequence[float], *, first: int = 0, shas: Sequence[str] = ()
) -> list[tuple[str, int]]:
    """One push run per level (on new commits, or on ``shas``), recorded, its watch job
    left queued: (sha, run id) of each."""
    world = bench.world
    made = list(shas) or [c.sha for c in world.commits(*[f"c{first + i}" for i in levels])]
    done = []
    for index, (sha, level) in enumerate(zip(made, levels, strict=True)):
        run_id = 4000 + first + index
        run = bench.fake.add_run(world.repo, run_id, sha, "main", event="push")
        bench.fake.add_artifact(world.repo, run, "perf-report", report(first + index, level))
        reason = await bench.run("workflow_run", bench.run_payload(run), f"push-{run_id}")
        assert reason.endswith("watch queued"), reason
        bench.clock[0] += 600
        done.append((sha, run_id))
    return done


async def watch(bench: Bench, sha: str, run_id: int) -> str:
    return await bench.run("perfbot_watch", watch_payload(sha, run_id), f"watch-{run_id}")


def issues(bench: Bench) -> list[Issue]:
    found = [i for i in bench.world.repo.issues.values() if ISSUE_LABEL in i.labels]
    return sorted(found, key=lambda i: i.number)


async def opened(bench: Bench, count: int = 40) -> tuple[list[tuple[str, int]], Issue]:
    runs = await record(bench, step(count))
    reason = await watch(bench, *runs[-1])
    assert "1 issue opened" in reason, reason
    (issue,) = issues(bench)
    return runs, issue


async def test_an_issue_closed_by_hand_accepts_its_level(bench: Bench) -> None:
    runs, issue = await opened(bench)
    issue.state, issue.closed_by = "closed", "wendy"
    more = await record(bench, [94.0] * 3, first=len(runs))
    reason = await watch(bench, *more[-1])
    assert "1 issue closed by hand: accepted" in reason
    (ack,) = await bench.store.branch_acknowledgements(REPO_ID, "main")
    assert (ack.login, ack.reason, ack.sha) == (
        "wendy",
        f"closed issue #{issue.number}",
        runs[25][0],
    )
    assert await bench.store.open_changes(REPO_ID, "main") == []
    # The level is the baseline now: later pushes neither reopen it nor open another.
    writes = len(bench.writes())
    later = await record(bench, [94.0] * 3, first=len(runs) + 3)
    assert "nothing to tell" in await watch(bench, *later[-1])
    assert issues(bench) == [issue]
    assert issue.state == "closed"
    assert [w for w in bench.writes()[writes:] if "/issues" in w] == []


async def test_a_deleted_issue_is_opened_again_while_its_change_stands(bench: Bench) -> None:
    runs, issue = await opened(bench)
    del bench.world.repo.issues[issue.number]
    more = await record(bench, [94.0], first=len(runs))
    assert "1 issue found deleted" in await watch(bench, *more[-1])
    (row,) = await bench.store.issue_changes(REPO_ID, issue.number)
    assert (row.state, row.closed_reason) == ("closed", "deleted")
    bench.clock[0] += 3600
    again = await record(bench, [94.0], first=len(runs) + 1)
    assert "1 issue opened" in await watch(bench, *again[-1])
    (new,) = issues(bench)
    assert new.number != issue.number
    assert (new.body or "").startswith(marker(runs[25][0]))


async def test_a_repository_without_issues_records_its_changes_once(bench: Bench) -> None:
    bench.world.repo.has_issues = False
    runs = await record(bench, step(40))
    reason = await watch(bench, *runs[-1])
    assert "1 issue not opened (issues are disabled)" in reason
    (row,) = await bench.store.open_changes(REPO_ID, "main")
    assert (row.sha, row.issue_number) == (runs[25][0], None)
    posts = [w for w in bench.writes() if w.startswith("POST") and w.endswith("/issues")]
    assert len(posts) == 1
    bench.clock[0] += 3600
    more = await record(bench, [94.0] * 2, first=len(runs))
    assert "nothing to tell" in await watch(bench, *more[-1])
    posts = [w for w in bench.writes() if w.startswith("POST") and w.endswith("/issues")]
    assert len(posts) == 1  # not asked again at every push


async def test_an_issue_a_stopped_job_opened_is_found_by_its_marker(bench: Bench) -> None:
    fake, repo = bench.fake, bench.world.repo
    runs = await record(bench, step(40))
    sha = runs[25][0]
    # A person's issue with the same marker is not perfbot's: never taken over.
    fake.add_issue(repo, None, "copy", marker(sha) + "\nmine", labels=[ISSUE_LABEL], login="eve")
    # perfbot opened this one, and stopped before it recorded it.
    own = fake.add_issue(
        repo, None, "t", marker(sha), labels=[ISSUE_LABEL], login=fake.bot_login, app_id=fake.app_id
    )
    reason = await watch(bench, *runs[-1])
    assert "1 issue found again" in reason
    assert len(issues(bench)) == 2
    (row,) = await bench.store.open_changes(REPO_ID, "main")
    assert row.issue_number == own.number
    assert own.title.startswith(f"perfbot: `{METRIC}`")


async def test_an_issue_perfbot_closed_is_reopened_when_its_change_is_back(bench: Bench) -> None:
    fake, repo = bench.fake, bench.world.repo
    runs = await record(bench, step(40))
    closed = fake.add_issue(
        repo,
        None,
        "t",
        marker(runs[25][0]),
        labels=[ISSUE_LABEL],
        login=fake.bot_login,
        app_id=fake.app_id,
        state="closed",
    )
    closed.closed_by = fake.bot_login
    assert "1 issue reopened" in await watch(bench, *runs[-1])
    assert closed.state == "open"
    assert len(issues(bench)) == 1


async def test_a_write_github_refuses_leaves_the_other_issues_written(bench: Bench) -> None:
    world = bench.world
    shas = [c.sha for c in world.commits(*[f"c{i}" for i in range(45)])]
    for index, sha in enumerate(shas):
        run = bench.fake.add_run(world.repo, 5000 + index, sha, "main", event="push")
        data = {
            "perfbot": 1,
            "platform": "qemu_x86",
            "metrics": [
                {
                    "name": "early.mbps",
                    "value": 100
                    * (0.94 if index >= 15 else 1)
                    * (1 + random.Random(index).gauss(0, 0.01)),
                },
                {
                    "name": "late.mbps",
                    "value": 100
                    * (0.94 if index >= 30 else 1)
                    * (1 + random.Random(-index).gauss(0, 0.01)),
                },
            ],
        }
        bench.fake.add_artifact(
            world.repo, run, "perf-report", zip_of({"head/qemu_x86/report.json": json.dumps(data)})
        )
        await bench.run("workflow_run", bench.run_payload(run), f"push-{index}")
        bench.clock[0] += 600
    with pytest.raises(Paced):
        await watch(bench, shas[-1], 5044)
    bench.clock[0] += 120
    await watch(bench, shas[-1], 5044)  # the second waited for the minute
    (early,) = [i for i in issues(bench) if "early.mbps" in i.title]
    (late,) = [i for i in issues(bench) if "late.mbps" in i.title]
    bench.fake.fail_next(1, 422, path_contains=f"/issues/{early.number}")
    more = [c.sha for c in world.commits("c45")]
    run = bench.fake.add_run(world.repo, 5045, more[0], "main", event="push")
    data = {
        "perfbot": 1,
        "platform": "qemu_x86",
        "metrics": [{"name": "early.mbps", "value": 94.0}, {"name": "late.mbps", "value": 94.0}],
    }
    bench.fake.add_artifact(
        world.repo, run, "perf-report", zip_of({"head/qemu_x86/report.json": json.dumps(data)})
    )
    await bench.run("workflow_run", bench.run_payload(run), "push-45")
    reason = await watch(bench, more[0], 5045)
    assert "1 issue not written (GitHub answered 422)" in reason
    assert "1 issue edited" in reason
    assert "31 commits" not in (early.body or "")  # refused: as it was
    assert "16 commits" in (late.body or "")  # written all the same


async def test_an_older_runs_job_judges_up_to_the_branchs_head(bench: Bench) -> None:
    runs = await record(bench, step(45))
    # The job of run 30 comes last (runs finish out of order): the level after the change
    # is judged on every push since, to the head, not on the five up to run 30.
    assert "1 issue opened" in await watch(bench, *runs[30])
    (issue,) = issues(bench)
    assert "20 commits" in (issue.body or "")


async def test_a_long_line_is_read_page_by_page_in_first_parent_order(bench: Bench) -> None:
    world = bench.world
    before = await record(bench, step(40)[:20])
    # 150 unmeasured commits, and a side branch merged in (its commits are no part of the
    # line: the merge's second parent).
    world.commits(*[f"quiet {i}" for i in range(150)])
    (side,) = world.commits("side", branch="side")
    world.fake.repo(world.repo).commits[side.sha].parents = [before[-1][0]]
    after = await record(bench, step(40)[20:], first=20)
    main = world.fake.repo(world.repo)
    merge = world.fake.add_commit(world.repo, "merge side", parents=[after[-1][0], side.sha])
    assert main.branches["main"] == merge.sha
    assert "1 issue opened" in await watch(bench, *after[-1])
    (issue,) = issues(bench)
    assert issue.title.endswith(f"since `{after[5][0][:7]}`")
    pages = [r.query.get("page") for r in world.fake.requests if r.path.endswith("/commits")]
    assert pages[-2:] == ["1", "2"]


async def test_accept_writes_github_before_the_store(bench: Bench) -> None:
    """A job that stops between GitHub's writes and the store's is run again and finishes:
    the changes are still open, so the issue is closed then (store first would leave it
    open with its changes accepted)."""
    _, issue = await opened(bench)
    bench.fake.add_collaborator(bench.world.repo, "wendy", "write")
    comment = bench.fake.add_comment(bench.world.repo, issue.number, "/perfbot accept", "wendy")
    payload = bench.fake.webhook_payload_issue_comment(comment)
    bench.fake.fail_next(1, 502, path_contains=f"/issues/{issue.number}/comments")
    with pytest.raises(GitHubError):
        await bench.run("issue_comment", payload, "accept-1")
    assert len(await bench.store.open_changes(REPO_ID, "main")) == 1
    assert await bench.store.branch_acknowledgements(REPO_ID, "main") == []
    reason = await bench.run("issue_comment", payload, "accept-1")
    assert reason.startswith("accepted by wendy: 1 change(s)")
    assert issue.state == "closed"
    assert await bench.store.open_changes(REPO_ID, "main") == []
