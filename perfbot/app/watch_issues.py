"""The watch's decisions carried out: issues opened, edited and closed on GitHub, and the
store's record of every change told about.

One issue per commit (``perfbot.engine.judge.watch``). An issue about to be opened is
looked for first (perfbot's own issue with the commit's marker: a job run again after a
crash makes no second one), and opening one is paced: at most one per repository a
minute, across replicas, by a store mark. An issue held back is not recorded, so the job
(run again after the minute: ``Paced``) or the next push finds it new again: delayed,
never dropped. Before each write perfbot asks again whether it may write there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.watch_window import Window
from perfbot.engine.judge.changes import BranchSeries, ChangeId, ChangePoint
from perfbot.engine.judge.stats import median
from perfbot.engine.judge.watch import Closing, IssuePlan, SeriesKey, baseline
from perfbot.engine.show.watch import (
    IssueFacts,
    PullRef,
    WatchedChange,
    gone_comment,
    issue_body,
    issue_title,
    marker,
    returned_comment,
)
from perfbot.errors import PerfbotError
from perfbot.github.types import StateReason
from perfbot.store.watched import ClosedReason
from perfbot.store.watched import WatchedChange as Told

# The label of perfbot's watch issues: they are found again by it and their marker.
ISSUE_LABEL: Final = "perfbot: performance"
# At most one issue opened per repository in this time (GitHub's secondary limits; and a
# change at several commits at once is a person's hour, not a minute's flood).
OPEN_PACE_SECONDS: Final = 60.0
# The suspect commits whose merging PRs are looked up for an issue (a REST call each).
MAX_PULL_LOOKUPS: Final = 3
_CLOSED: Final[dict[Closing, ClosedReason]] = {
    Closing.RETURNED: "returned",
    Closing.GONE: "gone",
}


class Paced(PerfbotError):
    """An issue waits for the repository's minute: the job is run again after it."""

    retryable = True

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Watching:
    """What every issue of one watch run is written with."""

    job: WatchJob
    window: Window
    told: Mapping[ChangeId, Told]  # the open changes, by their identity now
    accepted: Mapping[SeriesKey, str]  # each series' baseline commit
    permission: str  # who may /perfbot accept


async def carry_out(ctx: JobContext, watch: Watching, plans: Sequence[IssuePlan]) -> str:
    """Carry out ``plans``; the job's line. Raises ``Paced`` after the rest is done when an
    issue had to wait for the repository's minute."""
    job = watch.job
    done: Counter[str] = Counter()
    for plan in plans:
        refused = await ctx.write_refused(job.repo.owner, job.repo.name)
        if refused is not None:
            return ctx.ended(f"watch of {job.branch}: issues not written: {refused}")
        number = plan.issue
        if number is None:
            number = await _open(ctx, watch, plan)
            done["held back" if number is None else "opened"] += 1
            if number is None:
                continue
        elif plan.closes:
            await _close(ctx, job, number, plan)
            done["closed"] += 1
        elif not await _write(ctx, watch, number, plan):
            # Deleted by a person: its changes are no longer told about (a change that
            # still stands gets a new issue at the next push).
            gone = [
                replace(row, state="closed", closed_reason="deleted")
                for row in rows(watch, plan, number, ctx)
            ]
            await ctx.store.save_watched(gone)
            done["found deleted"] += 1
            continue
        else:
            done["edited"] += 1
        await ctx.store.save_watched(rows(watch, plan, number, ctx))
    said = ", ".join(f"{n} issue{'s' if n != 1 else ''} {what}" for what, n in done.items())
    line = f"watch of {job.branch} at {job.head_sha[:7]}: {said or 'nothing to tell'}"
    if done["held back"]:
        raise Paced(f"{line}; the rest waits for the repository's minute", OPEN_PACE_SECONDS)
    return ctx.ended(line)


def rows(watch: Watching, plan: IssuePlan, issue: int | None, ctx: JobContext) -> list[Told]:
    """The store's record of ``plan`` once carried out, under ``issue``."""
    now, job = ctx.now(), watch.job
    recorded = []
    for change, reported in plan.changes:
        before = watch.told.get(reported) if reported is not None else None
        recorded.append(
            Told(
                repo_id=job.repo.id,
                branch=job.branch,
                platform=change.platform,
                metric=change.metric,
                settings=change.settings,
                first_sha=before.first_sha if before else change.sha,
                sha=change.sha,
                installation_id=ctx.installation_id,
                issue_number=issue,
                state="open",
                direction=change.direction.value,
                change=change.change,
                unit=change.unit,
                scale=change.scale.value,
                created_at=before.created_at if before else now,
                updated_at=now,
            )
        )
    for ending in plan.endings:
        if (before := watch.told.get(ending.reported.identity)) is not None:
            closed = replace(before, state="closed", closed_reason=_CLOSED[ending.closing])
            recorded.append(replace(closed, updated_at=now))
    return recorded


async def _open(ctx: JobContext, watch: Watching, plan: IssuePlan) -> int | None:
    """The number of the plan's issue, opened now or found (a run before opened it); None
    when it must wait for the repository's minute."""
    job = watch.job
    owner, name = job.repo.owner, job.repo.name
    mine = marker(plan.sha)
    for issue in await ctx.installation.list_issues(owner, name, labels=(ISSUE_LABEL,)):
        if issue.body.startswith(mine) and issue.app_id == ctx.app_id:
            await _write(ctx, watch, issue.number, plan)
            return issue.number
    pace = f"watch-open:{job.repo.id}"
    if not await ctx.store.take_mark(
        pace, f"{job.run_id}:{plan.sha}", OPEN_PACE_SECONDS, ctx.now()
    ):
        return None
    title, body = await _words(ctx, watch, plan)
    return (await ctx.installation.create_issue(owner, name, title, body, (ISSUE_LABEL,))).number


async def _write(ctx: JobContext, watch: Watching, number: int, plan: IssuePlan) -> bool:
    """Edit the issue to say what is found now (the change may have moved or grown);
    False when the issue no longer exists."""
    title, body = await _words(ctx, watch, plan)
    repo = watch.job.repo
    edited = await ctx.installation.update_issue(
        repo.owner, repo.name, number, title=title, body=body
    )
    return edited is not None


async def _close(ctx: JobContext, job: WatchJob, number: int, plan: IssuePlan) -> None:
    """Close an issue none of whose changes is left, saying why."""
    owner, name = job.repo.owner, job.repo.name
    ending = plan.endings[0]
    reason: StateReason = "not_planned"
    said = gone_comment()
    if ending.closing is Closing.RETURNED and ending.change and ending.returned_sha:
        said, reason = returned_comment(ending.change, ending.returned_sha), "completed"
    await ctx.installation.create_comment(owner, name, number, said)
    await ctx.installation.update_issue(owner, name, number, state="closed", state_reason=reason)


async def _words(ctx: JobContext, watch: Watching, plan: IssuePlan) -> tuple[str, str]:
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
