"""The calls perfbot makes on behalf of one installation (or with a workflow's token).

The calls wait for an installation token through ``tokens.TokenGate``, and for the
installation's pace through ``pacing.Pacer`` (every write, and the reads when the rate
limit runs low); GitHub's models become perfbot's types in ``convert``. The artifact
download does not follow GitHub's 302 with the client that holds the token: ``storage``
fetches the storage URL straight through the storage's wire, with no credential and no cookie.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from githubkit import GitHub
from githubkit_schemas.latest import models

from perfbot.github import answers
from perfbot.github.conditional import Validators, conditional_read
from perfbot.github.convert import (
    NOT_A_FILE,
    commit_info,
    issue_info,
)
from perfbot.github.direct import Direct
from perfbot.github.errors import ArtifactGone, GitHubError
from perfbot.github.pacing import Pacer, installation_key
from perfbot.github.storage import fetch_blob
from perfbot.github.tokens import TokenGate
from perfbot.github.transport import (
    PAGE_SIZE,
    _all_pages,
    _call,
    _with_get_retries,
)
from perfbot.github.types import (
    CHECK_RUN_TEXT_LIMIT,
    ROLES,
    ArtifactInfo,
    CommentInfo,
    CommitInfo,
    Conclusion,
    IssueFilter,
    IssueInfo,
    IssueState,
    PullInfo,
    Reaction,
    StateReason,
    WorkflowRunInfo,
)
from perfbot.github.wire import Answer, Wire

T = TypeVar("T")


class Installation:
    """The calls perfbot makes on behalf of one installation."""

    def __init__(
        self,
        github: GitHub[Any],
        api: Wire,
        storage: Wire,
        app_id: int | None,
        token_gate: TokenGate | None = None,
        *,
        installation_id: int | None = None,
        pacer: Pacer | None = None,
        pace_key: str | None = None,
        validators: Validators | None = None,
    ) -> None:
        # githubkit, for the calls perfbot makes seldom (reactions, issues, re-runs): each
        # opens an HTTP client of its own around the shared wire. Holding one open for
        # every job cost each PR update a client it never used (``bench/instructions.py``).
        self._gh = github
        # The hot calls, without githubkit's client and models (see ``direct``).
        self._direct = Direct(github, api)
        # The last answers of the reads asked again (None: every read unconditional).
        self._validators = validators
        self._storage = storage
        self.app_id = app_id
        # None: a plain token (``perfbot comment``), which no installation record covers.
        self.id = installation_id
        # The calls begun so far (``GitHubCalls.calls_started``).
        self.calls_started = 0
        self._token_gate = token_gate
        # None: not paced (a test's direct client); else every call goes through it.
        self._pacer = pacer
        self._pace_key = pace_key or (
            installation_key(installation_id) if installation_id is not None else "token"
        )

    async def _call(
        self, method: str, send: Callable[[], Awaitable[T]], *, notifies: bool = False
    ) -> T:
        """One call: its token, its pace (``notifies``: a write that notifies people, as a
        new comment or issue does), its errors mapped."""
        self.calls_started += 1

        async def gated() -> T:
            if self._token_gate is None:
                return await _call(method, send)
            return await self._token_gate.call(lambda: _call(method, send))

        if self._pacer is None:
            return await gated()
        if method == "GET":
            return await self._pacer.read(self._pace_key, gated)
        return await self._pacer.write(self._pace_key, notifies, gated)

    async def __aenter__(self) -> Installation:
        """Nothing to open (githubkit opens a client per call, see ``__init__``): the
        context only scopes a caller's use of the calls, as ``perfbot comment``'s does."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def list_run_artifacts(self, owner: str, repo: str, run_id: int) -> list[ArtifactInfo]:
        what = f"the artifacts of run {run_id}"
        # 1,000 artifacts is far beyond any measurement run.
        return await self._direct_pages(
            f"/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
            partial(answers.artifacts, what=what),
            max_pages=10,
        )

    async def download_artifact(
        self, owner: str, repo: str, artifact_id: int, max_bytes: int
    ) -> bytes:
        """The artifact's zip, refusing more than ``max_bytes``; raises ArtifactGone."""
        url = f"/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"
        try:
            response = await self._call("GET", lambda: self._direct.request("GET", url))
        except GitHubError as exc:
            if exc.status in (404, 410):
                raise ArtifactGone(f"artifact {artifact_id} is gone ({exc.status})") from None
            raise
        if response.status_code != 302 or "location" not in response.headers:
            raise GitHubError(
                f"artifact {artifact_id}: expected a redirect to storage, got "
                f"{response.status_code}",
                response.status_code,
            )
        return await _with_get_retries(
            lambda: fetch_blob(self._storage, response.headers["location"], max_bytes)
        )

    async def get_pull(self, owner: str, repo: str, number: int) -> PullInfo | None:
        """The PR, or None when it does not exist (asked again: a conditional read)."""
        return await conditional_read(
            self._validators,
            (self._pace_key, "pull", owner.lower(), repo.lower(), number),
            call=self._call,
            send=lambda headers: self._direct.request(
                "GET", f"/repos/{owner}/{repo}/pulls/{number}", headers=headers
            ),
            convert=lambda response: answers.pull(response, f"PR {number}"),
            gone=(404,),
        )

    async def pulls_for_commit(self, owner: str, repo: str, sha: str) -> list[PullInfo]:
        response = await self._call(
            "GET",
            lambda: self._direct.request(
                "GET", f"/repos/{owner}/{repo}/commits/{sha}/pulls", params={"per_page": 100}
            ),
        )
        return answers.pulls(response, f"the pulls of commit {sha[:12]}")

    async def list_comments(self, owner: str, repo: str, number: int) -> list[CommentInfo]:
        what = f"the comments of #{number}"
        # 5,000 comments: stop somewhere on a runaway thread.
        return await self._direct_pages(
            f"/repos/{owner}/{repo}/issues/{number}/comments",
            partial(answers.comments, what=what),
            max_pages=50,
        )

    async def _direct_pages(
        self, path: str, read: Callable[[Answer], list[T]], *, max_pages: int
    ) -> list[T]:
        """Every page of a list GitHub pages, read straight through the wire."""

        async def page(number: int) -> list[T]:
            params = {"per_page": PAGE_SIZE, "page": number}
            response = await self._call(
                "GET", partial(self._direct.request, "GET", path, params=params)
            )
            return read(response)

        return await _all_pages(page, max_pages=max_pages)

    async def create_comment(self, owner: str, repo: str, number: int, body: str) -> CommentInfo:
        response = await self._call(
            "POST",
            lambda: self._direct.request(
                "POST", f"/repos/{owner}/{repo}/issues/{number}/comments", body={"body": body}
            ),
            notifies=True,
        )
        return answers.comment(response, f"a new comment on #{number}")

    async def update_comment(
        self, owner: str, repo: str, comment_id: int, body: str
    ) -> CommentInfo | None:
        """The edited comment, or None when it no longer exists."""
        try:
            response = await self._call(
                "PATCH",
                lambda: self._direct.request(
                    "PATCH",
                    f"/repos/{owner}/{repo}/issues/comments/{comment_id}",
                    body={"body": body},
                ),
            )
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return answers.comment(response, f"the edit of comment {comment_id}")

    async def add_reaction(self, owner: str, repo: str, comment_id: int, content: Reaction) -> None:
        """React to an issue comment (``eyes``, ``rocket``, ``confused``…); idempotent."""
        await self._call(
            "POST",
            lambda: self._gh.rest.reactions.async_create_for_issue_comment(
                owner, repo, comment_id, content=content
            ),
        )

    async def collaborator_role(self, owner: str, repo: str, username: str) -> str:
        """The user's role in ``ROLES`` (a custom role counts as its base permission)."""
        try:
            response = await self._call(
                "GET",
                lambda: self._gh.rest.repos.async_get_collaborator_permission_level(
                    owner, repo, username
                ),
            )
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        answer = response.parsed_data
        role = answer.role_name
        if role in ROLES:
            return role
        return answer.permission if answer.permission in ROLES else "none"

    async def get_run_json(self, owner: str, repo: str, run_id: int) -> dict[str, Any]:
        """One workflow run as GitHub sends it (the ``workflow_run`` of a delivery)."""
        response = await self._call(
            "GET", partial(self._gh.rest.actions.async_get_workflow_run, owner, repo, run_id)
        )
        try:
            data: object = response.json()
        except ValueError:
            raise GitHubError(f"GitHub's answer about run {run_id} is not JSON") from None
        if not isinstance(data, dict):
            raise GitHubError(f"GitHub answered run {run_id} with something else than a run")
        return data

    async def runs_for_head(self, owner: str, repo: str, head_sha: str) -> list[WorkflowRunInfo]:
        """The ``pull_request`` workflow runs of ``head_sha``, newest first."""

        async def page(number: int) -> list[models.WorkflowRun]:
            response = await self._call(
                "GET",
                partial(
                    self._gh.rest.actions.async_list_workflow_runs_for_repo,
                    owner,
                    repo,
                    head_sha=head_sha,
                    event="pull_request",
                    per_page=PAGE_SIZE,
                    page=number,
                ),
            )
            return response.parsed_data.workflow_runs

        runs = await _all_pages(page, max_pages=5)
        return [
            WorkflowRunInfo(
                id=run.id,
                name=run.name or "",
                path=run.path,
                status=run.status or "",
                head_sha=run.head_sha,
                event=run.event,
            )
            for run in sorted(runs, key=lambda r: r.id, reverse=True)
        ]

    async def rerun_workflow_run(self, owner: str, repo: str, run_id: int) -> None:
        await self._call(
            "POST", lambda: self._gh.rest.actions.async_re_run_workflow(owner, repo, run_id)
        )

    async def upsert_check_run(
        self,
        owner: str,
        repo: str,
        *,
        check_run_id: int | None,
        name: str,
        head_sha: str,
        conclusion: Conclusion,
        title: str,
        summary: str,
    ) -> int:
        """Create the check run, or complete the existing ``check_run_id``; returns its id.

        A stored id that no longer exists (404) is replaced by a new check run.
        """
        title, summary = title[:1000] or name, summary[:CHECK_RUN_TEXT_LIMIT]
        if check_run_id is not None:
            try:
                response = await self._call(
                    "PATCH",
                    lambda: self._direct.request(
                        "PATCH",
                        f"/repos/{owner}/{repo}/check-runs/{check_run_id}",
                        body={
                            "status": "completed",
                            "conclusion": conclusion,
                            "output": {"title": title, "summary": summary},
                        },
                    ),
                )
                return answers.object_id(response, f"the update of check run {check_run_id}")
            except GitHubError as exc:
                if exc.status != 404:
                    raise
        created = await self._call(
            "POST",
            lambda: self._direct.request(
                "POST",
                f"/repos/{owner}/{repo}/check-runs",
                body={
                    "name": name,
                    "head_sha": head_sha,
                    "status": "completed",
                    "conclusion": conclusion,
                    "output": {"title": title, "summary": summary},
                },
            ),
        )
        return answers.object_id(created, f"the new check run on {head_sha}")

    async def get_file(self, owner: str, repo: str, path: str) -> str | None:
        """A text file of the default branch, or None when it does not exist (asked again:
        a conditional read)."""
        text = await conditional_read(
            self._validators,
            (self._pace_key, "file", owner.lower(), repo.lower(), path),
            call=self._call,
            send=lambda headers: self._direct.request(
                "GET", f"/repos/{owner}/{repo}/contents/{path}", headers=headers
            ),
            convert=answers.file_text,
            gone=(404,),
        )
        return None if text is None or text is NOT_A_FILE else text

    # -- issues (one per performance change on the default branch) ------------------------

    async def create_issue(
        self, owner: str, repo: str, title: str, body: str, labels: Sequence[str] = ()
    ) -> IssueInfo:
        """Open an issue as the App (``labels`` by name; GitHub drops them silently for an
        App without push access)."""
        response = await self._call(
            "POST",
            lambda: self._gh.rest.issues.async_create(
                owner, repo, title=title, body=body, labels=list(labels)
            ),
            notifies=True,
        )
        return issue_info(response.parsed_data)

    async def get_issue(self, owner: str, repo: str, number: int) -> IssueInfo | None:
        """Issue (or pull request) ``number``; None when it does not exist or was deleted
        (asked again: a conditional read)."""
        return await conditional_read(
            self._validators,
            (self._pace_key, "issue", owner.lower(), repo.lower(), number),
            call=self._call,
            send=lambda headers: self._gh.rest.issues.async_get(
                owner, repo, number, headers=headers
            ),
            convert=lambda response: issue_info(response.parsed_data),
            gone=(404, 410),
        )

    async def update_issue(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: IssueState | None = None,
        state_reason: StateReason | None = None,
        labels: Sequence[str] | None = None,
    ) -> IssueInfo | None:
        """Edit what is given (``labels`` replaces the set; ``state_reason`` counts only
        with a change of ``state``); None when the issue no longer exists."""
        changes: dict[str, Any] = {
            key: value
            for key, value in (
                ("title", title),
                ("body", body),
                ("state", state),
                ("state_reason", state_reason),
            )
            if value is not None
        }
        if labels is not None:
            changes["labels"] = list(labels)
        try:
            response = await self._call(
                "PATCH",
                lambda: self._gh.rest.issues.async_update(owner, repo, number, **changes),
            )
        except GitHubError as exc:
            if exc.status in (404, 410):
                return None
            raise
        return issue_info(response.parsed_data)

    async def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        labels: Sequence[str] = (),
        creator: str | None = None,
        state: IssueFilter = "open",
    ) -> list[IssueInfo]:
        """The repository's issues with every one of ``labels`` (and opened by ``creator``),
        newest first; pull requests, which the issues API lists too, are left out."""
        filters: dict[str, Any] = {"state": state}
        if labels:
            filters["labels"] = ",".join(labels)
        if creator is not None:
            filters["creator"] = creator

        async def page(number: int) -> list[models.Issue]:
            response = await self._call(
                "GET",
                partial(
                    self._gh.rest.issues.async_list_for_repo,
                    owner,
                    repo,
                    per_page=PAGE_SIZE,
                    page=number,
                    **filters,
                ),
            )
            return list(response.parsed_data)

        # 2,000 issues: perfbot opens one per change, and closes them.
        issues = [issue_info(i) for i in await _all_pages(page, max_pages=20)]
        return [i for i in issues if not i.is_pull_request]

    async def list_commits(
        self, owner: str, repo: str, ref: str, *, page: int = 1
    ) -> list[CommitInfo]:
        """Page ``page`` (``PAGE_SIZE`` a page) of the commits reachable from ``ref`` (a
        branch or a sha), newest first as GitHub lists them: the caller reads as many
        pages as it needs, so that a walk that found what it wanted stops early."""
        response = await self._call(
            "GET",
            partial(
                self._gh.rest.repos.async_list_commits,
                owner,
                repo,
                sha=ref,
                per_page=PAGE_SIZE,
                page=page,
            ),
        )
        return [commit_info(c) for c in response.parsed_data]
