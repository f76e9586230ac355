"""The default branch's watch in the store: the changes perfbot told about and the
acknowledgements of accepted levels; statements and logic written once for both backends
(``perfbot.store._core``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

from perfbot.store._sql import SQL, Row, SQLBackend
from perfbot.store.measurements import settings_from_text, settings_text, storable
from perfbot.store.watched import (
    AcknowledgedSubject,
    Acknowledgement,
    ClosedReason,
    WatchedChange,
    WatchState,
)

# The most changes of one branch a watch reads back: far beyond the series of any report.
MAX_WATCHED: Final = 5000

_CHANGE_COLUMNS: Final = (
    "repo_id", "branch", "platform", "metric", "settings", "first_sha", "sha",
    "installation_id", "issue_number", "state", "closed_reason", "direction", "change",
    "unit", "scale", "created_at", "updated_at",
)  # fmt: skip
_CHANGE_KEY: Final = ("repo_id", "branch", "platform", "metric", "settings", "first_sha")
_ACK_COLUMNS: Final = (
    "repo_id", "installation_id", "subject", "branch", "pr_number", "sha", "platform",
    "metric", "settings", "value", "login", "reason", "accepted_at", "revoked_at",
    "revoked_by",
)  # fmt: skip

UPSERT_CHANGE: Final = SQL(
    f"INSERT INTO watch_changes ({', '.join(_CHANGE_COLUMNS)})"
    f" VALUES ({', '.join(f':{name}' for name in _CHANGE_COLUMNS)})"
    f" ON CONFLICT ({', '.join(_CHANGE_KEY)}) DO UPDATE SET "
    + ", ".join(
        f"{name} = excluded.{name}"
        for name in _CHANGE_COLUMNS
        if name not in (*_CHANGE_KEY, "created_at")
    )
)
OPEN_CHANGES: Final = SQL(
    f"SELECT {', '.join(_CHANGE_COLUMNS)} FROM watch_changes"
    " WHERE repo_id = :repo AND branch = :branch AND state = 'open'"
    " ORDER BY created_at, platform, metric LIMIT :limit"
)
# Whether OPEN_CHANGES (of the same parameters) finds a row: a primary-key prefix.
ANY_OPEN_CHANGE: Final = SQL(
    "SELECT 1 FROM watch_changes"
    " WHERE repo_id = :repo AND branch = :branch AND state = 'open' LIMIT 1"
)
ISSUE_CHANGES: Final = SQL(
    f"SELECT {', '.join(_CHANGE_COLUMNS)} FROM watch_changes"
    " WHERE repo_id = :repo AND issue_number = :issue ORDER BY platform, metric"
)
INSERT_ACK: Final = SQL(
    f"INSERT INTO acknowledgements ({', '.join(_ACK_COLUMNS)})"
    f" VALUES ({', '.join(f':{name}' for name in _ACK_COLUMNS)})"
)
# The newest first, so that the bound leaves out the oldest (read back oldest first).
BRANCH_ACKS: Final = SQL(
    f"SELECT {', '.join(_ACK_COLUMNS)} FROM acknowledgements"
    " WHERE repo_id = :repo AND subject = 'branch' AND branch = :branch"
    " AND revoked_at IS NULL ORDER BY accepted_at DESC, id DESC LIMIT :limit"
)
PULL_ACKS: Final = SQL(
    f"SELECT {', '.join(_ACK_COLUMNS)} FROM acknowledgements"
    " WHERE repo_id = :repo AND subject = 'pull' AND pr_number = :pr"
    " AND revoked_at IS NULL ORDER BY accepted_at, id LIMIT :limit"
)
# Whether PULL_ACKS (of the same parameters) finds a row.
ANY_PULL_ACK: Final = SQL(
    "SELECT 1 FROM acknowledgements"
    " WHERE repo_id = :repo AND subject = 'pull' AND pr_number = :pr"
    " AND revoked_at IS NULL LIMIT 1"
)
REVOKE_PULL_ACKS: Final = SQL(
    "UPDATE acknowledgements SET revoked_at = :at, revoked_by = :by"
    " WHERE repo_id = :repo AND subject = 'pull' AND pr_number = :pr"
    " AND platform = :platform AND metric = :metric AND revoked_at IS NULL"
)
FORGET_CHANGES: Final = SQL("DELETE FROM watch_changes WHERE repo_id = :repo")
FORGET_ACKS: Final = SQL("DELETE FROM acknowledgements WHERE repo_id = :repo")
FORGET_INSTALLATION_CHANGES: Final = SQL(
    "DELETE FROM watch_changes WHERE installation_id = :installation"
)
FORGET_INSTALLATION_ACKS: Final = SQL(
    "DELETE FROM acknowledgements WHERE installation_id = :installation"
)


class WatchSQL(SQLBackend):
    """``Store``'s ``Watch`` role."""

    async def save_watched(self, changes: Sequence[WatchedChange]) -> None:
        if changes:
            await self._atomically([(UPSERT_CHANGE, [_change_params(c) for c in changes])])

    async def open_changes(self, repo_id: int, branch: str) -> list[WatchedChange]:
        params = {"repo": repo_id, "branch": storable(branch), "limit": MAX_WATCHED}
        rows = await self._fetch_if(ANY_OPEN_CHANGE, OPEN_CHANGES, params)
        return [_change(row) for row in rows]

    async def issue_changes(self, repo_id: int, issue_number: int) -> list[WatchedChange]:
        rows = await self._fetch(ISSUE_CHANGES, {"repo": repo_id, "issue": issue_number})
        return [_change(row) for row in rows]

    async def acknowledge(self, acknowledgements: Sequence[Acknowledgement]) -> None:
        if acknowledgements:
            await self._atomically([(INSERT_ACK, [_ack_params(a) for a in acknowledgements])])

    async def branch_acknowledgements(self, repo_id: int, branch: str) -> list[Acknowledgement]:
        params = {"repo": repo_id, "branch": storable(branch), "limit": MAX_WATCHED}
        return [_ack(row) for row in reversed(await self._fetch(BRANCH_ACKS, params))]

    async def pull_acknowledgements(self, repo_id: int, pr_number: int) -> list[Acknowledgement]:
        params = {"repo": repo_id, "pr": pr_number, "limit": MAX_WATCHED}
        return [_ack(row) for row in await self._fetch_if(ANY_PULL_ACK, PULL_ACKS, params)]

    async def revoke_acknowledgements(
        self,
        repo_id: int,
        pr_number: int,
        keys: Sequence[tuple[str, str]],
        *,
        login: str,
        now: float,
    ) -> None:
        each = [
            {
                "repo": repo_id,
                "pr": pr_number,
                "platform": storable(platform),
                "metric": storable(metric),
                "at": now,
                "by": login,
            }
            for platform, metric in keys
        ]
        if each:
            await self._atomically([(REVOKE_PULL_ACKS, each)])


def _change_params(change: WatchedChange) -> dict[str, Any]:
    return {
        "repo_id": change.repo_id,
        "branch": storable(change.branch),
        "platform": storable(change.platform),
        "metric": storable(change.metric),
        "settings": storable(settings_text(change.settings)),
        "first_sha": change.first_sha,
        "sha": change.sha,
        "installation_id": change.installation_id,
        "issue_number": change.issue_number,
        "state": change.state,
        "closed_reason": change.closed_reason,
        "direction": change.direction,
        "change": change.change,
        "unit": storable(change.unit),
        "scale": change.scale,
        "created_at": change.created_at,
        "updated_at": change.updated_at,
    }


def _change(row: Row) -> WatchedChange:
    (repo_id, branch, platform, metric, settings, first_sha, sha, installation_id,
     issue, state, closed_reason, direction, change, unit, scale, created_at,
     updated_at) = row  # fmt: skip
    return WatchedChange(
        repo_id=int(repo_id),
        branch=branch,
        platform=platform,
        metric=metric,
        settings=settings_from_text(settings),
        first_sha=first_sha,
        sha=sha,
        installation_id=None if installation_id is None else int(installation_id),
        issue_number=None if issue is None else int(issue),
        state=cast(WatchState, state),
        direction=direction,
        change=float(change),
        unit=unit,
        scale=scale,
        created_at=float(created_at),
        updated_at=float(updated_at),
        closed_reason=cast(ClosedReason | None, closed_reason),
    )


def _ack_params(ack: Acknowledgement) -> dict[str, Any]:
    return {
        "repo_id": ack.repo_id,
        "installation_id": ack.installation_id,
        "subject": ack.subject,
        "branch": storable(ack.branch),
        "pr_number": ack.pr_number,
        "sha": ack.sha,
        "platform": storable(ack.platform),
        "metric": storable(ack.metric),
        "settings": storable(settings_text(ack.settings)),
        "value": ack.value,
        "login": ack.login,
        "reason": storable(ack.reason),
        "accepted_at": ack.accepted_at,
        "revoked_at": ack.revoked_at,
        "revoked_by": ack.revoked_by,
    }


def _ack(row: Row) -> Acknowledgement:
    (repo_id, installation_id, subject, branch, pr_number, sha, platform, metric, settings,
     value, login, reason, accepted_at, revoked_at, revoked_by) = row  # fmt: skip
    return Acknowledgement(
        repo_id=int(repo_id),
        installation_id=None if installation_id is None else int(installation_id),
        subject=cast(AcknowledgedSubject, subject),
        branch=branch,
        pr_number=None if pr_number is None else int(pr_number),
        sha=sha,
        platform=platform,
        metric=metric,
        settings=settings_from_text(settings),
        value=None if value is None else float(value),
        login=login,
        reason=reason,
        accepted_at=float(accepted_at),
        revoked_at=None if revoked_at is None else float(revoked_at),
        revoked_by=revoked_by,
    )
