"""The GitHub calls a job makes, as a protocol: what handlers and the App's logic depend on.

``installation.Installation`` is the real one (githubkit over HTTP); the tests' fake
GitHub answers the same calls over its own transport. Importable without githubkit,
httpx or httptools, so the job context and the comment's composition stay free of I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from perfbot.github.types import (
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


class GitHubCalls(Protocol):
    """Every call perfbot makes on behalf of one installation (or a workflow's token)."""

    @property
    def id(self) -> int | None:
        """The installation's id (None: a plain token, as ``perfbot comment`` has)."""

    @property
    def calls_started(self) -> int:
        """How many calls this client has begun: what it may have learned since a moment
        (``JobContext.suspended`` reads the store again only after one)."""

    async def list_run_artifacts(
        self, owner: str, repo: str, run_id: int
    ) -> list[ArtifactInfo]: ...

    async def download_artifact(
        self, owner: str, repo: str, artifact_id: int, max_bytes: int
    ) -> bytes: ...

    async def get_pull(self, owner: str, repo: str, number: int) -> PullInfo | None: ...

    async def pulls_for_commit(self, owner: str, repo: str, sha: str) -> list[PullInfo]: ...

    async def list_comments(self, owner: str, repo: str, number: int) -> list[CommentInfo]: ...

    async def create_comment(self, owner: str, repo: str, number: int, body: str) -> CommentInfo:
        """A comment on issue or pull request ``number`` (one issues API for both)."""

    async def update_comment(
        self, owner: str, repo: str, comment_id: int, body: str
    ) -> CommentInfo | None: ...

    async def add_reaction(
        self, owner: str, repo: str, comment_id: int, content: Reaction
    ) -> None: ...

    async def collaborator_role(self, owner: str, repo: str, username: str) -> str: ...

    async def get_run_json(self, owner: str, repo: str, run_id: int) -> dict[str, Any]: ...

    async def runs_for_head(
        self, owner: str, repo: str, head_sha: str
    ) -> list[WorkflowRunInfo]: ...

    async def rerun_workflow_run(self, owner: str, repo: str, run_id: int) -> None: ...

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
    ) -> int: ...

    async def get_file(self, owner: str, repo: str, path: str) -> str | None: ...

    async def create_issue(
        self, owner: str, repo: str, title: str, body: str, labels: Sequence[str] = ()
    ) -> IssueInfo: ...

    async def get_issue(self, owner: str, repo: str, number: int) -> IssueInfo | None: ...

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
    ) -> IssueInfo | None: ...

    async def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        labels: Sequence[str] = (),
        creator: str | None = None,
        state: IssueFilter = "open",
    ) -> list[IssueInfo]: ...

    async def list_commits(
        self, owner: str, repo: str, ref: str, *, page: int = 1
    ) -> list[CommitInfo]: ...
