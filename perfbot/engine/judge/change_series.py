"""From measured rows to the series ``changes.detect`` judges, and its answers over time.

``series_of``: rows of any number of series, interleaved and in commit order, become one
``BranchSeries`` per (platform, metric, settings, unit, scale). A settings fingerprint
is part of what a series is: a run asked to do something else (``-P 4`` instead of
``-P 1``) starts a series of its own, so its new level is never a change point.

``track``: the App runs ``detect`` after every push run, on each series the run touched,
and keeps what it reported (an issue per change, found again by ``ChangePoint.identity``).
``track`` pairs the changes reported before with the ones found now: a change whose first
commit moved by a few commits as more commits came in is the same change (its issue is
edited), one no longer found is gone, one older than the window is beyond it, and one
too near an end of the series to be found again is left as it was.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfbot.engine.judge.changes import (
    MIN_SEGMENT,
    BranchSeries,
    ChangeId,
    ChangePoint,
    MeasuredCommit,
)
from perfbot.model import Better, Scale, Settings

# A change whose first commit moved by at most this many measured commits is the same
# change: the bench (bench/changes.py) finds 98 % of steps within 2 commits.
MOVE_COMMITS = 5


@dataclass(frozen=True, slots=True)
class Observation:
    """What one run measured of one series at one commit."""

    platform: str
    metric: str
    unit: str
    better: Better
    scale: Scale
    settings: Settings
    sha: str
    samples: tuple[float, ...]


def series_of(
    observations: Iterable[Observation], *, deterministic: bool | None = None
) -> list[BranchSeries]:
    """One series per (platform, metric, settings, unit, scale), in the order each first
    appears; within one, the observations' order (commit order), re-runs kept as they
    come (``detect`` merges a commit's runs). ``better`` is the newest row's."""
    grouped: dict[tuple[str, str, Settings, str, Scale], list[Observation]] = {}
    for row in observations:
        key = (row.platform, row.metric, row.settings, row.unit, row.scale)
        grouped.setdefault(key, []).append(row)
    return [
        BranchSeries(
            platform=platform,
            metric=metric,
            unit=unit,
            better=rows[-1].better,
            commits=tuple(MeasuredCommit(row.sha, row.samples) for row in rows),
            scale=scale,
            settings=settings,
            deterministic=deterministic,
        )
        for (platform, metric, settings, unit, scale), rows in grouped.items()
    ]


class Status(enum.StrEnum):
    NEW = "new"  # not reported before
    STANDING = "standing"  # reported before, at the same first commit
    MOVED = "moved"  # reported before, its first commit has moved (within MOVE_COMMITS)
    GONE = "gone"  # reported before, no longer found (more commits said it was noise)
    BEYOND_WINDOW = "beyond window"  # reported before, its commit is older than the window
    # Reported before, not found now, but too near an end of the series to be found at all
    # (fewer than MIN_SEGMENT commits on a side): not judged gone on that little.
    AT_EDGE = "at edge"


@dataclass(frozen=True, slots=True)
class Tracked:
    """One change's fate: ``change`` is what is found now (None when gone or beyond the
    window), ``reported`` the identity it was reported under (None when new)."""

    status: Status
    change: ChangePoint | None
    reported: ChangeId | None


def track(
    reported: Sequence[ChangeId],
    current: Sequence[ChangePoint],
    series: BranchSeries,
    *,
    within: int = MOVE_COMMITS,
) -> list[Tracked]:
    """Pair the changes ``reported`` before for ``series`` with those found now.

    A reported change and a current one are the same when their first commits are at
    most ``within`` measured commits apart in ``series`` and they go the same way (which
    a ``ChangeId`` does not hold, so the closest current change of the same series is
    taken). Changes of other series in ``reported`` are left out.
    """
    position = {commit.sha: index for index, commit in enumerate(_distinct(series))}
    mine = [
        identity
        for identity in reported
        if (identity.platform, identity.metric, identity.settings)
        == (series.platform, series.metric, series.settings)
    ]
    unmatched = list(current)
    result: list[Tracked] = []
    for identity in mine:
        if identity.sha not in position:
            result.append(Tracked(Status.BEYOND_WINDOW, None, identity))
            continue
        near = [
            change
            for change in unmatched
            if abs(position.get(change.sha, -(10**9)) - position[identity.sha]) <= within
        ]
        if not near:
            at = position[identity.sha]
            edge = at < MIN_SEGMENT or len(position) - at < MIN_SEGMENT
            result.append(Tracked(Status.AT_EDGE if edge else Status.GONE, None, identity))
            continue
        best = min(near, key=lambda c: abs(position[c.sha] - position[identity.sha]))
        unmatched.remove(best)
        status = Status.STANDING if best.sha == identity.sha else Status.MOVED
        result.append(Tracked(status, best, identity))
    result += [Tracked(Status.NEW, change, None) for change in unmatched]
    return result


def _distinct(series: BranchSeries) -> list[MeasuredCommit]:
    seen: set[str] = set()
    commits = []
    for commit in series.commits:
        if commit.sha not in seen:
            seen.add(commit.sha)
            commits.append(commit)
    return commits
