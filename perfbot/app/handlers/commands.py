"""Reviewer commands: ``/perfbot rerun`` and ``/perfbot help`` in PR comments, the "Re-run"
button of perfbot's check run, and forgetting repositories that were uninstalled."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from perfbot.app.commands import HELP_TEXT
from perfbot.app.comment import publish
from perfbot.app.context import JobContext
from perfbot.app.jobs import InstallationJob, IssueCommentJob, Repository, RerequestJob
from perfbot.app.repoconfig import ConfigResult
from perfbot.engine.show.escape import code
from perfbot.github.errors import GitHubError
from perfbot.github.types import ROLES, PullInfo, Reaction, WorkflowRunInfo
from perfbot.store.base import PullState

# A run in one of these states will report on its own: a rerun starts nothing more.
PENDING_STATUSES = frozenset({"queued", "in_progress", "requested", "waiting", "pending"})
# `/perfbot help` is answered once per PR and person in this time, and someone refused
# gets one reaction in it: a comment costs its author nothing, perfbot REST calls.
ANSWER_WINDOW_SECONDS = 3600.0
# Without `workflows:` configured, a measurement run is found by its report artifact: the
# head's newest runs are asked for their artifacts, this many at most.
MAX_PROBED_RUNS = 10


class Rerun(enum.Enum):
    STARTED = "started"
    PENDING = "pending"  # a measurement of the head is already queued or running
    REFUSED = "refused"  # the requester lacks the configured permission
    FAILED = "failed"  # no run to re-run, or GitHub refused
    STOPPED = "stopped"  # perfbot may not write there any more (suspended, opted out…)


# The one reaction a command gets: it says how the command ended.
REACTIONS: dict[Rerun, Reaction] = {
    Rerun.STARTED: "rocket",
    Rerun.PENDING: "eyes",
    Rerun.REFUSED: "confused",
    Rerun.FAILED: "confused",
}


@dataclass(frozen=True, slots=True)
class RerunOutcome:
    kind: Rerun
    reason: str  # one line, for the log and the job's record


@dataclass(frozen=True, slots=True)
class RunChoice:
    """The run a re-run request means, or why there is none to start."""

    run: WorkflowRunInfo | None
    pending: bool
    reason: str


def role_at_least(role: str, minimum: str) -> bool:
    """Whether ``role`` ranks at or above ``minimum`` (unknown roles rank as none)."""
    rank = {name: index for index, name in enumerate(ROLES)}
    return rank.get(role, 0) >= rank.get(minimum, len(ROLES))


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
            refusal = await _role_refusal(ctx, repo, login, config)
            if refusal is None:
                return await _answer_help(ctx, repo, pull, login, config)
            outcome = RerunOutcome(Rerun.REFUSED, f"help refused: {refusal}")
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
    ctx: JobContext, repo: Repository, pull: PullInfo, login: str, config: ConfigResult
) -> str:
    """The command list as a comment: once per PR and person within the window."""
    refused = await ctx.write_refused(repo.owner, repo.name, pull)
    if refused is not None:
        return ctx.ended(f"help not answered: {refused}")
    # The delivery owns the record: a retry of this very job may still answer.
    key = f"help:{repo.id}:{pull.number}:{login.lower()}"
    if not await ctx.store.take_mark(key, ctx.delivery_id, ANSWER_WINDOW_SECONDS, ctx.now()):
        return ctx.ended(f"help: already answered for {login} on PR {pull.number}")
    permission = code(config.config.rerun_permission)
    reply = await ctx.installation.create_comment(
        repo.owner, repo.name, pull.number, HELP_TEXT.format(permission=permission)
    )
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


async def request_rerun(
    ctx: JobContext, repo: Repository, pull: PullInfo, login: str, config: ConfigResult
) -> RerunOutcome:
    """Re-run the measurement of the PR's head for ``login``, if their role allows it."""
    inst = ctx.installation
    try:
        refusal = await _role_refusal(ctx, repo, login, config)
        if refusal is not None:
            return RerunOutcome(Rerun.REFUSED, f"re-run refused: {refusal}")
        choice = await choose_run(ctx, repo, pull, config)
        if choice.pending:
            return RerunOutcome(Rerun.PENDING, f"re-run not needed: {choice.reason}")
        if choice.run is None:
            return RerunOutcome(Rerun.FAILED, f"re-run failed: {choice.reason}")
        refused = await ctx.write_refused(repo.owner, repo.name, pull)
        if refused is not None:
            return RerunOutcome(Rerun.STOPPED, f"re-run not requested: {refused}")
        await inst.rerun_workflow_run(repo.owner, repo.name, choice.run.id)
    except GitHubError as exc:
        return RerunOutcome(Rerun.FAILED, f"re-run failed: {exc}")
    reason = f"re-run of run {choice.run.id} started for {login} ({choice.reason})"
    async with ctx.pull_lock(repo.id, pull.number):
        state = await ctx.store.get_pull(repo.id, pull.number) or PullState(repo.id, pull.number)
        state = replace(state, rerun_requested_by=login)
        refused = await ctx.write_refused(repo.owner, repo.name, pull)
        if state.report_body is not None and state.comment_id is not None and refused is None:
            await publish(ctx, repo.owner, repo.name, state)
        else:
            await ctx.store.save_pull(state)
            if refused is not None:
                reason = f"{reason}; the comment was not marked: {refused}"
    return RerunOutcome(Rerun.STARTED, reason)


async def choose_run(
    ctx: JobContext, repo: Repository, pull: PullInfo, config: ConfigResult
) -> RunChoice:
    """The run to re-run for the PR's head: the one whose report the comment shows, else the
    newest run of a measurement workflow (never another workflow's: CI, lint, docs…)."""
    head = pull.head_sha
    runs = [
        run
        for run in await ctx.installation.runs_for_head(repo.owner, repo.name, head)
        if run.head_sha == head and run.event == "pull_request"
    ]
    state = await ctx.store.get_pull(repo.id, pull.number)
    shown = state.reported_run_id if state and state.reported_head_sha == head else None
    chosen = next((run for run in runs if run.id == shown), None)
    if chosen is not None:
        why = f"its report is the one shown on PR {pull.number}"
    else:
        chosen = await _newest_measurement(ctx, repo, runs, config)
        if chosen is None:
            return RunChoice(None, False, f"no measurement run for {head[:12]}")
        why = f"the newest {chosen.name!r} run of {head[:12]}"
    # Another run of the same workflow for this head is under way: it will report.
    if any(run.path == chosen.path and run.status in PENDING_STATUSES for run in runs):
        return RunChoice(None, True, f"a {chosen.name!r} run of {head[:12]} is pending")
    return RunChoice(chosen, False, why)


async def _newest_measurement(
    ctx: JobContext, repo: Repository, runs: list[WorkflowRunInfo], config: ConfigResult
) -> WorkflowRunInfo | None:
    """The newest of ``runs`` (newest first) that is a measurement: of a configured
    workflow, or (with none configured) one that uploaded the report artifact."""
    if config.config.workflows:
        return next((r for r in runs if config.config.matches_workflow(r.name, r.path)), None)
    # A run being re-run still lists the artifacts of its earlier attempt.
    for run in runs[:MAX_PROBED_RUNS]:
        artifacts = await ctx.installation.list_run_artifacts(repo.owner, repo.name, run.id)
        if any(artifact.name == config.config.report_artifact for artifact in artifacts):
            return run
    return None


async def _role_refusal(
    ctx: JobContext, repo: Repository, login: str, config: ConfigResult
) -> str | None:
    """Why ``login`` may not command perfbot on ``repo``, or None when they may."""
    minimum = config.config.rerun_permission
    role = await ctx.installation.collaborator_role(repo.owner, repo.name, login)
    if role_at_least(role, minimum):
        return None
    return f"{login} has role {role}, {minimum} needed"


async def _enabled_config(ctx: JobContext, repo: Repository) -> ConfigResult | str:
    """The repository's configuration, or (logged) why perfbot must not write there."""
    refused = await ctx.write_refused(repo.owner, repo.name)
    if refused is not None:
        return ctx.ended(f"ignored: {refused}")
    return await ctx.configs.get(ctx.installation, repo.owner, repo.name)


def _muted(pull: PullInfo, config: ConfigResult) -> bool:
    return config.config.mutes(pull.labels)
