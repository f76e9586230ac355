"""The branch's series a push run touched, as the watch judges them: every stored row of
them on the branch, in the branch's first-parent order.

Read from the store: the run's own series (``Store.run_measurements``: what it touched),
and every row of those series on the branch: its pushes and the base sides of PRs against
it, never a fork's, never another repository's (``Store.branch_history``). Ordered by
GitHub: runs finish out of order, and a commit may be measured twice or never, so the
order is the branch's first parents from the run's head back to the oldest commit of the
window (one comparison, ``compare_commits``); a measured commit that is not on that line
(a force-pushed one) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.repoconfig import WatchConfig
from perfbot.engine.judge import noise
from perfbot.engine.judge.changes import BranchSeries, MeasuredCommit
from perfbot.github.errors import GitHubError
from perfbot.github.types import CommitInfo
from perfbot.store.measurements import (
    MAX_HISTORY_COMMITS,
    MAX_HISTORY_ROWS,
    CommitSamples,
    RunSeries,
    SeriesKey,
)

# The most series one watch judges: a report's series beyond this are not watched.
MAX_WATCHED_SERIES: Final = 2000
# The most comparisons one watch asks GitHub for, to find the oldest measured commit.
MAX_COMPARISONS: Final = 4


@dataclass(frozen=True, slots=True)
class Window:
    """The series a push run touched, oldest commit first, and the branch's commits in
    first-parent order (oldest first) as far back as the oldest measured one."""

    series: tuple[BranchSeries, ...]
    chain: tuple[str, ...]


async def branch_window(ctx: JobContext, job: WatchJob, watch: WatchConfig) -> Window | str:
    """The window of ``job``'s series that ``watch`` watches, or why there is none."""
    touched = [
        s
        for s in await ctx.store.run_measurements(job.repo.id, job.run_id, job.run_attempt)
        if s.side == "push" and watch.watched(s.metric)
    ][:MAX_WATCHED_SERIES]
    if not touched:
        return f"push run {job.run_id} recorded no watched series"
    keys = [SeriesKey(s.platform, s.metric, s.settings) for s in touched]
    history = await ctx.store.branch_history(
        job.repo.id,
        job.branch,
        keys,
        max_commits=MAX_HISTORY_COMMITS,
        max_rows=MAX_HISTORY_ROWS,
    )
    measured = {c.sha: c.newest_recorded_at for commits in history.values() for c in commits}
    oldest = min(measured, key=lambda sha: (measured[sha], sha)) if measured else job.head_sha
    try:
        chain = await first_parents(ctx, job, oldest)
        # Runs finish out of order: the commit recorded first need not be the oldest. The
        # comparison is made again from the earliest measured commit the line missed, while
        # that lengthens it (a commit not on the branch any more never does).
        for _ in range(MAX_COMPARISONS - 1):
            missed = [sha for sha in measured if sha not in chain]
            if not missed:
                break
            longer = await first_parents(ctx, job, min(missed, key=lambda s: (measured[s], s)))
            if len(longer) <= len(chain):
                break
            chain = longer
    except GitHubError as exc:
        if exc.retryable or exc.status not in (404, 422):
            raise
        # A commit GitHub no longer knows (force-pushed away) or cannot compare: without
        # the branch's order nothing can be judged, and guessing it would blame a commit.
        return (
            f"the order of {job.branch} from {oldest[:7]} to {job.head_sha[:7]} is unknown "
            f"(GitHub answered {exc.status}): nothing judged"
        )
    series = tuple(
        _series(s, history.get(key, []), chain) for s, key in zip(touched, keys, strict=True)
    )
    return Window(series, chain)


async def first_parents(ctx: JobContext, job: WatchJob, oldest: str) -> tuple[str, ...]:
    """The branch's commits from ``oldest`` to the run's head, first parents only."""
    if oldest == job.head_sha:
        return (job.head_sha,)
    comparison = await ctx.installation.compare_commits(
        job.repo.owner, job.repo.name, oldest, job.head_sha
    )
    return first_parent_chain(comparison.commits, job.head_sha, oldest)


def first_parent_chain(commits: Sequence[CommitInfo], head: str, base: str) -> tuple[str, ...]:
    """``base``, then the first parents of ``head`` down to it, oldest first (``commits``:
    GitHub's comparison, any order). A commit merged in from a side branch is no part of
    the branch's own line; a head that does not descend from ``base`` gives what is found."""
    parents = {commit.sha: commit.parents for commit in commits}
    line: list[str] = []
    sha: str | None = head
    while sha is not None and sha in parents and sha != base and len(line) <= len(parents):
        line.append(sha)
        sha = parents[sha][0] if parents[sha] else None
    return (base, *reversed(line)) if sha == base else tuple(reversed(line))


def _series(run: RunSeries, commits: Sequence[CommitSamples], chain: Sequence[str]) -> BranchSeries:
    """One series in chain order: each commit's samples, every run of it together."""
    by_sha = {c.sha: c for c in commits}
    ordered = [by_sha[sha] for sha in chain if sha in by_sha]
    groups = [[x for samples in c.runs for x in samples] for c in ordered]
    learned = noise.learned(groups, run.scale, f"{sum(map(len, groups))} measurements")
    return BranchSeries(
        platform=run.platform,
        metric=run.metric,
        unit=run.unit,
        better=run.better,
        commits=tuple(
            MeasuredCommit(c.sha, tuple(x for samples in c.runs for x in samples)) for c in ordered
        ),
        scale=run.scale,
        settings=run.settings,
        noise=learned,
    )
