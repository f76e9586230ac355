"""What perfbot reads from GitHub, as plain frozen dataclasses.

Importable without githubkit, httpx or httptools: the App's logic (comment, PR proof,
handlers) takes these types, and only ``installation`` converts GitHub's models into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ArtifactInfo:
    id: int
    name: str
    size_in_bytes: int
    expired: bool
    digest: str | None
    run_id: int | None
    created_at: str


@dataclass(frozen=True, slots=True)
class PullInfo:
    number: int
    state: str
    head_sha: str
    head_ref: str
    head_repo_id: int | None
    base_repo_id: int
    base_ref: str
    base_sha: str
    labels: tuple[str, ...]
    title: str = ""  # written by the PR's author: untrusted
    # How many comments the PR's conversation has (None: the list form, which says not).
    comments: int | None = None


@dataclass(frozen=True, slots=True)
class CommentInfo:
    id: int
    body: str
    user_login: str
    app_id: int | None


@dataclass(frozen=True, slots=True)
class IssueInfo:
    """A plain issue (the issues API's pull requests are left out where perfbot lists)."""

    number: int
    title: str
    body: str
    state: str  # "open" or "closed"
    state_reason: str | None  # completed, not_planned, duplicate, reopened
    labels: tuple[str, ...]
    user_login: str
    app_id: int | None  # performed_via_github_app: opened by an App (perfbot's own?)
    is_pull_request: bool
    html_url: str
    closed_by: str | None = None  # who closed it, when it is closed and GitHub says


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """A commit as GitHub lists it: its first parent is the branch's line."""

    sha: str
    message: str
    parents: tuple[str, ...]
    committed_at: float | None = None  # the committer's date, epoch seconds


@dataclass(frozen=True, slots=True)
class WorkflowRunInfo:
    id: int
    name: str
    path: str
    status: str
    head_sha: str
    event: str


@dataclass(frozen=True, slots=True)
class HookDelivery:
    """One attempt in the App webhook's delivery log (a redelivery is another attempt)."""

    id: int  # of this attempt: what a redelivery is asked for
    guid: str  # the X-GitHub-Delivery header, shared by every attempt of one event
    delivered_at: float  # UNIX seconds
    ok: bool  # status "OK" with a 2xx status code
    event: str
    action: str | None


@dataclass(frozen=True, slots=True)
class RecordedDelivery:
    """One delivery attempt as GitHub's log keeps it, with what it sent (``perfbot replay``)."""

    guid: str
    event: str
    body: bytes  # the payload, as JSON


# Repository roles from the least to the most powerful (collaborator-permission API).
ROLES = ("none", "read", "triage", "write", "maintain", "admin")
CHECK_RUN_TEXT_LIMIT = 65_535
Reaction = Literal["eyes", "rocket", "confused"]
IssueState = Literal["open", "closed"]
IssueFilter = Literal["open", "closed", "all"]
StateReason = Literal["completed", "not_planned", "duplicate", "reopened"]
Conclusion = Literal["success", "neutral", "failure"]
