"""githubkit's models as perfbot's plain types (``perfbot.github.types``): what the calls
of ``installation`` that still go through githubkit's models return, converted in one
place (the hot calls read their JSON straight into the types: ``answers``)."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from githubkit_schemas.latest import models
from pydantic import BaseModel

from perfbot.github.types import CommitInfo, IssueInfo


def issue_info(
    issue: models.Issue | models.ReposOwnerRepoIssuesIssueNumberPatchResponse200,
) -> IssueInfo:
    app = issue.performed_via_github_app
    if not isinstance(app, BaseModel):
        app = None  # absent (UNSET) or null: opened by a person
    labels = tuple(
        label if isinstance(label, str) else label.name
        for label in issue.labels
        if isinstance(label, str) or isinstance(label.name, str)
    )
    return IssueInfo(
        number=issue.number,
        title=issue.title,
        body=issue.body if isinstance(issue.body, str) else "",
        state=issue.state,
        state_reason=issue.state_reason if isinstance(issue.state_reason, str) else None,
        labels=tuple(name for name in labels if isinstance(name, str)),
        user_login=issue.user.login if issue.user else "",
        app_id=app.id if app is not None else None,
        is_pull_request=isinstance(issue.pull_request, BaseModel),
        html_url=issue.html_url,
        closed_by=issue.closed_by.login if isinstance(issue.closed_by, BaseModel) else None,
    )


def commit_info(commit: models.Commit) -> CommitInfo:
    committer = commit.commit.committer
    date = committer.date if committer is not None else None
    return CommitInfo(
        sha=commit.sha,
        message=commit.commit.message,
        parents=tuple(parent.sha for parent in commit.parents),
        committed_at=date.timestamp() if isinstance(date, datetime) else None,
    )


# ``file_text`` of a path that is no file (a directory, a symlink, a submodule).
NOT_A_FILE: Final = "\x00not a file"
