"""``perfbot comment``: the App's workflow_run handler, run once inside GitHub Actions.

For repositories that cannot install the App: a ``workflow_run`` workflow calls this
with its own ``GITHUB_TOKEN``. Nothing here is a second implementation: the run is
fetched through the REST API and handed to the same handler the App uses, with the
same artifact limits, PR proof, renderer and single edited comment. What differs:

* the author of the comment is the workflow's bot (``github-actions[bot]``), so
  perfbot's own comment is recognised by that login and the marker;
* there is no durable state between two workflow runs (a throw-away store), so the
  comment itself is the state: it is found on the PR and edited in place;
* no check run (the App's Re-run button needs the App) and no stale notices, and the
  footer offers no ``/perfbot rerun`` (the handler sees no App id: ``Footer.ACTIONS``);
* the report is also returned, for the job summary (``$GITHUB_STEP_SUMMARY``).
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfbot.app.configcache import ConfigCache, FileSource
from perfbot.app.context import JobContext
from perfbot.app.handlers.workflow_run import on_workflow_run
from perfbot.app.jobs import read_workflow_run
from perfbot.app.repoconfig import ConfigResult
from perfbot.github.installation import TokenSession
from perfbot.github.transport import Transport
from perfbot.store.base import PullState
from perfbot.store.sqlite import SQLiteStore

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


class _CommentOnlyConfigs(ConfigCache):
    """The repository's configuration, with the App-only check run turned off."""

    async def get(self, source: FileSource, owner: str, repo: str) -> ConfigResult:
        result = await super().get(source, owner, repo)
        return replace(result, config=replace(result.config, check_run=False))


class _CommentKeepingStore(SQLiteStore):
    """The throw-away store, keeping which comment the handler wrote (PR, comment id)."""

    written: tuple[int, int] | None = None

    async def save_pull(self, state: PullState) -> None:
        if state.comment_id is not None:
            self.written = (state.number, state.comment_id)
        await super().save_pull(state)


async def comment_for_run(
    job: CommentJob,
    *,
    transport: Transport | None = None,
    clock: Callable[[], float] = time.time,
) -> str | None:
    """Post or edit the comment for ``job``'s run, and return its report (None when
    nothing was posted); GitHubError and BadPayload propagate."""
    session = TokenSession(job.token, job.api_url, transport=transport)
    try:
        async with session.installation as installation:
            run = await installation.get_run_json(job.owner, job.repo, job.run_id)
            if run.get("status") != "completed":
                # Its artifacts may still be uploading: the run's own completion event
                # (workflow_run completed) is the time to comment.
                log.info(
                    "run %s is %s, not completed: nothing to do yet",
                    job.run_id,
                    str(run.get("status"))[:40],
                )
                return None
            payload = {
                "action": "completed",
                "workflow_run": run,
                # The run's repository is the one the workflow belongs to: the base.
                "repository": run.get("repository"),
            }
            with tempfile.TemporaryDirectory(prefix="perfbot-") as folder:
                store = _CommentKeepingStore(str(Path(folder, "state.db")))
                await store.setup()
                try:
                    ctx = JobContext(
                        delivery_id=f"run-{job.run_id}",
                        installation=installation,
                        store=store,
                        app_id=None,
                        bot_login=_constant(job.bot_login),
                        configs=_CommentOnlyConfigs(),
                        repo_disabled=lambda _name: False,
                        now=clock,
                        worker="perfbot-comment",
                        log=logging.LoggerAdapter(log, {"delivery": f"run-{job.run_id}"}),
                    )
                    await on_workflow_run(ctx, read_workflow_run(payload))
                finally:
                    await store.close()
            if store.written is None:
                return None
            # The body as GitHub holds it, whatever the handler composed it from.
            number, comment_id = store.written
            comments = await installation.list_comments(job.owner, job.repo, number)
            return next((c.body for c in comments if c.id == comment_id), None)
    finally:
        await session.close()


def _constant(value: str) -> Callable[[], Awaitable[str]]:
    async def answer() -> str:
        return value

    return answer
