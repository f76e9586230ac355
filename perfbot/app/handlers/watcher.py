"""A push run of the default branch was recorded: its series are judged for changes of
level, and what changed is told in one issue per commit (``perfbot.app.watch_issues``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Final

from perfbot.app.context import JobContext
from perfbot.app.jobs import WatchJob
from perfbot.app.pulllock import branch_lock
from perfbot.app.watch_issues import carry_out, rows
from perfbot.app.watch_window import branch_window
from perfbot.app.watch_words import Watching
from perfbot.engine.judge.changes import ChangeId
from perfbot.engine.judge.watch import Reported, SeriesKey, plan
from perfbot.store.watched import Acknowledgement
from perfbot.store.watched import WatchedChange as Told

# Up to this many measured commits (of all the series together) are judged on the loop.
INLINE_POINTS: Final = 2000


async def on_watch(ctx: JobContext, job: WatchJob) -> str:
    repo = job.repo
    refused = await ctx.write_refused(repo.owner, repo.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    config = (await ctx.config(repo.owner, repo.name)).repo_config
    watch = config.watch
    if not watch.on(ctx.watch_by_default):
        return ctx.ended(f"watch of {job.branch} is off (watch: false, or PERFBOT_WATCH)")
    window = await branch_window(ctx, job, watch)
    if isinstance(window, str):
        return ctx.ended(window)
    async with branch_lock(ctx, repo.id, job.branch):
        told = await ctx.store.open_changes(repo.id, job.branch)
        accepted = baselines(await ctx.store.branch_acknowledgements(repo.id, job.branch))
        reported = [Reported(identity(row), row.issue_number) for row in told]
        judge = partial(
            plan,
            window.series,
            reported,
            policy=config.policy(),
            min_change=watch.min_change,
            accepted=accepted,
        )
        # Thousands of series of a hundred commits are seconds of work: not on the loop.
        points = sum(len(one.commits) for one in window.series)
        plans = judge() if points <= INLINE_POINTS else await asyncio.to_thread(judge)
        watching = Watching(
            job, window, {identity(row): row for row in told}, accepted, config.accept_permission
        )
        if watch.issues:
            return await carry_out(ctx, watching, plans)
        recorded = [row for p in plans if p.issue is None for row in rows(watching, p, None, ctx)]
        await ctx.store.save_watched(recorded)
        return ctx.ended(
            f"watch of {job.branch}: {len(recorded)} change(s) recorded, no issue (issues: false)"
        )


def identity(row: Told) -> ChangeId:
    """A recorded change as the engine knows it: its series and its first commit now."""
    return ChangeId(row.platform, row.metric, row.settings, row.sha)


def baselines(acknowledgements: Sequence[Acknowledgement]) -> dict[SeriesKey, str]:
    """Each series' newest accepted level: its commit (acknowledgements oldest first)."""
    return {(a.platform, a.metric, a.settings): a.sha for a in acknowledgements}
