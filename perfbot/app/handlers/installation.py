"""Installation events: perfbot suspended, unsuspended or uninstalled, and repositories
removed from it; their stored state is forgotten."""

from __future__ import annotations

from perfbot.app.context import JobContext
from perfbot.app.jobs import InstallationJob


async def on_installation(ctx: JobContext, job: InstallationJob) -> str:
    """``installation`` suspend / unsuspend / deleted, ``installation_repositories`` removed."""
    action, installation_id = job.action, job.installation_id
    reason = f"installation {installation_id}: {action} (nothing to do)"
    if action in ("suspend", "unsuspend", "deleted") and isinstance(installation_id, int):
        # A deleted installation is never installed again under the same id: recorded
        # like a suspension, for good, so that a job still running for it writes nothing
        # more. Ordered by GitHub's time: ingest recorded this event already, and an
        # older one redelivered late leaves the newer state alone.
        wanted = action != "unsuspend"
        suspended = await ctx.store.set_suspended(
            installation_id,
            wanted,
            ctx.now(),
            job.event_time,
            final=action == "deleted",
        )
        outcome = "" if suspended == wanted else " ignored: a newer event is recorded"
        reason = ctx.ended(f"installation {installation_id}: {action}{outcome}")
    if action in ("deleted", "removed"):
        reason = f"{reason}; {await on_uninstalled(ctx, job.forget_repository_ids)}"
    if action == "deleted" and isinstance(installation_id, int):
        # Also what its repositories measured that the payload does not list (an
        # installation on all repositories lists none).
        await ctx.store.forget_installation(installation_id)
        reason = ctx.ended(f"{reason}; forgot the measurements of installation {installation_id}")
    return reason


async def on_uninstalled(ctx: JobContext, ids: tuple[int, ...]) -> str:
    """``installation`` deleted / ``installation_repositories`` removed: forget their PRs
    and their measurements."""
    if ids:
        await ctx.store.forget_repositories(list(ids))
    return ctx.ended(f"forgot the pull requests of {len(ids)} repositories")
