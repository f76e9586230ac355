"""Reviewer commands: ``/perfbot rerun``, ``/perfbot accept``, ``/perfbot unaccept`` and
``/perfbot help`` in PR comments, and the "Re-run" button of perfbot's check run."""

from __future__ import annotations

from perfbot.app.acceptance import accept_command
from perfbot.app.context import JobContext
from perfbot.app.jobs import IssueCommentJob, Repository, RerequestJob
from perfbot.app.repoconfig import RepoConfig
from perfbot.app.rerun import REACTIONS, Rerun, RerunOutcome, request_rerun, role_refusal
from perfbot.engine.show.render import help_body
from perfbot.github.types import PullInfo, Reaction

# `/perfbot help` is answered once per PR and person in this time, and someone refused
# gets one reaction in it: a comment costs its author nothing, perfbot REST calls.
ANSWER_WINDOW_SECONDS = 3600.0


async def on_issue_comment(ctx: JobContext, job: IssueCommentJob) -> str:
    """A person's command on a PR (``perfbot.app.jobs.person_command`` decided it is one)."""
    repo, number, comment_id, login = job.repo, job.number, job.comment_id, job.login
    command = job.command
    config = await _enabled_config(ctx, repo)
    if isinstance(config, str):
        return config
    # Someone refused on this PR within the window costs no REST call at all: the record
    # is taken first, and given back unless this command is refused too.
    told = f"refused:{repo.id}:{number}:{login.lower()}"
    if not await ctx.store.take_mark(told, ctx.delivery_id, ANSWER_WINDOW_SECONDS, ctx.now()):
        return ctx.ended(f"{command} ignored: {login} was already told on PR {number}")
    refused = False
    try:
        pull = await ctx.installation.get_pull(repo.owner, repo.name, number)
        if pull is None or pull.base_repo_id != repo.id:
            return ctx.ended(f"ignored: PR {number} not found")
        if _muted(pull, config):
            return ctx.ended(f"ignored: PR {number} carries the mute label")
        if command == "help":
            refusal = await role_refusal(ctx, repo, login, config.rerun_permission)
            if refusal is None:
                return await _answer_help(ctx, repo, pull, login, config)
            outcome = RerunOutcome(Rerun.REFUSED, f"help refused: {refusal}")
        elif command in ("accept", "unaccept"):
            outcome = await accept_command(ctx, job, pull, config)
        else:
            outcome = await request_rerun(ctx, repo, pull, login, config)
        if outcome.kind is Rerun.STOPPED:
            return ctx.ended(outcome.reason)
        refused = outcome.kind is Rerun.REFUSED
        reaction = REACTIONS[outcome.kind]
        return await _react(ctx, repo, pull, comment_id, reaction, reason=outcome.reason)
    finally:
        if not refused:
            await ctx.store.drop_mark(told, ctx.delivery_id)


async def _answer_help(
    ctx: JobContext, repo: Repository, pull: PullInfo, login: str, config: RepoConfig
) -> str:
    """The command list as a comment: once per PR and person within the window."""
    refused = await ctx.write_refused(repo.owner, repo.name, pull)
    if refused is not None:
        return ctx.ended(f"help not answered: {refused}")
    # The delivery owns the record: a retry of this very job may still answer.
    key = f"help:{repo.id}:{pull.number}:{login.lower()}"
    if not await ctx.store.take_mark(key, ctx.delivery_id, ANSWER_WINDOW_SECONDS, ctx.now()):
        return ctx.ended(f"help: already answered for {login} on PR {pull.number}")
    body = help_body(config.rerun_permission, config.accept_permission)
    reply = await ctx.installation.create_comment(repo.owner, repo.name, pull.number, body)
    return ctx.ended(f"help: answered {login} on PR {pull.number} in comment {reply.id}")


async def _react(
    ctx: JobContext,
    repo: Repository,
    pull: PullInfo,
    comment_id: int,
    content: Reaction,
    *,
    reason: str,
) -> str:
    refused = await ctx.write_refused(repo.owner, repo.name, pull)
    if refused is not None:
        return ctx.ended(f"{reason}; no reaction: {refused}")
    await ctx.installation.add_reaction(repo.owner, repo.name, comment_id, content)
    return ctx.ended(f"{reason}; reacted {content}")


async def on_check_rerequested(ctx: JobContext, job: RerequestJob) -> str:
    """``check_run`` / ``check_suite`` ``rerequested``: the same path as ``/perfbot rerun``."""
    repo, head_sha, login = job.repo, job.head_sha, job.login
    if job.app_id != ctx.app_id or job.by_bot:
        return ctx.ended(f"ignored: {job.event} not of this app, or not a person's re-request")
    config = await _enabled_config(ctx, repo)
    if isinstance(config, str):
        return config
    pulls = [
        pull
        for pull in await ctx.installation.pulls_for_commit(repo.owner, repo.name, head_sha)
        if pull.state == "open" and pull.head_sha == head_sha and pull.base_repo_id == repo.id
    ]
    if len(pulls) != 1:
        return ctx.ended(f"ignored: {len(pulls)} open PRs have the head {head_sha[:12]}")
    if _muted(pulls[0], config):
        return ctx.ended(f"ignored: PR {pulls[0].number} carries the mute label")
    outcome = await request_rerun(ctx, repo, pulls[0], login, config)
    ctx.log.info("re-run requested by the check's button: %s", outcome.kind.value)
    return ctx.ended(outcome.reason)


async def _enabled_config(ctx: JobContext, repo: Repository) -> RepoConfig | str:
    """The repository's configuration, or (logged) why perfbot must not write there."""
    refused = await ctx.write_refused(repo.owner, repo.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    return (await ctx.config(repo.owner, repo.name)).repo_config


def _muted(pull: PullInfo, config: RepoConfig) -> bool:
    return config.mutes(pull.labels)
