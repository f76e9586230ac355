"""A pull request's measurement run completed: its report becomes the PR's comment.

Top to bottom: the configuration, the run's artifacts, the PR proof, the engine's judge
(``perfbot.app.reporting``), the measurements recorded, and the comment and check run
written (``perfbot.app.publish``). Nothing here decides what the engine could.
"""

from __future__ import annotations

import asyncio
from typing import Any

from perfbot.app import confirm
from perfbot.app.artifacts import ArtifactContents, ArtifactError
from perfbot.app.context import JobContext
from perfbot.app.download import newest_artifact, read_report_or_error
from perfbot.app.gates import measurement_config
from perfbot.app.jobs import PullRunCompleted, Run
from perfbot.app.measurements import record_report_measurements
from perfbot.app.publish import post_report
from perfbot.app.repoconfig import ConfigResult
from perfbot.app.reporting import judge_for_pull
from perfbot.app.runpull import proven_pull
from perfbot.github.errors import ArtifactGone
from perfbot.github.types import ArtifactInfo

Contents = ArtifactContents | ArtifactError | ArtifactGone


async def on_pull_run_completed(ctx: JobContext, job: PullRunCompleted) -> str:
    run = job.run
    if run.run_repo_id != run.repo_id:
        return ctx.ended(f"ignored: run {run.id} is not a pull_request run of this repository")
    loaded = await measurement_config(ctx, run)
    if isinstance(loaded, str):
        return loaded
    artifacts = await ctx.installation.list_run_artifacts(run.owner, run.name, run.id)
    source = await _report_source(ctx, run, artifacts, loaded)
    if isinstance(source, str):
        return ctx.ended(source)
    # When GitHub itself names the PR the proof is all but certain: the report is
    # downloaded meanwhile (nothing is posted before the proof), and the comment waits one
    # round trip less. A run that names its PR only through its own artifact (a fork's)
    # is proven first: a forged number costs no download.
    early = len(run.hinted_pulls) == 1 and isinstance(source, ArtifactInfo)
    reading = asyncio.ensure_future(_contents(ctx, run, source)) if early else None
    try:
        # The PR's state before its proof is asked for: a head noted after this read is
        # one the proof's answer may not know (``post_report`` then reads the PR again).
        before_proof = (
            await ctx.store.get_pull(run.repo_id, run.hinted_pulls[0])
            if len(run.hinted_pulls) == 1
            else None
        )
        pull = await proven_pull(ctx.installation, run, artifacts, loaded.repo_config, ctx.log)
    except BaseException:
        _abandon(reading)
        raise
    if isinstance(pull, str):
        _abandon(reading)
        return pull
    proved_at = ctx.now()
    contents = await reading if reading is not None else await _contents(ctx, run, source)
    report = await judge_for_pull(ctx, run, pull, contents, loaded)
    await record_report_measurements(ctx, run, pull, report.sides)
    return await post_report(
        ctx, run, pull, report, loaded.repo_config, proved_at=proved_at, before_proof=before_proof
    )


async def _report_source(
    ctx: JobContext, run: Run, artifacts: list[ArtifactInfo], loaded: ConfigResult
) -> ArtifactInfo | ArtifactContents | str:
    """The run's report artifact; or, for a confirming attempt that uploaded none, the
    attempt it confirms rebuilt from the store; else why there is no report to read."""
    config = loaded.repo_config
    report = newest_artifact(artifacts, config.report_artifact, run.id)
    if report is not None:
        return report
    # A confirming attempt that uploaded nothing still settles what it was to confirm.
    stored = await confirm.stored_report(ctx, run) if config.confirm else None
    if stored is None:
        return f"no usable {config.report_artifact!r} artifact on run {run.id}"
    return stored


async def _contents(ctx: JobContext, run: Run, source: ArtifactInfo | ArtifactContents) -> Contents:
    if isinstance(source, ArtifactContents):
        return source
    return await read_report_or_error(ctx.installation, run.owner, run.name, source)


def _abandon(task: asyncio.Future[Any] | None) -> None:
    """Stop a download nobody needs any more (if one was started).

    Not awaited: waiting for it could swallow a cancellation of the job itself.
    """
    if task is None:
        return
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
