"""A re-run a person asks for (``/perfbot rerun``, or the Re-run button of perfbot's check
run): their role checked against ``rerun.permission``, the measurement run chosen, the
re-run started, and the comment marked until the new result lands."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from perfbot.app.comment import publish
from perfbot.app.context import JobContext
from perfbot.app.jobs import Repository
from perfbot.app.pulllock import pull_lock
from perfbot.app.repoconfig import RepoConfig
from perfbot.github.errors import GitHubError
from perfbot.github.types import ROLES, PullInfo, Reaction, WorkflowRunInfo
from perfbot.store.base import PullState

# A run in one of these states will report on its own: a rerun starts nothing more.
PENDING_STATUSES = frozenset({"queued", "in_progress", "requested", "waiting", "pending"})
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


async def request_rerun(
    ctx: JobContext, repo: Repository, pull: PullInfo, login: str, config: RepoConfig
) -> RerunOutcome:
    """Re-run the measurement of the PR's head for ``login``, if their role allows it."""
    inst = ctx.installation
    try:
        refusal = await role_refusal(ctx, repo, login, config.rerun_permission)
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
    async with pull_lock(ctx, repo.id, pull.number):
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
    ctx: JobContext, repo: Repository, pull: PullInfo, config: RepoConfig
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
    ctx: JobContext, repo: Repository, runs: list[WorkflowRunInfo], config: RepoConfig
) -> WorkflowRunInfo | None:
    """The newest of ``runs`` (newest first) that is a measurement: of a configured
    workflow, or (with none configured) one that uploaded the report artifact."""
    if config.workflows:
        return next((r for r in runs if config.matches_workflow(r.name, r.path)), None)
    # A run being re-run still lists the artifacts of its earlier attempt.
    for run in runs[:MAX_PROBED_RUNS]:
        artifacts = await ctx.installation.list_run_artifacts(repo.owner, repo.name, run.id)
        if any(artifact.name == config.report_artifact for artifact in artifacts):
            return run
    return None


async def role_refusal(ctx: JobContext, repo: Repository, login: str, minimum: str) -> str | None:
    """Why ``login``, lacking the role ``minimum`` (``rerun.permission`` or
    ``accept.permission``), may not command perfbot on ``repo``, or None when they may."""
    role = await ctx.installation.collaborator_role(repo.owner, repo.name, login)
    if role_at_least(role, minimum):
        return None
    return f"{login} has role {role}, {minimum} needed"
