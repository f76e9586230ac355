"""What a watch issue says: its title and body for a plan, with the facts of its commit
(the unmeasured commits before it, the PRs that merged them) and its charts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.watch_window import Window
from perfbot.engine.judge.changes import BranchSeries, ChangeId, ChangePoint
from perfbot.engine.judge.stats import median
from perfbot.engine.judge.watch import IssuePlan, SeriesKey, baseline
from perfbot.engine.show.watch import (
    IssueFacts,
    PullRef,
    WatchedChange,
    issue_body,
    issue_title,
)
from perfbot.store.watched import WatchedChange as Told

# The suspect commits whose merging PRs are looked up for an issue (a REST call each).
MAX_PULL_LOOKUPS: Final = 3


@dataclass(frozen=True, slots=True)
class Watching:
    """What every issue of one watch run is written with."""

    job: WatchJob
    window: Window
    told: Mapping[ChangeId, Told]  # the open changes, by their identity now
    accepted: Mapping[SeriesKey, str]  # each series' baseline commit
    permission: str  # who may /perfbot accept


async def words(ctx: JobContext, watch: Watching, plan: IssuePlan) -> tuple[str, str]:
    """The issue's title and body for ``plan``."""
    changes = [change for change, _ in plan.changes]
    first = changes[0]
    facts = await _facts(ctx, watch, first)
    by_key = {(s.platform, s.metric, s.settings): s for s in watch.window.series}
    watched = [
        WatchedChange(c, _points(by_key.get((c.platform, c.metric, c.settings)), c, watch.accepted))
        for c in changes
    ]
    return issue_title(changes, first.sha), issue_body(watched, facts)


async def _facts(ctx: JobContext, watch: Watching, change: ChangePoint) -> IssueFacts:
    """Where the change is: the unmeasured commits before it, and the PRs that merged them."""
    job, chain = watch.job, watch.window.chain
    between: tuple[str, ...] = ()
    if change.previous_sha in chain and change.sha in chain:
        between = chain[chain.index(change.previous_sha) : chain.index(change.sha) + 1]
    suspects = [sha for sha in between if sha != change.previous_sha] or [change.sha]
    pulls: dict[int, PullRef] = {}
    for sha in suspects[-MAX_PULL_LOOKUPS:]:
        for pull in await ctx.installation.pulls_for_commit(job.repo.owner, job.repo.name, sha):
            pulls.setdefault(pull.number, PullRef(pull.number, pull.title))
    return IssueFacts(
        repository=f"{job.repo.owner}/{job.repo.name}",
        branch=job.branch,
        sha=change.sha,
        previous_sha=change.previous_sha,
        between=between,
        pulls=tuple(pulls.values()),
        permission=watch.permission,
    )


def _points(
    series: BranchSeries | None, change: ChangePoint, accepted: Mapping[SeriesKey, str]
) -> tuple[tuple[str, float, float], ...]:
    """The chart of the series the change was found in: each commit's median, and the
    level before or after the change (the series as judged: from its baseline on)."""
    if series is None:
        return ()
    judged = baseline(series, accepted.get((series.platform, series.metric, series.settings)))
    points = []
    for index, commit in enumerate(judged.commits):
        if not commit.samples:
            continue
        level = change.before.value if index < change.index else change.after.value
        points.append((commit.sha[:7], median(commit.samples), level))
    return tuple(points)
