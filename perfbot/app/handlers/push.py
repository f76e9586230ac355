"""``workflow_run`` of a ``push``: a measurement of the default branch is recorded, silently.

The run measured one commit (its report holds ``head/`` only, or is a single run with
neither ``base/`` nor ``head/``). Its series go to the measurement store with the side
'push' at the run's head commit: they are the target branch's trend, and, measured more
than once, its noise. Nothing is posted: no comment, no check run. Every other push run
(another branch, a fork's, not a configured measurement workflow) ends with its reason.
"""

from __future__ import annotations

import asyncio
from typing import Final

from perfbot.app.artifacts import ArtifactError
from perfbot.app.context import JobContext
from perfbot.app.download import LIMITS, download_report, newest_artifact
from perfbot.app.gates import measurement_config
from perfbot.app.job_payloads import encode
from perfbot.app.jobs import PushRunCompleted, Repository, Run, WatchJob
from perfbot.app.measurements import INLINE_SERIES, MAX_RECORDED_ROWS, MAX_RECORDED_SAMPLES
from perfbot.app.repoconfig import RepoConfig, WatchConfig
from perfbot.app.routes import INTERNAL_WATCH, watch_key
from perfbot.engine.read import platforms
from perfbot.engine.read.sides import SIDES, ReportFile, SideReport, read_side, split_sides
from perfbot.github.errors import ArtifactGone
from perfbot.store.base import NewJob
from perfbot.store.measurements import MeasurementRecord

# Up to this size a report is parsed on the event loop (as for PR runs).
INLINE_BYTES: Final = 64 * 1024


async def on_push_run_completed(ctx: JobContext, job: PushRunCompleted) -> str:
    """Record a completed push run of the default branch; every job ends with why."""
    run = job.run
    where = f"{run.head_branch}@{run.head_sha[:7]}"
    if run.run_repo_id != run.repo_id or run.head_repo_id != run.repo_id:
        return ctx.ended(f"ignored: push run {run.id} is not of {run.full_name} itself")
    if run.default_branch is None or run.head_branch != run.default_branch:
        default = run.default_branch or "unknown"
        return ctx.ended(
            f"ignored: push run {run.id} of {where} is not on the default branch ({default})"
        )
    loaded = await measurement_config(ctx, run)
    if isinstance(loaded, str):
        return loaded
    measured = await _measured_side(ctx, run, loaded.repo_config, where)
    if isinstance(measured, str):
        return ctx.ended(measured)
    side, note = measured
    # The download took a while: perfbot may have been suspended or disabled meanwhile.
    refused = await ctx.write_refused(run.owner, run.name)
    if refused is not None:
        return ctx.ended(f"push run {run.id} of {where} not recorded: {refused}")
    installation_id = ctx.installation_id
    now = ctx.now()
    if len(side.series) <= INLINE_SERIES:
        records = push_records(run, side, installation_id, now)
    else:
        records = await asyncio.to_thread(push_records, run, side, installation_id, now)
    stored = await ctx.store.record_measurements(records)
    again = "" if stored == len(records) else f", {len(records) - stored} of them stored already"
    ignored = f"; {note}" if note else ""
    watching = await _queue_watch(ctx, run, loaded.repo_config.watch)
    return ctx.ended(
        f"recorded {len(records)} series of {where} (push run{again}): nothing to comment"
        f"{ignored}; {watching}"
    )


async def _queue_watch(ctx: JobContext, run: Run, watch: WatchConfig) -> str:
    """Queue the branch's watch over what this run recorded (once per run attempt, however
    often its delivery comes); what became of it, in words."""
    if not watch.on(ctx.watch_by_default):
        return "watch off"
    job = WatchJob(
        Repository(run.repo_id, run.owner, run.name),
        run.head_branch,
        run.head_sha,
        run.id,
        run.attempt,
    )
    queued = NewJob(INTERNAL_WATCH, encode(job), watch_key(job), ctx.installation_id)
    delivery = f"watch:{run.repo_id}:{run.id}:{run.attempt}"
    new = await ctx.store.record_delivery(delivery, INTERNAL_WATCH, "recorded", queued, ctx.now())
    return "watch queued" if new else "watch queued already"


async def _measured_side(
    ctx: JobContext, run: Run, config: RepoConfig, where: str
) -> tuple[SideReport, str] | str:
    """The one side the push run measured, narrowed to ``platforms:``, with a note on what
    was not read; else why nothing can be recorded."""
    artifacts = await ctx.installation.list_run_artifacts(run.owner, run.name, run.id)
    artifact = newest_artifact(artifacts, config.report_artifact, run.id)
    if artifact is None:
        return f"no usable {config.report_artifact!r} artifact on push run {run.id}"
    not_recorded = f"push run {run.id} of {where} not recorded"
    try:
        contents = await download_report(ctx.installation, run.owner, run.name, artifact, LIMITS)
    except (ArtifactError, ArtifactGone) as exc:
        return f"{not_recorded}: {exc}"
    if sum(len(file.data) for file in contents.files) <= INLINE_BYTES:
        side, note = single_side(contents.files)
    else:  # parsing a big report takes seconds of CPU: off the event loop
        side, note = await asyncio.to_thread(single_side, contents.files)
    if side is None:
        return f"{not_recorded}: {note}"
    side = platforms.select(side, config.platforms)
    if not side.series:
        return f"{not_recorded}: no measurements"
    return side, note


def single_side(files: list[ReportFile]) -> tuple[SideReport | None, str]:
    """The one run a push measured, and a note on what of the report was not read.

    ``head/`` when the report has it (a ``base/`` beside it measured no commit of this
    push: left out, and said); else the files at the root as a single run. A report of
    ``base/`` alone measured nothing of this commit: None, with why.
    """
    tops = {file.path.partition("/")[0] for file in files if "/" in file.path}
    if not tops & set(SIDES):
        return read_side(files), ""
    sides = split_sides(files)
    if not sides.files["head"]:
        return None, "its report has base/ but no head/ (a push run measures one commit)"
    head = read_side(sides.files["head"])
    left_out = len(sides.files["base"]) + len(sides.left_out)
    note = f"{left_out} file(s) outside head/ left out" if left_out else ""
    return head, note


def push_records(
    run: Run, side: SideReport, installation_id: int | None, now: float
) -> list[MeasurementRecord]:
    """The rows of a push run: each series at the run's head commit, side 'push', bounded
    as a PR run's are (an artifact is untrusted even on the default branch)."""
    records: list[MeasurementRecord] = []
    samples = 0
    for (platform, metric), series in sorted(side.series.items(), key=lambda item: item[0]):
        samples += len(series.samples)
        if len(records) >= MAX_RECORDED_ROWS or samples > MAX_RECORDED_SAMPLES:
            break
        records.append(
            MeasurementRecord(
                repo_id=run.repo_id,
                repo_full_name=run.full_name,
                installation_id=installation_id,
                platform=platform,
                metric=metric,
                unit=series.unit,
                better=series.better,
                scale=series.scale,
                side="push",
                sha=run.head_sha,
                run_id=run.id,
                run_attempt=run.attempt,
                workflow_id=None,
                workflow_name=run.workflow_name,
                event=run.event,
                branch=run.head_branch,
                pr_number=None,
                samples=tuple(series.samples),
                settings=series.settings,
                recorded_at=now,
                from_fork=False,
            )
        )
    return records
