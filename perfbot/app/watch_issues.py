"""The watch's decisions carried out: issues opened, edited and closed on GitHub, and the
store's record of every change told about.

One issue per commit (``perfbot.engine.judge.watch``). perfbot's issues are listed once a
job (``watch_listing``): an issue about to be opened is looked for there first by its
commit's marker (a job run again after a crash makes no second one; one perfbot closed is
reopened), an edit that would change nothing is not sent, and an issue a person closed is
taken as that person accepting its levels. Opening is paced: at most one issue per
repository a minute, across replicas, by a store mark; an issue held back is not
recorded, so the job (run again after the minute: ``Paced``) or the next push finds it
new again: delayed, never dropped. A plan GitHub refuses (a 4xx) is told in the job's line
and tried again at the next push; the other plans go on. The store is written after
GitHub, so that a job run again redoes what GitHub did not take.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.watch_words import Watching, words
from perfbot.engine.judge.watch import Closing, IssuePlan
from perfbot.engine.show.watch import (
    gone_comment,
    marker,
    returned_comment,
    superseded_comment,
)
from perfbot.errors import PerfbotError
from perfbot.github.errors import GitHubError
from perfbot.github.types import IssueInfo, StateReason
from perfbot.store.watched import Acknowledgement, ClosedReason, level_accepted
from perfbot.store.watched import WatchedChange as Told

# The label of perfbot's watch issues: they are found again by it and their marker.
ISSUE_LABEL: Final = "perfbot: performance"
# At most one issue opened per repository in this time (GitHub's secondary limits; and a
# change at several commits at once is a person's hour, not a minute's flood).
OPEN_PACE_SECONDS: Final = 60.0
_CLOSED: Final[dict[Closing, ClosedReason]] = {
    Closing.RETURNED: "returned",
    Closing.GONE: "gone",
    Closing.SUPERSEDED: "superseded",
}
# What GitHub answers for an issue that no longer exists (deleted, or issues turned off).
_GONE_STATUSES: Final = (404, 410)


class Paced(PerfbotError):
    """An issue waits for the repository's minute: the job is run again after it."""

    retryable = True

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class _Outcome:
    said: str  # what happened, as the job's line counts it
    rows: tuple[Told, ...] = ()
    acknowledged: tuple[Acknowledgement, ...] = ()


async def carry_out(ctx: JobContext, watch: Watching, plans: Sequence[IssuePlan]) -> str:
    """Carry out ``plans``; the job's line. Raises ``Paced`` after the rest is done when an
    issue had to wait for the repository's minute."""
    job = watch.job
    done: Counter[str] = Counter()
    listed = await listed_issues(ctx, job) if plans else Listed({}, "")
    for plan in plans:
        refused = await ctx.write_refused(job.repo.owner, job.repo.name)
        if refused is not None:
            return ctx.ended(f"watch of {job.branch}: issues not written: {refused}")
        try:
            outcome = await _carry_out_one(ctx, watch, plan, listed)
        except GitHubError as exc:
            if exc.retryable:
                raise
            # Told in the line; nothing is recorded, so the next push tries it again.
            ctx.log.warning("watch issue of %s not written: %s", plan.sha[:7], exc)
            outcome = _Outcome(f"not written (GitHub answered {exc.status})")
        await ctx.store.acknowledge(outcome.acknowledged)
        await ctx.store.save_watched(outcome.rows)
        done[outcome.said] += 1
    said = ", ".join(f"{n} issue{'s' if n != 1 else ''} {what}" for what, n in done.items())
    line = f"watch of {job.branch} at {job.head_sha[:7]}: {said or 'nothing to tell'}"
    if done["held back"]:
        raise Paced(f"{line}; the rest waits for the repository's minute", OPEN_PACE_SECONDS)
    return ctx.ended(line)


async def _carry_out_one(
    ctx: JobContext, watch: Watching, plan: IssuePlan, listed: Listed
) -> _Outcome:
    if plan.issue is None:
        return await _open(ctx, watch, plan, listed)
    number = plan.issue
    issue = listed.by_number.get(number)
    if issue is not None and issue.state == "closed":
        return await _found_closed(ctx, watch, plan, issue, listed.bot)
    if plan.closes:
        if not await _close(ctx, watch, number, plan):
            return _Outcome("found deleted", _deleted(watch, plan, number, ctx))
        return _Outcome("closed", tuple(rows(watch, plan, number, ctx)))
    said = await _write(ctx, watch, number, plan, issue)
    if said is None:
        # Deleted by a person: its changes are no longer told about (one that still
        # stands gets a new issue at the next push).
        return _Outcome("found deleted", _deleted(watch, plan, number, ctx))
    return _Outcome(said, tuple(rows(watch, plan, number, ctx)))


@dataclass(frozen=True, slots=True)
class Listed:
    """perfbot's watch issues of the repository, open and closed, as listed once a job."""

    by_number: dict[int, IssueInfo]
    bot: str  # perfbot's login: whether perfbot closed an issue

    def by_marker(self, mark: str) -> IssueInfo | None:
        return next((i for i in self.by_number.values() if i.body.startswith(mark)), None)


async def listed_issues(ctx: JobContext, job: WatchJob) -> Listed:
    """perfbot's own issues with the watch's label (newest first, GitHub's page bound)."""
    found = await ctx.installation.list_issues(
        job.repo.owner, job.repo.name, labels=(ISSUE_LABEL,), state="all"
    )
    mine = {i.number: i for i in found if i.app_id == ctx.app_id}
    return Listed(mine, await ctx.bot_login())


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


def _deleted(watch: Watching, plan: IssuePlan, number: int, ctx: JobContext) -> tuple[Told, ...]:
    every = rows(watch, plan, number, ctx)
    return tuple(replace(row, state="closed", closed_reason="deleted") for row in every)


async def _found_closed(
    ctx: JobContext, watch: Watching, plan: IssuePlan, issue: IssueInfo, bot: str
) -> _Outcome:
    """An issue found closed. To be closed anyway: recorded so. Closed by perfbot (the
    change was noise, or a job stopped before its record) and its change is back:
    reopened. Closed by a person: that person took its levels as they are, as
    ``/perfbot accept`` would."""
    recorded = rows(watch, plan, issue.number, ctx)
    if plan.closes:
        return _Outcome("closed", tuple(recorded))
    if (issue.closed_by or "").lower() == bot.lower():
        title, body = await words(ctx, watch, plan)
        repo = watch.job.repo
        reopened = await ctx.installation.update_issue(
            repo.owner, repo.name, issue.number, title=title, body=body, state="open"
        )
        if reopened is None:
            return _Outcome("found deleted", _deleted(watch, plan, issue.number, ctx))
        return _Outcome("reopened", tuple(recorded))
    login = issue.closed_by or "someone"
    why = f"closed issue #{issue.number}"
    acknowledged = tuple(
        level_accepted(row, login, why, ctx.now()) for row in recorded if row.state == "open"
    )
    closed = [
        replace(row, state="closed", closed_reason=row.closed_reason or "accepted")
        for row in recorded
    ]
    return _Outcome("closed by hand: accepted", tuple(closed), acknowledged)


async def _open(ctx: JobContext, watch: Watching, plan: IssuePlan, listed: Listed) -> _Outcome:
    """The plan's issue opened now, or found (a run before opened it)."""
    job = watch.job
    owner, name = job.repo.owner, job.repo.name
    found = listed.by_marker(marker(plan.sha))
    if found is not None and found.state == "closed":
        return await _found_closed(ctx, watch, plan, found, listed.bot)
    if found is not None:
        if await _write(ctx, watch, found.number, plan, found) is None:
            return _Outcome("found deleted", _deleted(watch, plan, found.number, ctx))
        return _Outcome("found again", tuple(rows(watch, plan, found.number, ctx)))
    pace = f"watch-open:{job.repo.id}"
    if not await ctx.store.take_mark(
        pace, f"{job.run_id}:{plan.sha}", OPEN_PACE_SECONDS, ctx.now()
    ):
        return _Outcome("held back")
    title, body = await words(ctx, watch, plan)
    try:
        opened = await ctx.installation.create_issue(owner, name, title, body, (ISSUE_LABEL,))
    except GitHubError as exc:
        if exc.status != 410:
            raise
        # Issues are turned off in the repository: the changes are recorded as found, with
        # no issue (as ``watch.issues: false`` would), so they are not asked for again.
        return _Outcome("not opened (issues are disabled)", tuple(rows(watch, plan, None, ctx)))
    return _Outcome("opened", tuple(rows(watch, plan, opened.number, ctx)))


async def _write(
    ctx: JobContext, watch: Watching, number: int, plan: IssuePlan, issue: IssueInfo | None
) -> str | None:
    """Edit the issue to say what is found now (the change may have moved or grown):
    "edited", or "unchanged" when it says that already; None when it no longer exists."""
    title, body = await words(ctx, watch, plan)
    if issue is not None and (issue.title, issue.body) == (title, body):
        return "unchanged"
    repo = watch.job.repo
    edited = await ctx.installation.update_issue(
        repo.owner, repo.name, number, title=title, body=body
    )
    return "edited" if edited is not None else None


async def _close(ctx: JobContext, watch: Watching, number: int, plan: IssuePlan) -> bool:
    """Close an issue none of whose changes is left, saying why; False when the issue no
    longer exists."""
    owner, name = watch.job.repo.owner, watch.job.repo.name
    ending = plan.endings[0]
    reason: StateReason = "not_planned"
    said = superseded_comment() if ending.closing is Closing.SUPERSEDED else gone_comment()
    if ending.closing is Closing.RETURNED and ending.change and ending.returned_sha:
        said, reason = returned_comment(ending.change, ending.returned_sha), "completed"
    try:
        await ctx.installation.create_comment(owner, name, number, said)
    except GitHubError as exc:
        if exc.status in _GONE_STATUSES:
            return False
        raise
    closed = await ctx.installation.update_issue(
        owner, name, number, state="closed", state_reason=reason
    )
    return closed is not None
