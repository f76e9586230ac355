"""``workflow_run``: a finished measurement becomes the PR's comment; a new one marks it stale."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from perfbot.app import confirm
from perfbot.app.artifacts import (
    ArtifactContents,
    ArtifactError,
    ArtifactLimits,
    read_pr_number_zip,
)
from perfbot.app.comment import live, publish
from perfbot.app.context import JobContext
from perfbot.app.download import download_report, newest_artifact
from perfbot.app.jobs import Run, WorkflowRunJob
from perfbot.app.measurements import learned_noise, record_report_measurements
from perfbot.app.pullproof import prove_pull
from perfbot.app.repoconfig import ConfigResult
from perfbot.app.report_history import report_history
from perfbot.engine.judge import confirm as engine_confirm
from perfbot.engine.judge.compare import Comparison, NoiseKnowledge, compare
from perfbot.engine.read import platforms
from perfbot.engine.read.sides import SideReport, read_side, split_sides
from perfbot.engine.show import checkrun
from perfbot.engine.show.escape import text
from perfbot.engine.show.render import Footer, Prepared, RenderContext, Unreadable, compose, prepare
from perfbot.github.errors import ArtifactGone, GitHubError
from perfbot.github.types import ArtifactInfo, PullInfo
from perfbot.store.base import PullState
from perfbot.store.measurements import RunSeries

LIMITS = ArtifactLimits()
# Up to this size a report is parsed and rendered on the event loop: a thread costs more
# than the work (the zip's own threshold: perfbot.app.download).
INLINE_BYTES = 64 * 1024
CHECK_RUN_NAME = "perfbot"


@dataclass(frozen=True, slots=True)
class Report:
    """A report laid out for the comment, and what perfbot's check run says about it."""

    prepared: Prepared
    check: checkrun.CheckRun
    # The base and head sides as read, for the measurement store (None: nothing was read).
    sides: tuple[SideReport, SideReport] | None = None


async def on_workflow_run(ctx: JobContext, job: WorkflowRunJob) -> str:
    run = job.run
    if run.event != "pull_request" or run.run_repo_id != run.repo_id:
        return ctx.ended(f"ignored: run {run.id} is not a pull_request run of this repository")
    refused = await ctx.write_refused(run.owner, run.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    config = await ctx.configs.get(ctx.installation, run.owner, run.name)
    if not config.config.matches_workflow(run.workflow_name, run.workflow_path):
        return ctx.ended(f"ignored: workflow {run.workflow_name!r} is not a configured measurement")
    if job.completed:
        return await _on_completed(ctx, run, config)
    return await _on_started(ctx, run, config)


async def _on_completed(ctx: JobContext, run: Run, config: ConfigResult) -> str:
    inst = ctx.installation
    artifacts = await inst.list_run_artifacts(run.owner, run.name, run.id)
    report = newest_artifact(artifacts, config.config.report_artifact, run.id)
    stored = None
    if report is None:
        # A confirming attempt that uploaded nothing still settles what it was to confirm.
        stored = await confirm.stored_report(ctx, run) if config.config.confirm else None
        if stored is None:
            return ctx.ended(
                f"no usable {config.config.report_artifact!r} artifact on run {run.id}"
            )
    # When GitHub itself names the PR the proof is all but certain: the report is
    # downloaded meanwhile (nothing is posted before the proof), and the comment waits one
    # round trip less. A run that names its PR only through its own artifact (a fork's)
    # is proven first: a forged number costs no download.
    reading = (
        asyncio.ensure_future(_read_report_or_error(ctx, run, report))
        if report is not None and len(run.hinted_pulls) == 1
        else None
    )
    try:
        pull = await _proven_pull(ctx, run, artifacts, config)
    except BaseException:
        _abandon(reading)
        raise
    if isinstance(pull, str):
        _abandon(reading)
        return pull
    proved_at = ctx.now()
    if stored is not None:
        contents: ArtifactContents | ArtifactError | ArtifactGone = stored
    elif reading is not None:
        contents = await reading
    else:
        assert report is not None  # stored is None only with a report (above)
        contents = await _read_report_or_error(ctx, run, report)
    result = await _report_body(ctx, run, pull, contents, config)
    await record_report_measurements(ctx, run, pull, result.sides)
    async with ctx.pull_lock(run.repo_id, pull.number):
        state = await ctx.store.get_pull(run.repo_id, pull.number)
        if state is not None and _superseded(state, run, proved_at):
            return ctx.ended(f"not posted: PR {pull.number} already shows a newer result")
        # The download and the rendering took a while: the PR may have been closed, muted
        # or moved on meanwhile, and perfbot suspended. Asked again just before writing.
        fresh = await inst.get_pull(run.owner, run.name, pull.number)
        refused = await _report_refused(ctx, run, pull.number, fresh)
        if refused is not None or fresh is None:
            return ctx.ended(f"not posted: {refused}")
        state = state or PullState(run.repo_id, pull.number)
        state = replace(
            state,
            # The PR's head now: when it moved past the run's, the comment says its numbers
            # are for the previous commit.
            newest_head_sha=fresh.head_sha,
            reported_head_sha=run.head_sha,
            reported_run_id=run.id,
            reported_run_attempt=run.attempt,
            report_body=result.prepared.dump(),
            rerun_requested_by=None,
            updated_at=proved_at,
        )
        # With a check run to write, the state is stored once, after it (one write less).
        state = await publish(ctx, run.owner, run.name, state, save=not config.config.check_run)
        done = f"comment {state.comment_id} on PR {pull.number} is up to date"
        if not config.config.check_run:
            return done
        refused = await ctx.write_refused(run.owner, run.name, fresh)
        if refused is not None:
            await ctx.store.save_pull(state)
            return ctx.ended(f"{done}; check run not written: {refused}")
        check_id = await ctx.installation.upsert_check_run(
            run.owner,
            run.name,
            check_run_id=state.check_run_id if state.check_run_head_sha == run.head_sha else None,
            name=CHECK_RUN_NAME,
            head_sha=run.head_sha,
            conclusion=result.check.conclusion,
            title=result.check.title,
            summary=result.check.summary,
        )
        await ctx.store.save_pull(
            replace(state, check_run_id=check_id, check_run_head_sha=run.head_sha)
        )
        return f"{done}; check run {check_id} too"


async def _report_refused(
    ctx: JobContext, run: Run, number: int, fresh: PullInfo | None
) -> str | None:
    """Why the report must not be written to PR ``number`` as GitHub shows it now."""
    if fresh is None:
        return f"PR {number} no longer exists"
    if fresh.state != "open":
        return f"PR {number} was {fresh.state} while its report was read"
    if fresh.base_repo_id != run.repo_id or fresh.head_repo_id != run.head_repo_id:
        return f"PR {number} no longer is the PR the run measured"
    return await ctx.write_refused(run.owner, run.name, fresh)


async def _proven_pull(
    ctx: JobContext, run: Run, artifacts: list[ArtifactInfo], config: ConfigResult
) -> PullInfo | str:
    """The run's PR once proven, or why none is (not proven, or muted by its label)."""
    if len(run.hinted_pulls) == 1:
        # GitHub itself names exactly one PR of this repository: no need to download the
        # run's (untrusted) PR-number artifact; the proof checks the PR either way.
        hint: int | None = run.hinted_pulls[0]
    else:
        artifact = newest_artifact(artifacts, config.config.pr_number_artifact, run.id)
        hint = await _pull_hint(ctx, run, artifact)
    proof = await prove_pull(ctx.installation, run.owner, run.name, run.identity, hint)
    ctx.log.info("%s", proof.reason)
    pull = proof.pull
    if pull is None:
        return proof.reason
    if config.config.mutes(pull.labels):
        return ctx.ended(f"ignored: PR {pull.number} carries the mute label")
    return pull


def _abandon(task: asyncio.Future[Any] | None) -> None:
    """Stop a download nobody needs any more (if one was started).

    Not awaited: waiting for it could swallow a cancellation of the job itself.
    """
    if task is None:
        return
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


def _superseded(state: PullState, run: Run, proved_at: float) -> bool:
    """Whether the comment shows a result this run must not replace."""
    if state.reported_head_sha is None:
        return False
    if state.reported_head_sha != run.head_sha:
        # The shown head was proven to be the PR's head after this one was: it is newer.
        return state.updated_at > proved_at
    return state.reported_run_id == run.id and (state.reported_run_attempt or 0) > run.attempt


async def _on_started(ctx: JobContext, run: Run, config: ConfigResult) -> str:
    hint = run.hinted_pulls[0] if run.hinted_pulls else None
    proof = await prove_pull(ctx.installation, run.owner, run.name, run.identity, hint)
    if proof.pull is None:
        return ctx.ended(f"started run {run.id}: {proof.reason}")
    number = proof.pull.number
    if config.config.mutes(proof.pull.labels):
        return ctx.ended(f"ignored: PR {number} carries the mute label")
    async with ctx.pull_lock(run.repo_id, number):
        state = await ctx.store.get_pull(run.repo_id, number)
        state = state or PullState(run.repo_id, number)
        if run.head_sha == state.newest_head_sha:
            return f"PR {number}: the measurement of {run.head_sha[:12]} was already noted"
        # The proof says this commit is the PR's head now. Set it as the newest even when
        # the comment already shows it: under retries a run's `requested` can be handled
        # after its `completed`, and an older commit's notice must not stay behind.
        before, state = state, replace(state, newest_head_sha=run.head_sha)
        if run.head_sha == state.reported_head_sha and live(before) == live(state):
            await ctx.store.save_pull(state)  # the comment is right as it is
            return f"PR {number}: the comment is right as it is"
        if state.comment_id is None or state.report_body is None:
            await ctx.store.save_pull(state)  # no comment yet: nothing to mark stale
            return f"PR {number} has no comment to mark stale yet"
        refused = await ctx.write_refused(run.owner, run.name, proof.pull)
        if refused is not None:
            await ctx.store.save_pull(state)
            return ctx.ended(f"comment on PR {number} not marked stale: {refused}")
        state = await publish(ctx, run.owner, run.name, state)
        return f"comment {state.comment_id} on PR {number} is up to date"


async def _pull_hint(ctx: JobContext, run: Run, artifact: ArtifactInfo | None) -> int | None:
    """The PR number the run wrote, or None; any problem only costs the hint."""
    if artifact is None:
        return run.hinted_pulls[0] if run.hinted_pulls else None
    try:
        data = await ctx.installation.download_artifact(
            run.owner, run.name, artifact.id, max_bytes=64 * 1024
        )
        return read_pr_number_zip(data, artifact.name)
    except (ArtifactError, ArtifactGone) as exc:
        ctx.log.info("PR-number artifact ignored: %s", exc)
    except GitHubError as exc:
        if exc.retryable:
            raise
        ctx.log.info("PR-number artifact ignored: %s", exc)
    return run.hinted_pulls[0] if run.hinted_pulls else None


async def _report_body(
    ctx: JobContext,
    run: Run,
    pull: PullInfo,
    contents: ArtifactContents | ArtifactError | ArtifactGone,
    config: ConfigResult,
) -> Report:
    context = RenderContext(
        head_sha=run.head_sha,
        base_sha=pull.base_sha,
        base_ref=pull.base_ref,
        run_url=run.html_url or None,
        run_label=f"{run.workflow_name or 'measurement'} run {run.number}",
        updated_at=datetime.fromtimestamp(ctx.now(), UTC),
        config_errors=tuple(config.errors),
        # The App's comment offers /perfbot rerun; perfbot comment (no App id) does not.
        footer=Footer.ACTIONS if ctx.app_id is None else Footer.APP,
        rerun_permission=config.config.rerun_permission,
        advisory=not config.config.fail_on_regression,
    )
    if isinstance(contents, ArtifactError | ArtifactGone):
        ctx.log.info("report artifact unreadable: %s", contents)
        reason = f"The report artifact could not be read: {contents}"
        prepared = prepare(Unreadable(reason), context)
        return Report(prepared, checkrun.for_unreadable(compose(prepared)))
    # Parsing, comparing and rendering a big report takes seconds of CPU: off the event loop,
    # so that webhooks are still answered (within GitHub's 10 s) and other jobs still run.
    # A small one (the usual case) takes a millisecond: a thread would cost more than that.
    inline = sum(len(f.data) for f in contents.files) <= INLINE_BYTES
    if inline:
        base, head, context = _read_sides(contents, context, config)
    else:
        base, head, context = await asyncio.to_thread(_read_sides, contents, context, config)
    # The noise of each metric, as earlier measurements of the same commits show it.
    knowledge = await learned_noise(ctx, run, pull, (base, head))
    # This attempt may be perfbot's confirmation of the one before: both are judged together.
    earlier = await confirm.earlier_attempt(ctx, run) if config.config.confirm else None
    judged = (
        _judge(base, head, config, knowledge, earlier)
        if inline
        else await asyncio.to_thread(_judge, base, head, config, knowledge, earlier)
    )
    comparison = judged.comparison
    if judged.repeated:
        said = (
            f"ℹ️ Attempt {run.attempt} uploaded no report of its own: the regressions are "
            f"called on attempt {run.attempt - 1} alone."
        )
        context = replace(context, notices=(*context.notices, said))
    elif judged.settled:
        context = replace(context, notices=(*context.notices, _settled_notice(run, judged)))
    elif judged.pending and config.config.confirm and earlier is None:
        why_not = await confirm.request(ctx, run, pull, judged.pending)
        if why_not is None:
            comparison = engine_confirm.hold(comparison, judged.pending)
            said = _confirming_notice(run, len(judged.pending))
        else:
            said = f"ℹ️ Not measured again before calling the regressions: {why_not}."
        context = replace(context, notices=(*context.notices, said))
    # This PR's earlier pushes and the target branch's recent values, from the store.
    history = await report_history(
        ctx,
        run,
        pull,
        (base, head),
        comparison=comparison,
        policy=config.config.policy(),
        knowledge=knowledge,
    )
    context = replace(context, history=history)
    # A report that is the confirmed attempt's own again is not recorded twice: its runs,
    # stored as a second measurement, would teach the noise model perfect agreement.
    sides = None if judged.repeated else (base, head)
    if inline:
        return _render(comparison, context, config, sides)
    return await asyncio.to_thread(_render, comparison, context, config, sides)


@dataclass(frozen=True, slots=True)
class _Judged:
    comparison: Comparison
    # Stochastic regressions beyond tolerance a second attempt should confirm.
    pending: tuple[engine_confirm.Key, ...] = ()
    # The metrics this attempt confirmed or not (it combined an earlier attempt's samples).
    settled: tuple[engine_confirm.Key, ...] = ()
    confirmed: int = 0
    # The confirming attempt's report is the confirmed attempt's own.
    repeated: bool = False


def _judge(
    base: SideReport,
    head: SideReport,
    config: ConfigResult,
    knowledge: NoiseKnowledge,
    earlier: list[RunSeries] | None,
) -> _Judged:
    policy = config.config.policy()
    if earlier is None:
        comparison = compare(base, head, policy, knowledge)
        return _Judged(comparison, engine_confirm.pending(comparison))
    before = {
        side: [((s.platform, s.metric), s.samples) for s in earlier if s.side == side]
        for side in ("base", "head")
    }
    first_base = engine_confirm.earlier_side(before["base"], base)
    first_head = engine_confirm.earlier_side(before["head"], head)
    if _same_runs(first_base, base) and _same_runs(first_head, head):
        # The confirming attempt uploaded no report of its own (GitHub lists the run's
        # artifacts across attempts): the first attempt's runs, read twice, would
        # "confirm" themselves. Called on the one attempt instead.
        return _Judged(compare(base, head, policy, knowledge), repeated=True)
    # What the first attempt would have called red, judged again with both attempts' runs.
    keys = engine_confirm.pending(compare(first_base, first_head, policy, knowledge))
    both = compare(
        engine_confirm.combine(dict(before["base"]), base),
        engine_confirm.combine(dict(before["head"]), head),
        policy,
        knowledge,
    )
    settled = engine_confirm.settle(both, keys)
    confirmed = len(engine_confirm.pending(both)) if keys else 0
    return _Judged(settled, (), keys, min(confirmed, len(keys)))


def _same_runs(earlier: SideReport, now: SideReport) -> bool:
    return earlier.series.keys() == now.series.keys() and all(
        earlier.series[key].samples == series.samples for key, series in now.series.items()
    )


def _confirming_notice(run: Run, count: int) -> str:
    regressions = "regression" if count == 1 else "regressions"
    return (
        f"⏳ Confirming {count} {regressions} beyond tolerance: a stochastic tool's result is "
        f"measured again before it is called (attempt {run.attempt + 1} of run {run.id}; "
        "both attempts' runs will be compared together)."
    )


def _settled_notice(run: Run, judged: _Judged) -> str:
    if not judged.settled:
        return f"ℹ️ Attempt {run.attempt} was compared together with attempt {run.attempt - 1}."
    held, gone = judged.confirmed, len(judged.settled) - judged.confirmed
    return (
        f"ℹ️ Attempt {run.attempt} re-measured what attempt {run.attempt - 1} would have "
        f"called red, and both attempts' runs were compared together: {held} confirmed, "
        f"{gone} not reproduced."
    )


def _read_sides(
    contents: ArtifactContents, context: RenderContext, config: ConfigResult
) -> tuple[SideReport, SideReport, RenderContext]:
    """Both sides of the report, read and narrowed to the configured platforms."""
    sides = split_sides(contents.files, contents.collisions)
    base, head = read_side(sides.files["base"]), read_side(sides.files["head"])
    # Colliding names are failed cases of their side: never one copy shown as the only one.
    base.failures.extend(sides.failures["base"])
    head.failures.extend(sides.failures["head"])
    context = replace(context, skipped=(*contents.skipped, *sides.left_out))
    # `platforms:` of the configuration, then board-only folders lined up with twister's.
    wanted = config.config.platforms
    base, head = platforms.select(base, wanted), platforms.select(head, wanted)
    base, head, lined_up = platforms.line_up(base, head)
    if lined_up:
        said = tuple(f"ℹ️ {text(notice, 300)}" for notice in lined_up)
        context = replace(context, notices=(*context.notices, *said))
    return base, head, context


def _render(
    comparison: Comparison,
    context: RenderContext,
    config: ConfigResult,
    sides: tuple[SideReport, SideReport] | None,
) -> Report:
    prepared = prepare(comparison, context)
    check = checkrun.for_comparison(
        comparison, compose(prepared), fail_on_regression=config.config.fail_on_regression
    )
    return Report(prepared, check, sides)


async def _read_report_or_error(
    ctx: JobContext, run: Run, artifact: ArtifactInfo
) -> ArtifactContents | ArtifactError | ArtifactGone:
    """The report's files, or why they could not be read (shown in the comment); other
    errors (GitHub unavailable, say) are raised for the job to be retried."""
    try:
        return await download_report(ctx.installation, run.owner, run.name, artifact, LIMITS)
    except (ArtifactError, ArtifactGone) as exc:
        return exc
