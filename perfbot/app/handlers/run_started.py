"""A pull request's measurement run was requested or started: until it completes, the
comment says its numbers are for the previous commit."""

from __future__ import annotations

from dataclasses import replace

from perfbot.app.comment import live, publish
from perfbot.app.context import JobContext
from perfbot.app.gates import measurement_config
from perfbot.app.jobs import PullRunStarted
from perfbot.app.pulllock import pull_lock
from perfbot.app.pullproof import prove_pull
from perfbot.store.base import PullState


async def on_pull_run_started(ctx: JobContext, job: PullRunStarted) -> str:
    run = job.run
    if run.run_repo_id != run.repo_id:
        return ctx.ended(f"ignored: run {run.id} is not a pull_request run of this repository")
    loaded = await measurement_config(ctx, run)
    if isinstance(loaded, str):
        return loaded
    hint = run.hinted_pulls[0] if run.hinted_pulls else None
    proof = await prove_pull(ctx.installation, run.owner, run.name, run.identity, hint)
    if proof.pull is None:
        return ctx.ended(f"started run {run.id}: {proof.reason}")
    number = proof.pull.number
    if loaded.repo_config.mutes(proof.pull.labels):
        return ctx.ended(f"ignored: PR {number} carries the mute label")
    async with pull_lock(ctx, run.repo_id, number):
        state = await ctx.store.get_pull(run.repo_id, number) or PullState(run.repo_id, number)
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
