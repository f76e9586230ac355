"""perfbot.app.confirm.request when the job that asked is run again.

Found by review: the worker retries a job whose later step raised a retryable error (the
comment's POST met a GitHub 502) from the start, and the once-per-commit lock is taken by
an owner naming the run and attempt, so the retry took it again and asked GitHub for a
second automatic re-run of the same head commit (or, GitHub refusing while attempt 2 ran,
unlocked attempt 2's mark, so the confirmation was judged alone).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from perfbot.app import confirm
from perfbot.app.context import JobContext
from perfbot.app.jobs import Run
from perfbot.engine.judge.judgement import EarlierAttempt
from perfbot.engine.judge.notices import NoConfirmation, NotConfirmed
from perfbot.github.errors import GitHubError, GitHubUnavailable
from perfbot.github.types import PullInfo
from perfbot.store import open_store
from perfbot.store.base import Store

HEAD = "c" * 40
RUN = Run(
    id=7001,
    attempt=1,
    number=1,
    event="pull_request",
    status="completed",
    conclusion="success",
    head_sha=HEAD,
    head_branch="feature",
    head_repo_id=500,
    run_repo_id=500,
    repo_id=500,
    owner="acme",
    name="widget",
    workflow_name="net-perf",
    workflow_path=".github/workflows/net-perf.yml",
    html_url="https://github.test/acme/widget/actions/runs/7001",
    hinted_pulls=(7,),
)
PULL = PullInfo(7, "open", HEAD, "feature", 500, 500, "main", "b" * 40, ())
KEYS = (("lab-board", "udp.receiver_mbps"),)


class Installation:
    def __init__(self, refuse: bool = False) -> None:
        self.reruns: list[int] = []
        self.refuse = refuse

    async def rerun_workflow_run(self, owner: str, name: str, run_id: int) -> None:
        self.reruns.append(run_id)
        if self.refuse:
            raise GitHubError("This workflow is already running", status=403)


class Context:
    """What request() uses of a JobContext."""

    def __init__(self, store: Store, installation: Installation) -> None:
        self.store = store
        self.installation = installation
        self.log = logging.getLogger("test")

    def now(self) -> float:
        return 1_000_000.0

    async def write_refused(self, owner: str, name: str, pull: object = None) -> str | None:
        return None


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = open_store(str(tmp_path / "db"))
    await store.setup()
    try:
        yield store
    finally:
        await store.close()


def job_context(store: Store, installation: Installation) -> JobContext:
    return cast(JobContext, Context(store, installation))


async def test_a_retried_job_asks_for_no_second_re_run(store: Store) -> None:
    installation = Installation()
    ctx = job_context(store, installation)
    assert await confirm.request(ctx, RUN, PULL, KEYS) is None
    # The same job again (the worker retries it from the start): still confirming.
    assert await confirm.request(ctx, RUN, PULL, KEYS) is None
    assert installation.reruns == [RUN.id]
    # Attempt 2 is still known as perfbot's confirmation.
    second = Run(**{**{f: getattr(RUN, f) for f in RUN.__slots__}, "attempt": 2})
    assert await store.mark_holder(f"confirming:{RUN.repo_id}:{RUN.id}:2", ctx.now()) == (
        confirm.OWNER
    )
    assert await confirm.earlier_attempt(ctx, second) == EarlierAttempt([], [])


async def test_a_refused_re_run_can_be_asked_again_by_the_retried_job(store: Store) -> None:
    refusing = Installation(refuse=True)
    ctx = job_context(store, refusing)
    refused = NotConfirmed(NoConfirmation.GITHUB_REFUSED)
    assert await confirm.request(ctx, RUN, PULL, KEYS) == refused
    accepting = Installation()
    ctx = job_context(store, accepting)
    assert await confirm.request(ctx, RUN, PULL, KEYS) is None
    assert accepting.reruns == [RUN.id]


async def test_another_run_of_the_commit_gets_no_re_run(store: Store) -> None:
    installation = Installation()
    ctx = job_context(store, installation)
    assert await confirm.request(ctx, RUN, PULL, KEYS) is None
    other = Run(**{**{f: getattr(RUN, f) for f in RUN.__slots__}, "id": RUN.id + 1})
    assert await confirm.request(ctx, other, PULL, KEYS) == NotConfirmed(
        NoConfirmation.ONCE_ALREADY
    )
    assert installation.reruns == [RUN.id]


async def test_github_unwell_leaves_the_commit_its_re_run_and_retries_the_job(
    store: Store,
) -> None:
    class Unwell(Installation):
        async def rerun_workflow_run(self, owner: str, name: str, run_id: int) -> None:
            raise GitHubUnavailable("GitHub answered 502 to a call")

    ctx = job_context(store, Unwell())
    with pytest.raises(GitHubUnavailable):
        await confirm.request(ctx, RUN, PULL, KEYS)
    # Nothing was re-run: another run of the commit (or the retried job) may still ask.
    other = Run(**{**{f: getattr(RUN, f) for f in RUN.__slots__}, "id": RUN.id + 1})
    accepting = Installation()
    assert await confirm.request(job_context(store, accepting), other, PULL, KEYS) is None
    assert accepting.reruns == [other.id]
