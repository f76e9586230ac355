"""Confirm before red, the App's part: re-run a measurement once per head commit when a
stochastic metric would turn red, and find the earlier attempt when the re-run reports.

What is decided, and how the two attempts are combined, is the engine's
(``perfbot.engine.judge.confirm``). Here: the re-run, requested the way ``/perfbot rerun``
requests one (after the same checks before every write), and the two marks that remember
it in the store:

* ``confirm:<repo>:<head sha>``: this head commit had its automatic re-run (at most one,
  ever within ``CONFIRM_MEMORY_SECONDS``), whichever run and attempt asked for it;
* ``confirming:<repo>:<run>:<attempt>``: that attempt of that run is perfbot's
  confirmation, so its report is combined with the attempt before it.

A fork's PR is never re-run automatically: its author writes every byte of the report, and
would otherwise spend the repository's runners at will. A person can still ``/perfbot rerun``.
"""

from __future__ import annotations

import json
from typing import Final

from perfbot.app.artifacts import ArtifactContents
from perfbot.app.context import JobContext
from perfbot.app.jobs import Run
from perfbot.engine.judge import judgement
from perfbot.engine.judge.confirm import Key
from perfbot.engine.judge.judgement import EarlierAttempt, Judgement
from perfbot.engine.judge.notices import NoConfirmation, NotConfirmed
from perfbot.engine.read.sides import ReportFile, Series, SideReport
from perfbot.engine.show.export import baseline_document
from perfbot.github.errors import GitHubError
from perfbot.github.types import PullInfo
from perfbot.store.measurements import RunSeries

# Long enough to outlive any run and its re-run; the measurement store keeps the samples.
CONFIRM_MEMORY_SECONDS: Final = 30 * 86_400.0
OWNER: Final = "perfbot-confirm"


def _commit_key(run: Run) -> str:
    return f"confirm:{run.repo_id}:{run.head_sha}"


def _attempt_key(run: Run, attempt: int) -> str:
    return f"confirming:{run.repo_id}:{run.id}:{attempt}"


async def earlier_attempt(ctx: JobContext, run: Run) -> EarlierAttempt | None:
    """The samples of the attempt this one confirms, or None when it confirms nothing (a
    first attempt, or a re-run a person asked for)."""
    series = await _earlier_series(ctx, run)
    if series is None:
        return None
    return EarlierAttempt(
        base=[((s.platform, s.metric), s.samples) for s in series if s.side == "base"],
        head=[((s.platform, s.metric), s.samples) for s in series if s.side == "head"],
    )


async def _earlier_series(ctx: JobContext, run: Run) -> list[RunSeries] | None:
    if run.attempt < 2:
        return None
    if await ctx.store.mark_holder(_attempt_key(run, run.attempt), ctx.now()) != OWNER:
        return None
    return await ctx.store.run_measurements(run.repo_id, run.id, run.attempt - 1)


async def stored_report(ctx: JobContext, run: Run) -> ArtifactContents | None:
    """The report of the attempt this one confirms, rebuilt from the store, for a
    confirming attempt that has no report artifact at all (cancelled, or failed before
    uploading): the held regressions are then called on that one attempt rather than
    left "confirming…" for ever. None when this attempt confirms nothing."""
    series = await _earlier_series(ctx, run)
    if not series:
        return None
    files = []
    for side in ("base", "head"):
        report = SideReport()
        for s in series:
            if s.side == side and s.samples:
                report.series[(s.platform, s.metric)] = Series(
                    s.unit, s.better, list(s.samples), scale=s.scale, settings=s.settings
                )
        document = baseline_document(report, "head" if side == "head" else "base")
        data = json.dumps(document, ensure_ascii=False).encode()
        files.append(ReportFile(f"{side}/attempt-{run.attempt - 1}.json", data))
    return ArtifactContents(files, [])


async def confirm_later(ctx: JobContext, run: Run, pull: PullInfo, judged: Judgement) -> Judgement:
    """``judged`` with its pending regressions held while a second attempt measures them,
    or, when none could be started, called at once and said why."""
    why_not = await request(ctx, run, pull, judged.pending)
    if why_not is None:
        return judgement.hold(judged, run_id=run.id, attempt=run.attempt + 1)
    return judgement.not_confirmed(judged, why_not.reason, why_not.detail)


async def request(
    ctx: JobContext, run: Run, pull: PullInfo, keys: tuple[Key, ...]
) -> NotConfirmed | None:
    """Ask GitHub for one more attempt of ``run`` to confirm ``keys``; None when started,
    else why not (said in the comment, which then calls the regressions at once)."""
    if run.head_repo_id != run.repo_id:
        return NotConfirmed(NoConfirmation.FORK)
    now = ctx.now()
    if not await ctx.store.take_mark(
        _commit_key(run), f"{OWNER}:{run.id}:{run.attempt}", CONFIRM_MEMORY_SECONDS, now
    ):
        return NotConfirmed(NoConfirmation.ONCE_ALREADY)
    next_attempt = _attempt_key(run, run.attempt + 1)
    # The mark above is this attempt's own, so a job run again (the worker retries it from
    # the start when a later step fails) takes it again: the mark of the next attempt says
    # whether this attempt already asked, and a second request would be a second re-run.
    if await ctx.store.mark_holder(next_attempt, now) == OWNER:
        return None
    refused = await ctx.write_refused(run.owner, run.name, pull)
    if refused is not None:
        return NotConfirmed(NoConfirmation.NOT_ALLOWED, refused)
    await ctx.store.take_mark(next_attempt, OWNER, CONFIRM_MEMORY_SECONDS, now)
    try:
        await ctx.installation.rerun_workflow_run(run.owner, run.name, run.id)
    except GitHubError as exc:
        await ctx.store.drop_mark(next_attempt, OWNER)
        if exc.retryable:
            # GitHub is unwell (5xx, rate limit): nothing was re-run, so the commit keeps
            # its one automatic re-run, and the job is tried again later.
            await ctx.store.drop_mark(_commit_key(run), f"{OWNER}:{run.id}:{run.attempt}")
            raise
        ctx.log.warning("confirming re-run of run %s refused: %s", run.id, exc)
        return NotConfirmed(NoConfirmation.GITHUB_REFUSED)
    ctx.log.info("re-running run %s to confirm %d regressions", run.id, len(keys))
    return None
