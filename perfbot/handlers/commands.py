"""Reviewer commands: ``/perfbot rerun`` and ``/perfbot help`` in PR comments, the "Re-run"
button of perfbot's check run, and forgetting repositories that were uninstalled."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from perfbot.commands import HELP_TEXT, parse_command
from perfbot.escape import code
from perfbot.github import ROLES, GitHubError, PullInfo, Reaction
from perfbot.handlers.context import JobContext
from perfbot.handlers.workflow_run import BadPayload, publish
from perfbot.repoconfig import ConfigResult
from perfbot.store.base import PullState

# A run in one of these states will report on its own: a rerun starts nothing more.
PENDING_STATUSES = frozenset({"queued", "in_progress", "requested", "waiting", "pending"})


class Rerun(enum.Enum):
    STARTED = "started"
    PENDING = "pending"  # a measurement of the head is already queued or running
    REFUSED = "refused"  # the requester lacks the configured permission
    FAILED = "failed"  # no run to re-run, or GitHub refused


@dataclass(frozen=True, slots=True)
class Repository:
    id: int
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Repository:
        try:
            repo = payload["repository"]
            return cls(int(repo["id"]), str(repo["owner"]["login"]), str(repo["name"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadPayload(f"delivery without a usable repository ({exc})") from None


def role_at_least(role: str, minimum: str) -> bool:
    """Whether ``role`` ranks at or above ``minimum`` (unknown roles rank as none)."""
    rank = {name: index for index, name in enumerate(ROLES)}
    return rank.get(role, 0) >= rank.get(minimum, len(ROLES))


async def on_issue_comment(ctx: JobContext, payload: dict[str, Any]) -> None:
    repo = Repository.from_payload(payload)
    try:
        issue, comment = payload["issue"], payload["comment"]
        number, comment_id = int(issue["number"]), int(comment["id"])
        login, user_type = str(comment["user"]["login"]), comment["user"].get("type")
        body = str(comment.get("body") or "")
    except (KeyError, TypeError, ValueError) as exc:
        raise BadPayload(f"issue_comment delivery without a usable {exc}") from None
    command = parse_command(body)
    if (
        payload.get("action") != "created"
        or not issue.get("pull_request")
        or user_type == "Bot"
        or command is None
    ):
        return
    config = await _enabled_config(ctx, repo)
    if config is None:
        return
    pull = await ctx.installation.get_pull(repo.owner, repo.name, number)
    if pull is None or pull.base_repo_id != repo.id:
        ctx.log.info("ignored: PR %s not found", number)
        return
    if _muted(pull, config):
        ctx.log.info("ignored: PR %s carries the mute label", number)
        return

    async def react(content: Reaction) -> None:
        await ctx.installation.add_reaction(repo.owner, repo.name, comment_id, content)

    await react("eyes")
    if command == "help":
        permission = code(config.config.rerun_permission)
        await ctx.installation.create_comment(
            repo.owner, repo.name, number, HELP_TEXT.format(permission=permission)
        )
        return
    outcome = await request_rerun(ctx, repo, pull, login, config)
    if outcome is Rerun.STARTED:
        await react("rocket")
    elif outcome in (Rerun.REFUSED, Rerun.FAILED):
        await react("confused")


async def on_check_rerequested(ctx: JobContext, payload: dict[str, Any]) -> None:
    """``check_run`` / ``check_suite`` ``rerequested``: the same path as ``/perfbot rerun``."""
    repo = Repository.from_payload(payload)
    kind = "check_run" if "check_run" in payload else "check_suite"
    try:
        subject = payload[kind]
        app_id = (subject.get("app") or {}).get("id")
        head_sha = str(subject["head_sha"])
        sender = payload["sender"]
        login, sender_type = str(sender["login"]), sender.get("type")
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadPayload(f"{kind} delivery without a usable {exc}") from None
    if payload.get("action") != "rerequested" or app_id != ctx.app_id or sender_type == "Bot":
        ctx.log.info("ignored: %s not of this app, or not a person's re-request", kind)
        return
    config = await _enabled_config(ctx, repo)
    if config is None:
        return
    pulls = [
        pull
        for pull in await ctx.installation.pulls_for_commit(repo.owner, repo.name, head_sha)
        if pull.state == "open" and pull.head_sha == head_sha and pull.base_repo_id == repo.id
    ]
    if len(pulls) != 1:
        ctx.log.info("ignored: %d open PRs have the head %s", len(pulls), head_sha[:12])
        return
    if _muted(pulls[0], config):
        ctx.log.info("ignored: PR %s carries the mute label", pulls[0].number)
        return
    outcome = await request_rerun(ctx, repo, pulls[0], login, config)
    ctx.log.info("re-run requested by the check's button: %s", outcome.value)


async def on_installation(ctx: JobContext, payload: dict[str, Any]) -> None:
    """``installation`` suspend / unsuspend / deleted, ``installation_repositories`` removed."""
    action = payload.get("action")
    installation = payload.get("installation") or {}
    installation_id = installation.get("id") if isinstance(installation, dict) else None
    if action in ("suspend", "unsuspend", "deleted") and isinstance(installation_id, int):
        await ctx.store.set_suspended(installation_id, action == "suspend", ctx.now())
        ctx.log.info("installation %s: %s", installation_id, action)
    if action in ("deleted", "removed"):
        await on_uninstalled(ctx, payload)


async def on_uninstalled(ctx: JobContext, payload: dict[str, Any]) -> None:
    """``installation`` deleted / ``installation_repositories`` removed: forget their PRs."""
    if "repositories_removed" in payload:
        repositories = payload.get("repositories_removed")
    else:
        repositories = payload.get("repositories")
    ids = [
        repo["id"]
        for repo in repositories or []
        if isinstance(repo, dict) and isinstance(repo.get("id"), int)
    ]
    if ids:
        await ctx.store.forget_repositories(ids)
    ctx.log.info("forgot the pull requests of %d repositories", len(ids))


async def request_rerun(
    ctx: JobContext, repo: Repository, pull: PullInfo, login: str, config: ConfigResult
) -> Rerun:
    """Re-run the measurement of the PR's head for ``login``, if their role allows it."""
    inst = ctx.installation
    minimum = config.config.rerun_permission
    try:
        role = await inst.collaborator_role(repo.owner, repo.name, login)
        if not role_at_least(role, minimum):
            ctx.log.info("re-run refused: %s has role %s, %s needed", login, role, minimum)
            return Rerun.REFUSED
        runs = [
            run
            for run in await inst.runs_for_head(repo.owner, repo.name, pull.head_sha)
            if run.head_sha == pull.head_sha
            and run.event == "pull_request"
            and config.config.matches_workflow(run.name, run.path)
        ]
        if not runs:
            ctx.log.info("re-run failed: no measurement run for %s", pull.head_sha[:12])
            return Rerun.FAILED
        if any(run.status in PENDING_STATUSES for run in runs):
            ctx.log.info("re-run not needed: a measurement of %s is pending", pull.head_sha[:12])
            return Rerun.PENDING
        await inst.rerun_workflow_run(repo.owner, repo.name, runs[0].id)
    except GitHubError as exc:
        ctx.log.warning("re-run failed: %s", exc)
        return Rerun.FAILED
    ctx.log.info("re-run of run %s started for %s", runs[0].id, login)
    async with ctx.pull_lock(repo.id, pull.number):
        state = await ctx.store.get_pull(repo.id, pull.number) or PullState(repo.id, pull.number)
        state = replace(state, rerun_requested_by=login)
        if state.report_body is not None and state.comment_id is not None:
            await publish(ctx, repo.owner, repo.name, state)
        else:
            await ctx.store.save_pull(state)
    return Rerun.STARTED


async def _enabled_config(ctx: JobContext, repo: Repository) -> ConfigResult | None:
    """The repository's configuration, or None when perfbot must not write there."""
    if ctx.repo_disabled(repo.full_name):
        ctx.log.info("ignored: the operator disabled %s", repo.full_name)
        return None
    config = await ctx.configs.get(ctx.installation, repo.owner, repo.name)
    if not config.config.enabled:
        ctx.log.info("ignored: perfbot is disabled for %s by its configuration", repo.full_name)
        return None
    return config


def _muted(pull: PullInfo, config: ConfigResult) -> bool:
    return config.config.mutes(pull.labels)
