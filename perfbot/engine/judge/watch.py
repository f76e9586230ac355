"""The default branch's watch, decided: which issues to open, edit or close, given the
branch's series, what was reported before and what was accepted.

Pure, so that the rule is read here and the App only carries it out (GitHub writes, the
store). One issue per commit at which metrics changed: every change found at that commit
is a row of it. A change reported before and found again (at its commit, or moved by a
few commits as more commits came in: ``change_series.track``) keeps its issue, which is
edited; one no longer found (more commits said it was noise), or back at its old level
(``ChangePoint.returned_sha``), leaves its issue, which is closed with a comment once
none of its rows is left. An accepted change is the baseline of its series from then on:
the commits before it are not judged again.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from perfbot.engine.judge.change_series import Status, track
from perfbot.engine.judge.changes import BranchSeries, ChangeId, ChangePoint, detect
from perfbot.engine.judge.compare import Policy
from perfbot.model import Scale, Settings

# The smallest change worth an issue when the repository says nothing, in percent; points
# and counters keep the comparison's own floors (0.1 point, 1 count), and a deterministic
# metric's every change is real.
DEFAULT_MIN_CHANGE = 2.0

SeriesKey = tuple[str, str, Settings]  # platform, metric, settings


class Closing(enum.StrEnum):
    RETURNED = "returned"  # the metric is back at its old level
    GONE = "gone"  # more commits showed the change was noise
    SUPERSEDED = "superseded"  # a later level of its series was accepted


@dataclass(frozen=True, slots=True)
class Reported:
    """A change the App told about: its identity now, and its issue (None: recorded only,
    ``watch.issues`` off)."""

    identity: ChangeId
    issue: int | None


@dataclass(frozen=True, slots=True)
class Ending:
    """A reported change that is over: why, and where it was found to be (``returned``)."""

    reported: Reported
    closing: Closing
    change: ChangePoint | None = None  # the change as last found (for the words)
    returned_sha: str | None = None


@dataclass(frozen=True, slots=True)
class IssuePlan:
    """What to do with one issue: ``issue`` None opens one about ``sha``. ``changes`` are
    its rows now (each with the identity it was reported under, None when new); when
    there are none left, the issue is closed for ``endings``."""

    sha: str
    issue: int | None
    changes: tuple[tuple[ChangePoint, ChangeId | None], ...]
    endings: tuple[Ending, ...] = ()

    @property
    def closes(self) -> bool:
        return not self.changes


def baseline(series: BranchSeries, accepted_sha: str | None) -> BranchSeries:
    """``series`` from its accepted change's first commit on (all of it when that commit
    is not in it, or nothing was accepted)."""
    shas = [commit.sha for commit in series.commits]
    if accepted_sha is None or accepted_sha not in shas:
        return series
    return replace(series, commits=series.commits[shas.index(accepted_sha) :])


def worth_telling(change: ChangePoint, min_change: float | None) -> bool:
    """Whether a change is big enough for an issue: ``min_change`` when the repository
    sets it, whatever the metric; else ``DEFAULT_MIN_CHANGE`` for a ratio that is not
    deterministic (a deterministic metric's every change is real)."""
    if min_change is None:
        deterministic = change.deterministic or change.scale is not Scale.RATIO
        min_change = 0.0 if deterministic else DEFAULT_MIN_CHANGE
    return abs(change.change) >= min_change


def current_changes(
    series: BranchSeries, policy: Policy, min_change: float | None
) -> list[ChangePoint]:
    """The changes of ``series`` worth telling, without the returns of earlier ones (the
    way back to an old level is the end of that change, not a change of its own)."""
    found = detect(series, policy)
    returns = {change.returned_sha for change in found if change.returned_sha}
    return [c for c in found if c.sha not in returns and worth_telling(c, min_change)]


def plan(
    series: Iterable[BranchSeries],
    reported: Sequence[Reported],
    *,
    policy: Policy,
    min_change: float | None = None,
    accepted: Mapping[SeriesKey, str] | None = None,
) -> list[IssuePlan]:
    """The issues to open, edit and close for ``series`` (the ones a push run touched)."""
    accepted = accepted or {}
    by_identity = {r.identity: r for r in reported}
    rows: dict[int | str, list[tuple[ChangePoint, ChangeId | None]]] = {}
    endings: dict[int | str, list[Ending]] = {}
    for one in series:
        key: SeriesKey = (one.platform, one.metric, one.settings)
        judged = baseline(one, accepted.get(key))
        current = current_changes(judged, policy, min_change)
        ids = [r.identity for r in reported if _of(r.identity, key)]
        for behind in (by_identity[i] for i in _before_baseline(one, judged, ids)):
            if behind.issue is not None:
                ending = Ending(behind, Closing.SUPERSEDED)
                endings.setdefault(_group(behind, None), []).append(ending)
        for tracked in track(ids, current, judged):
            previous = by_identity.get(tracked.reported) if tracked.reported else None
            change = tracked.change
            if tracked.status in _UNJUDGED or (previous and previous.issue is None):
                continue  # not judged now, or recorded without an issue
            if tracked.status is Status.GONE and previous is not None:
                endings.setdefault(_group(previous, None), []).append(
                    Ending(previous, Closing.GONE)
                )
                continue
            assert change is not None  # NEW, STANDING or MOVED
            if change.returned_sha is not None:
                if previous is not None:
                    ending = Ending(previous, Closing.RETURNED, change, change.returned_sha)
                    endings.setdefault(_group(previous, None), []).append(ending)
                continue  # undone before anyone was told: nothing to tell
            rows.setdefault(_group(previous, change), []).append((change, tracked.reported))
    return _plans(rows, endings)


# A reported change left as it was: older than the window, or too near its edge to tell.
_UNJUDGED = (Status.BEYOND_WINDOW, Status.AT_EDGE)


def _before_baseline(
    series: BranchSeries, judged: BranchSeries, reported: Sequence[ChangeId]
) -> list[ChangeId]:
    """The reported changes of ``series`` at commits before its accepted baseline (where
    ``judged`` begins): a later level was accepted, so they are over."""
    if len(judged.commits) == len(series.commits):
        return []
    earlier = {commit.sha for commit in series.commits[: len(series.commits) - len(judged.commits)]}
    kept = {commit.sha for commit in judged.commits}
    return [r for r in reported if r.sha in earlier and r.sha not in kept]


def _of(identity: ChangeId, key: SeriesKey) -> bool:
    return (identity.platform, identity.metric, identity.settings) == key


def _group(previous: Reported | None, change: ChangePoint | None) -> int | str:
    """The issue a row belongs to: the one it was reported in, else its commit's new one."""
    if previous is not None and previous.issue is not None:
        return previous.issue
    assert change is not None
    return change.sha


def _row_order(row: tuple[ChangePoint, ChangeId | None]) -> tuple[str, str]:
    return row[0].platform, row[0].metric


def _plans(
    rows: Mapping[int | str, list[tuple[ChangePoint, ChangeId | None]]],
    endings: Mapping[int | str, list[Ending]],
) -> list[IssuePlan]:
    # A new change at a commit whose issue is open already joins it: one issue per commit.
    issue_at = {
        change.sha: group
        for group, kept in rows.items()
        if isinstance(group, int)
        for change, _ in kept
    }
    merged: dict[int | str, list[tuple[ChangePoint, ChangeId | None]]] = {}
    for group, kept in rows.items():
        home = issue_at.get(group, group) if isinstance(group, str) else group
        merged.setdefault(home, []).extend(kept)
    plans = []
    for group in sorted({*merged, *endings}, key=lambda g: (isinstance(g, str), str(g))):
        now = tuple(sorted(merged.get(group, []), key=_row_order))
        ended = tuple(endings.get(group, ()))
        if isinstance(group, str):
            plans.append(IssuePlan(group, None, now))
        else:
            sha = now[0][0].sha if now else ended[0].reported.identity.sha
            plans.append(IssuePlan(sha, group, now, ended))
    return plans
