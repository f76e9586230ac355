"""The watch's vocabulary in the store: each change of a branch's level perfbot told about
(``WatchedChange``), and the acknowledgements of the people who accepted a new level
(``Acknowledgement``), kept for audit. Importing it loads no database driver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from perfbot.model import Settings

WatchState = Literal["open", "closed"]
# accepted: a person took the new level as the baseline (``/perfbot accept``, or by closing
# its issue); returned: the metric is back at its old level; gone: more commits showed the
# change was noise; superseded: a later level of its series was accepted; deleted: its
# issue was.
ClosedReason = Literal["accepted", "returned", "gone", "superseded", "deleted"]
AcknowledgedSubject = Literal["branch", "pull"]


@dataclass(frozen=True, slots=True)
class WatchedChange:
    """One change of one series' level on a branch, as perfbot told about it.

    ``first_sha`` is the commit it was first found at (the issue is about it, and the row
    is known by it); ``sha`` the first commit at the new level as it is found now (it moves
    as commits come in). ``issue_number`` None: recorded without an issue (``watch.issues``
    off). ``change``: percent, points or counts, as the engine says it (``unit`` is the
    metric's own, ``scale`` says which).
    """

    repo_id: int
    branch: str
    platform: str
    metric: str
    settings: Settings
    first_sha: str
    sha: str
    installation_id: int | None
    issue_number: int | None
    state: WatchState
    direction: str
    change: float
    unit: str
    scale: str
    created_at: float
    updated_at: float
    closed_reason: ClosedReason | None = None


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """A person accepted a new level: of a branch's series from commit ``sha`` on
    (``subject`` branch), or a pull request's regression at its head ``sha`` (pull).
    ``value`` is the level accepted, in the metric's unit (None when not known)."""

    repo_id: int
    installation_id: int | None
    subject: AcknowledgedSubject
    branch: str
    pr_number: int | None
    sha: str
    platform: str
    metric: str
    settings: Settings
    value: float | None
    login: str
    reason: str
    accepted_at: float
    revoked_at: float | None = None
    revoked_by: str | None = None


def level_accepted(change: WatchedChange, login: str, reason: str, at: float) -> Acknowledgement:
    """``login`` took ``change``'s new level as its series' baseline, at ``at``."""
    return Acknowledgement(
        repo_id=change.repo_id,
        installation_id=change.installation_id,
        subject="branch",
        branch=change.branch,
        pr_number=None,
        sha=change.sha,
        platform=change.platform,
        metric=change.metric,
        settings=change.settings,
        value=None,
        login=login,
        reason=reason,
        accepted_at=at,
    )
