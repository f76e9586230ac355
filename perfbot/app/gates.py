"""Whether perfbot acts on a workflow run at all: the operator, the installation, the
repository's configuration and its ``workflows:`` filter, asked once at a job's start.

(Every write asks ``JobContext.write_refused`` again, just before it.)
"""

from __future__ import annotations

from perfbot.app.context import JobContext
from perfbot.app.jobs import Run
from perfbot.app.repoconfig import ConfigResult


async def measurement_config(ctx: JobContext, run: Run) -> ConfigResult | str:
    """The configuration of the run's repository when the run is one of its measurements;
    else why it is ignored (logged)."""
    refused = await ctx.write_refused(run.owner, run.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    loaded = await ctx.config(run.owner, run.name)
    if not loaded.repo_config.matches_workflow(run.workflow_name, run.workflow_path):
        return ctx.ended(f"ignored: workflow {run.workflow_name!r} is not a configured measurement")
    return loaded
