"""A person's command on a watch issue: ``/perfbot accept [reason]`` takes the new level
of every change of the issue as its series' baseline, and closes the issue."""

from __future__ import annotations

from dataclasses import replace

from perfbot.app.context import JobContext
from perfbot.app.jobs import IssueCommandJob
from perfbot.app.pulllock import branch_lock
from perfbot.app.rerun import role_at_least
from perfbot.engine.show.watch import accepted_comment
from perfbot.store.watched import WatchedChange as Told
from perfbot.store.watched import level_accepted

# Someone refused on an issue gets one reaction in this time: a comment costs its author
# nothing, perfbot REST calls.
ANSWER_WINDOW_SECONDS = 3600.0


async def on_issue_command(ctx: JobContext, job: IssueCommandJob) -> str:
    repo, login = job.repo, job.login
    refused = await ctx.write_refused(repo.owner, repo.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    changes = await ctx.store.issue_changes(repo.id, job.number)
    if not changes:
        return ctx.ended(f"ignored: issue {job.number} is no watch issue of perfbot")
    config = (await ctx.config(repo.owner, repo.name)).repo_config
    told = f"refused:{repo.id}:issue:{job.number}:{login.lower()}"
    if not await ctx.store.take_mark(told, ctx.delivery_id, ANSWER_WINDOW_SECONDS, ctx.now()):
        return ctx.ended(f"accept ignored: {login} was already told on issue {job.number}")
    role = await ctx.installation.collaborator_role(repo.owner, repo.name, login)
    if not role_at_least(role, config.accept_permission):
        await ctx.installation.add_reaction(repo.owner, repo.name, job.comment_id, "confused")
        needed = config.accept_permission
        return ctx.ended(f"accept refused: {login} has role {role}, {needed} needed; reacted")
    await ctx.store.drop_mark(told, ctx.delivery_id)
    async with branch_lock(ctx, repo.id, changes[0].branch):
        # Read again under the lock: the watch may have moved or closed them meanwhile.
        standing = [
            c for c in await ctx.store.issue_changes(repo.id, job.number) if c.state == "open"
        ]
        if not standing:
            await ctx.installation.add_reaction(repo.owner, repo.name, job.comment_id, "eyes")
            return ctx.ended(f"accept: issue {job.number} has no open change left; reacted")
        refused = await ctx.write_refused(repo.owner, repo.name)
        if refused is not None:
            return ctx.ended(f"accept not written: {refused}")
        await _accept(ctx, job, standing)
    return ctx.ended(f"accepted by {login}: {len(standing)} change(s) of issue {job.number}")


async def _accept(ctx: JobContext, job: IssueCommandJob, standing: list[Told]) -> None:
    """GitHub first, the store last: a job that stops between them is run again and finds
    the changes still open, so the issue is never left open with its changes accepted."""
    repo, now = job.repo, ctx.now()
    said = accepted_comment(job.login, job.reason, len(standing))
    await ctx.installation.create_comment(repo.owner, repo.name, job.number, said)
    await ctx.installation.update_issue(
        repo.owner, repo.name, job.number, state="closed", state_reason="completed"
    )
    await ctx.store.acknowledge([level_accepted(c, job.login, job.reason, now) for c in standing])
    closed = [
        replace(c, state="closed", closed_reason="accepted", updated_at=now) for c in standing
    ]
    await ctx.store.save_watched(closed)
    await ctx.installation.add_reaction(repo.owner, repo.name, job.comment_id, "rocket")
