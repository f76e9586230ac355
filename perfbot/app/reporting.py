"""A PR run's report judged and laid out for its comment and check run.

The judging is the engine's (``perfbot.engine.judge.judgement``); here is what the App
adds around it: the report's files read off the event loop when they are big, the noise
the measurement store learned, the earlier attempt this one confirms, the confirming
re-run, the PR's accepted regressions, the history; and the report kept to be laid out
again (``laid_out_again``) when a person accepts one. ``perfbot comment`` uses the pure
half (``read_contents``, ``laid_out``) without a store.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final, ParamSpec, TypeVar

from perfbot.app import confirm
from perfbot.app.artifacts import ArtifactContents, ArtifactError
from perfbot.app.context import JobContext
from perfbot.app.jobs import Run
from perfbot.app.measurements import learned_noise
from perfbot.app.repoconfig import ConfigResult, RepoConfig
from perfbot.app.report_history import report_history
from perfbot.engine.judge import acceptance, conclusion
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.judgement import Judgement, judge_report
from perfbot.engine.judge.notices import BranchChanged, Confirming
from perfbot.engine.read.report import ReadReport, read_report
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import checkrun
from perfbot.engine.show import kept as kept_report
from perfbot.engine.show.checkrun import CheckRun
from perfbot.engine.show.kept import Kept
from perfbot.engine.show.render import Footer, Prepared, RenderContext, Unreadable, compose, prepare
from perfbot.github.errors import ArtifactGone
from perfbot.github.types import PullInfo

# Up to this size a report is parsed and rendered on the event loop: a thread costs more
# than the work (the zip's own threshold: perfbot.app.download).
INLINE_BYTES: Final = 64 * 1024
# A change of the target branch found longer ago than this is on both sides of nearly
# every PR judged now (its base is the branch's tip when it ran): no notice.
BRANCH_CHANGE_NOTICE_SECONDS: Final = 7 * 86400.0
# A repository's page as GitHub links it: nothing in it can end a markdown link.
_REPO_URL: Final = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9_.-]+){2,3}")

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Report:
    """A report laid out for the comment, and what perfbot's check run says about it."""

    prepared: Prepared
    check: CheckRun
    # The base and head sides as read, for the measurement store (None: nothing to record).
    sides: tuple[SideReport, SideReport] | None = None
    # Whether it has something to say in a new comment (``comment: on-change``).
    worth: bool = True
    # The report as the PR's state keeps it with what lays it out again (``kept.dump``,
    # written with the report: off the event loop when it is big); None: the prepared
    # report alone (it has no regression to accept).
    kept_body: str | None = None

    @property
    def stored(self) -> str:
        """The report as ``PullState.report_body`` keeps it."""
        return self.kept_body if self.kept_body is not None else self.prepared.dump()


def render_context(
    now: float, run: Run, pull: PullInfo, loaded: ConfigResult, footer: Footer
) -> RenderContext:
    """What the body says of where the report comes from, and what its footer offers."""
    config = loaded.repo_config
    return RenderContext(
        head_sha=run.head_sha,
        base_sha=pull.base_sha,
        base_ref=pull.base_ref,
        run_url=run.html_url or None,
        run_label=f"{run.workflow_name or 'measurement'} run {run.number}",
        updated_at=datetime.fromtimestamp(now, UTC),
        config_errors=tuple(loaded.errors),
        footer=footer,
        rerun_permission=config.rerun_permission,
        advisory=not config.fail_on_regression,
    )


def unreadable(
    error: ArtifactError | ArtifactGone,
    context: RenderContext,
    log: logging.LoggerAdapter[logging.Logger],
) -> Report:
    """The report of an artifact that could not be read: the comment says why."""
    log.info("report artifact unreadable: %s", error)
    prepared = prepare(Unreadable(str(error)), context)
    return Report(prepared, checkrun.for_unreadable(compose(prepared)))


def read_contents(contents: ArtifactContents, config: RepoConfig) -> ReadReport:
    """Both sides of the artifact's files, narrowed to the configured ``platforms:``."""
    return read_report(
        contents.files,
        collisions=contents.collisions,
        skipped=contents.skipped,
        wanted=config.platforms,
    )


def laid_out(judged: Judgement, context: RenderContext, config: RepoConfig) -> Report:
    """The judged report as its comment and check run."""
    report = laid_out_again(Kept(judged.comparison, context), config)
    # A report that is the confirmed attempt's own again is not recorded twice: its runs,
    # stored as a second measurement, would teach the noise model perfect agreement.
    return replace(report, sides=None if judged.repeated else judged.sides)


def laid_out_again(kept: Kept, config: RepoConfig) -> Report:
    """A kept report laid out (again: its acceptances changed) as its comment and check
    run; kept once more when it has a regression a person could accept or did."""
    comparison, context = kept.comparison, kept.context
    prepared = prepare(comparison, context)
    check = checkrun.for_comparison(
        comparison, compose(prepared), fail_on_regression=config.fail_on_regression
    )
    confirming = any(isinstance(notice, Confirming) for notice in context.notices)
    worth = conclusion.worth_a_comment(comparison, confirming=confirming)
    regressions = acceptance.acceptable(comparison, ()) or acceptance.accepted_keys(comparison, ())
    body = kept_report.dump(prepared, kept) if regressions else None
    return Report(prepared, check, worth=worth, kept_body=body)


async def judge_for_pull(
    ctx: JobContext,
    run: Run,
    pull: PullInfo,
    contents: ArtifactContents | ArtifactError | ArtifactGone,
    loaded: ConfigResult,
) -> Report:
    """The App's report of ``run`` on ``pull``, with what the store knows around it."""
    config = loaded.repo_config
    context = render_context(ctx.now(), run, pull, loaded, Footer.APP)
    if isinstance(contents, ArtifactError | ArtifactGone):
        return unreadable(contents, context, ctx.log)
    # Parsing, comparing and rendering a big report takes seconds of CPU: off the event
    # loop, so that webhooks are still answered (within GitHub's 10 s) and other jobs run.
    inline = sum(len(f.data) for f in contents.files) <= INLINE_BYTES
    read = await _in_turn(inline, read_contents, contents, config)
    # The noise of each metric, as earlier measurements of the same commits show it.
    knowledge = await learned_noise(ctx, run, pull, (read.base, read.head))
    # This attempt may be perfbot's confirmation of the one before: both are judged together.
    earlier = await confirm.earlier_attempt(ctx, run) if config.confirm else None
    policy = config.policy()
    accepted = await accepted_on(ctx, run.repo_id, pull.number)
    judged = await _in_turn(
        inline,
        judge_report,
        read,
        policy,
        knowledge,
        earlier,
        attempt=run.attempt,
        accepted=accepted,
    )
    if judged.pending and config.confirm and earlier is None:
        judged = await confirm.confirm_later(ctx, run, pull, judged)
    # This PR's earlier pushes and the target branch's recent values, from the store.
    history = await report_history(
        ctx,
        run,
        pull,
        judged.sides,
        comparison=judged.comparison,
        policy=policy,
        knowledge=knowledge,
        accepted=accepted,
    )
    notices = (*judged.notices, *await branch_changes(ctx, run, pull, judged))
    context = replace(context, skipped=read.skipped, notices=notices, history=history)
    return await _in_turn(inline, laid_out, judged, context, config)


async def accepted_on(ctx: JobContext, repo_id: int, number: int) -> tuple[Accepted, ...]:
    """The PR's standing acceptances of its regressions, as the engine takes them."""
    return tuple(
        Accepted(a.platform, a.metric, a.settings, a.value, a.login, a.reason, a.sha)
        for a in await ctx.store.pull_acknowledgements(repo_id, number)
        if a.value is not None
    )


async def branch_changes(
    ctx: JobContext, run: Run, pull: PullInfo, judged: Judgement
) -> tuple[BranchChanged, ...]:
    """The watch's open issues about the PR's target branch that touch series of this
    report (same platform, metric and settings) and were found lately: a move the comment
    shows may be that change, not the PR's. A store that cannot be read costs the notice
    only (logged)."""
    try:
        told = await ctx.store.open_changes(run.repo_id, pull.base_ref)
    except Exception as exc:
        ctx.log.warning("the branch's open changes not read: %s", type(exc).__name__)
        return ()
    measured = {
        (platform, metric, series.settings)
        for side in judged.sides
        for (platform, metric), series in side.series.items()
    }
    since = ctx.now() - BRANCH_CHANGE_NOTICE_SECONDS
    issues: dict[int, list[str]] = {}
    for row in told:
        if row.issue_number is None or row.created_at < since:
            continue
        if (row.platform, row.metric, row.settings) in measured:
            issues.setdefault(row.issue_number, []).append(row.first_sha)
    # The run's page is https://<server>/<owner>/<name>/actions/runs/<id>: its issues are
    # beside. A page that is not plainly a repository's gets no link (a payload's URL).
    repo_url = run.html_url.split("/actions/runs/", 1)[0]
    link = repo_url if _REPO_URL.fullmatch(repo_url) else None
    return tuple(
        BranchChanged(
            pull.base_ref, shas[0], number, f"{link}/issues/{number}" if link else "", len(shas)
        )
        for number, shas in sorted(issues.items())
    )


async def _in_turn(inline: bool, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work`` on the event loop when it is small, else in a thread."""
    if inline:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)
