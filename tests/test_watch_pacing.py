"""The watch opens at most one issue per repository a minute: with changes at two commits,
one issue is opened and the job is sent back for the other (``Paced``), which the next
run after the minute opens; nothing is dropped. Handlers called directly, on one store."""

from __future__ import annotations

import json
import random

import pytest

from perfbot.app.watch_issues import ISSUE_LABEL, OPEN_PACE_SECONDS, Paced
from tests.harness import REPO_ID, zip_of
from tests.test_handlers import Bench, bench

__all__ = ["bench"]


def two_steps(index: int) -> bytes:
    """Two metrics, ±1 % noise: one drops 6 % at commit 15, the other at commit 30."""
    rng = random.Random(index)
    metrics = [
        {
            "name": "early.mbps",
            "value": 100 * (0.94 if index >= 15 else 1) * (1 + rng.gauss(0, 0.01)),
        },
        {
            "name": "late.mbps",
            "value": 100 * (0.94 if index >= 30 else 1) * (1 + rng.gauss(0, 0.01)),
        },
    ]
    document = {"perfbot": 1, "platform": "qemu_x86", "metrics": metrics}
    return zip_of({"head/qemu_x86/report.json": json.dumps(document)})


def watch_payload(head_sha: str, run_id: int) -> dict[str, object]:
    return {
        "version": 2,
        "repo": {"id": REPO_ID, "owner": "acme", "name": "widget"},
        "branch": "main",
        "head_sha": head_sha,
        "run_id": run_id,
        "run_attempt": 1,
    }


async def test_a_second_issue_waits_for_the_repositorys_minute(bench: Bench) -> None:
    world = bench.world
    shas = [commit.sha for commit in world.commits(*[f"commit {i}" for i in range(45)])]
    for index, sha in enumerate(shas):
        run = bench.fake.add_run(world.repo, 3000 + index, sha, "main", event="push")
        bench.fake.add_artifact(world.repo, run, "perf-report", two_steps(index))
        reason = await bench.run("workflow_run", bench.run_payload(run), f"push-{index}")
        assert reason.endswith("watch queued")
        bench.clock[0] += 600  # a push every ten minutes
    last = watch_payload(shas[-1], 3000 + len(shas) - 1)
    with pytest.raises(Paced) as paced:
        await bench.run("perfbot_watch", last, "watch-1")
    assert paced.value.retry_after == OPEN_PACE_SECONDS
    assert "1 issue opened, 1 issue held back" in str(paced.value)
    (first,) = [i for i in world.repo.issues.values() if ISSUE_LABEL in i.labels]
    assert shas[15][:7] in first.title
    # Within the minute the other still waits; after it, the job run again opens it.
    bench.clock[0] += OPEN_PACE_SECONDS / 2
    with pytest.raises(Paced):
        await bench.run("perfbot_watch", last, "watch-1")
    bench.clock[0] += OPEN_PACE_SECONDS
    reason = await bench.run("perfbot_watch", last, "watch-1")
    assert "1 issue opened" in reason
    issues = sorted(
        (i for i in world.repo.issues.values() if ISSUE_LABEL in i.labels), key=lambda i: i.number
    )
    assert [i.title.rsplit("`", 2)[1] for i in issues] == [shas[15][:7], shas[30][:7]]
    # Run once more, nothing new: both issues are edited, none opened.
    reason = await bench.run("perfbot_watch", last, "watch-2")
    assert "2 issues unchanged" in reason
    assert len([i for i in world.repo.issues.values() if ISSUE_LABEL in i.labels]) == 2
