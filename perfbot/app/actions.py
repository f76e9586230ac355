"""``perfbot comment``: one measurement run's comment, made inside GitHub Actions.

For repositories that cannot install the App: a ``workflow_run`` workflow calls this
with its own ``GITHUB_TOKEN``. It runs the App's pipeline from its own pieces, none
written twice: the run fetched through the REST API, the same artifact limits
(``download``), PR proof (``runpull``), judge and layout (``reporting``, the engine) and
single edited comment (``comment``). What differs:

* the author of the comment is the workflow's bot (``github-actions[bot]``), so
  perfbot's own comment is recognised by that login and the marker;
* nothing is kept between two workflow runs: the comment itself is the state, found on
  the PR and edited in place; so there is no noise history, no confirming re-run (a
  second attempt could not know it confirms the first) and no trend;
* no check run (the App's Re-run button needs the App), and the footer offers no
  ``/perfbot rerun`` (``Footer.ACTIONS``); with ``comment: on-change`` or ``never`` a
  report is then told nowhere but the job summary until a comment exists;
* the comment is also returned, for the job summary (``$GITHUB_STEP_SUMMARY``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from perfbot.app.artifacts import ArtifactError
from perfbot.app.comment import is_own, live_for, upsert_comment
from perfbot.app.configcache import ConfigCache
from perfbot.app.download import newest_artifact, read_report_or_error
from perfbot.app.jobs import PullRunCompleted, Run, read_workflow_run
from perfbot.app.publish import pull_moved
from perfbot.app.repoconfig import ConfigResult, config_refusal
from perfbot.app.reporting import Report, laid_out, read_contents, render_context, unreadable
from perfbot.app.runpull import proven_pull
from perfbot.engine.judge.judgement import judge_report
from perfbot.engine.show.render import Footer, compose
from perfbot.github.calls import GitHubCalls
from perfbot.github.errors import ArtifactGone
from perfbot.github.token_session import TokenSession
from perfbot.github.transport import Transport
from perfbot.github.types import ArtifactInfo, PullInfo
from perfbot.github.wire import API_VERSION

ACTIONS_BOT_LOGIN = "github-actions[bot]"
DEFAULT_API_URL = "https://api.github.com"

log = logging.getLogger("perfbot.comment")


@dataclass(frozen=True, slots=True)
class CommentJob:
    """One measurement run to turn into the PR's comment."""

    owner: str
    repo: str
    run_id: int
    token: str
    api_url: str = DEFAULT_API_URL
    bot_login: str = ACTIONS_BOT_LOGIN
    # The REST API version of every request (PERFBOT_GITHUB_API_VERSION, for a GHES).
    api_version: str = API_VERSION


async def comment_for_run(
    job: CommentJob,
    *,
    transport: Transport | None = None,
    clock: Callable[[], float] = time.time,
) -> str | None:
    """Post or edit the comment for ``job``'s run, and return it (None when nothing was
    posted: the reason is logged); GitHubError and BadPayload propagate."""
    session = TokenSession(job.token, job.api_url, transport=transport, api_version=job.api_version)
    logger = logging.LoggerAdapter(log, {"delivery": f"run-{job.run_id}"})
    try:
        async with session.installation as github:
            run = await _completed_run(github, job, logger)
            if run is None:
                return None
            return await _comment(github, job, run, clock=clock, logger=logger)
    finally:
        await session.close()


async def _completed_run(
    github: GitHubCalls, job: CommentJob, logger: logging.LoggerAdapter[logging.Logger]
) -> Run | None:
    """The run, once completed: before, its artifacts may still be uploading (the run's own
    completion event is the time to comment)."""
    found: dict[str, Any] = await github.get_run_json(job.owner, job.repo, job.run_id)
    status = found.get("status")
    if status != "completed":
        logger.info("run %s is %s, not completed: nothing to do yet", job.run_id, str(status)[:40])
        return None
    # The run's repository is the one the workflow belongs to: the base.
    payload = {"action": "completed", "workflow_run": found, "repository": found.get("repository")}
    run = read_workflow_run(payload, PullRunCompleted).run
    if run.event != "pull_request" or run.run_repo_id != run.repo_id:
        logger.info("ignored: run %s is not a pull_request run of this repository", run.id)
        return None
    return run


async def _comment(
    github: GitHubCalls,
    job: CommentJob,
    run: Run,
    *,
    clock: Callable[[], float],
    logger: logging.LoggerAdapter[logging.Logger],
) -> str | None:
    loaded = await ConfigCache().get(github, run.owner, run.name)
    config = loaded.repo_config
    ignored = config_refusal(loaded, run.owner, run.name)
    if ignored is None and not config.matches_workflow(run.workflow_name, run.workflow_path):
        ignored = f"workflow {run.workflow_name!r} is not a configured measurement"
    artifacts = [] if ignored else await github.list_run_artifacts(run.owner, run.name, run.id)
    artifact = newest_artifact(artifacts, config.report_artifact, run.id)
    if ignored is None and artifact is None:
        ignored = f"no usable {config.report_artifact!r} artifact on run {run.id}"
    if ignored is not None or artifact is None:
        logger.info("ignored: %s", ignored)
        return None
    pull = await proven_pull(github, run, artifacts, config, logger)
    if isinstance(pull, str):
        return None
    report = await _body(github, run, pull, artifact, loaded=loaded, now=clock(), logger=logger)
    # The judging took a while: the PR may have been closed or muted meanwhile.
    fresh = await github.get_pull(run.owner, run.name, pull.number)
    refused = pull_moved(run, pull.number, fresh)
    if refused is None and fresh is not None:
        refused = config_refusal(loaded, run.owner, run.name, fresh)
    if refused is not None or fresh is None:
        logger.info("not posted: %s", refused)
        return None
    if not config.writes_comment(exists=False, worth=report.worth):
        # The comment is the state here: one that exists is kept up to date all the same.
        found = await github.list_comments(run.owner, run.name, pull.number)
        if not any(is_own(c, None, job.bot_login) for c in found):
            logger.info("no comment on PR %s (comment: %s)", pull.number, config.comment)
            return None
    comment = await upsert_comment(
        github,
        run.owner,
        run.name,
        pull.number,
        compose(report.prepared, live_for(run.head_sha, fresh.head_sha)),
        known_id=None,
        app_id=None,
        bot_login=job.bot_login,
    )
    logger.info("comment %s on PR %s is up to date", comment.id, pull.number)
    return comment.body


async def _body(
    github: GitHubCalls,
    run: Run,
    pull: PullInfo,
    artifact: ArtifactInfo,
    *,
    loaded: ConfigResult,
    now: float,
    logger: logging.LoggerAdapter[logging.Logger],
) -> Report:
    """The report of the run, judged on its own runs and laid out for the comment."""
    contents = await read_report_or_error(github, run.owner, run.name, artifact)
    context = render_context(now, run, pull, loaded, Footer.ACTIONS)
    if isinstance(contents, ArtifactError | ArtifactGone):
        return unreadable(contents, context, logger)
    read = read_contents(contents, loaded.repo_config)
    judged = judge_report(read, loaded.repo_config.policy())
    context = replace(context, skipped=read.skipped, notices=judged.notices)
    return laid_out(judged, context, loaded.repo_config)
