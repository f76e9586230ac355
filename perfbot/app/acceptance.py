"""A person's ``/perfbot accept [metric-glob …] [-- reason]`` and ``/perfbot unaccept
[metric-glob …]`` on a pull request.

``accept`` takes the regressions the PR's comment shows (those matching the globs; every
one with none) as intended: each is stored as an acknowledgement (who, when, the head
commit shown, the metric, its settings and its accepted value: the head's median), and
the comment and the check run are laid out again at once from the report kept with the
PR's state (``engine/show/kept.py``). Later reports judge each acceptance against its
value (``engine/judge/acceptance.py``). ``unaccept`` revokes them (kept for audit) and
lays the report out again as it was judged. Both need ``accept.permission``; the caller
(``handlers/commands.py``) reacts with the outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from perfbot.app.context import JobContext
from perfbot.app.jobs import IssueCommentJob
from perfbot.app.publish import republish
from perfbot.app.pulllock import pull_lock
from perfbot.app.repoconfig import RepoConfig
from perfbot.app.reporting import laid_out_again
from perfbot.app.rerun import Rerun, RerunOutcome, role_refusal
from perfbot.engine.judge import acceptance
from perfbot.engine.judge.acceptance import Key
from perfbot.engine.judge.compare import Comparison, MetricResult
from perfbot.engine.show import kept as kept_report
from perfbot.engine.show.history import as_judged_now
from perfbot.engine.show.kept import Kept
from perfbot.github.types import PullInfo
from perfbot.store.base import PullState
from perfbot.store.watched import Acknowledgement


async def accept_command(
    ctx: JobContext, job: IssueCommentJob, pull: PullInfo, config: RepoConfig
) -> RerunOutcome:
    """Carry out ``job``'s ``accept`` or ``unaccept`` on ``pull``, if the person may."""
    repo = job.repo
    refusal = await role_refusal(ctx, repo, job.login, config.accept_permission)
    if refusal is not None:
        return RerunOutcome(Rerun.REFUSED, f"{job.command} refused: {refusal}")
    async with pull_lock(ctx, repo.id, pull.number):
        state = await ctx.store.get_pull(repo.id, pull.number)
        body = state.report_body if state is not None else None
        # A big report takes a while to read and to lay out: off the event loop.
        shown = await asyncio.to_thread(kept_report.load, body) if body else None
        if job.command == "accept":
            return await _accept(ctx, job, pull, state=state, shown=shown, config=config)
        return await _unaccept(ctx, job, pull, state=state, shown=shown, config=config)


async def _accept(
    ctx: JobContext,
    job: IssueCommentJob,
    pull: PullInfo,
    *,
    state: PullState | None,
    shown: Kept | None,
    config: RepoConfig,
) -> RerunOutcome:
    number, globs = pull.number, job.globs
    if state is None or shown is None or state.reported_head_sha is None:
        return RerunOutcome(Rerun.FAILED, f"accept: PR {number} shows no report to accept in")
    keys = acceptance.acceptable(shown.comparison, globs)
    if not keys:
        wanted = " ".join(globs) if globs else "any metric"
        return RerunOutcome(Rerun.FAILED, f"accept: no regression of PR {number} matches {wanted}")
    refused = await ctx.write_refused(job.repo.owner, job.repo.name, pull)
    if refused is not None:
        return RerunOutcome(Rerun.STOPPED, f"accept not written: {refused}")
    sha = state.reported_head_sha
    await ctx.store.acknowledge(
        _acknowledgements(ctx, job, pull, comparison=shown.comparison, keys=keys, sha=sha)
    )
    comparison = acceptance.accept(
        shown.comparison, keys, login=job.login, reason=job.reason, sha=sha
    )
    report = await asyncio.to_thread(laid_out_again, _judged_now(shown, comparison), config)
    written = await republish(ctx, job.repo, pull, state, report, config=config)
    regressions = f"{len(keys)} regression{'' if len(keys) == 1 else 's'}"
    return RerunOutcome(
        Rerun.STARTED, f"accepted by {job.login}: {regressions} of PR {number} ({written})"
    )


async def _unaccept(
    ctx: JobContext,
    job: IssueCommentJob,
    pull: PullInfo,
    *,
    state: PullState | None,
    shown: Kept | None,
    config: RepoConfig,
) -> RerunOutcome:
    repo, number = job.repo, pull.number
    standing = await ctx.store.pull_acknowledgements(repo.id, number)
    keys = {(a.platform, a.metric) for a in standing if acceptance.matches(a.metric, job.globs)}
    if not keys:
        return RerunOutcome(Rerun.FAILED, f"unaccept: nothing of PR {number} is accepted")
    refused = await ctx.write_refused(repo.owner, repo.name, pull)
    if refused is not None:
        return RerunOutcome(Rerun.STOPPED, f"unaccept not written: {refused}")
    await ctx.store.revoke_acknowledgements(
        repo.id, number, sorted(keys), login=job.login, now=ctx.now()
    )
    done = f"unaccepted by {job.login}: {len(keys)} metric(s) of PR {number}"
    if state is None or shown is None:
        return RerunOutcome(Rerun.STARTED, f"{done}; the comment changes at the next report")
    withdrawn = acceptance.withdraw(shown.comparison, keys)
    report = await asyncio.to_thread(laid_out_again, _judged_now(shown, withdrawn), config)
    said = await republish(ctx, repo, pull, state, report, config=config)
    return RerunOutcome(Rerun.STARTED, f"{done} ({said})")


def _judged_now(shown: Kept, comparison: Comparison) -> Kept:
    """The kept report with ``comparison``, its history's current push said the same way."""
    history = shown.context.history
    if history is not None:
        history = as_judged_now(history, comparison)
    return Kept(comparison, replace(shown.context, history=history))


def _acknowledgements(
    ctx: JobContext,
    job: IssueCommentJob,
    pull: PullInfo,
    *,
    comparison: Comparison,
    keys: Sequence[Key],
    sha: str,
) -> list[Acknowledgement]:
    """What is stored of an acceptance, per metric: who, when, the head, the accepted value."""
    rows = {
        (platform.name, metric.name): metric
        for platform in comparison.platforms
        for metric in platform.metrics
    }
    return [
        _acknowledgement(ctx, job, pull, platform=platform, metric=rows[(platform, name)], sha=sha)
        for platform, name in keys
    ]


def _acknowledgement(
    ctx: JobContext,
    job: IssueCommentJob,
    pull: PullInfo,
    *,
    platform: str,
    metric: MetricResult,
    sha: str,
) -> Acknowledgement:
    assert metric.head is not None  # only a regression measured on the PR is accepted
    return Acknowledgement(
        repo_id=job.repo.id,
        installation_id=ctx.installation_id,
        subject="pull",
        branch=pull.base_ref,
        pr_number=pull.number,
        sha=sha,
        platform=platform,
        metric=metric.name,
        settings=metric.settings,
        value=metric.head.value,
        login=job.login,
        reason=job.reason,
        accepted_at=ctx.now(),
    )
