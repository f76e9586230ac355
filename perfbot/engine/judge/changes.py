"""Change points on a branch: where the measured level of a metric moved, commit by commit.

A pull request is judged on a few runs a side, so it cannot see a change smaller than
its noise allows (``noise``: about 13 % at 3 runs for a metric with 4 % noise). The
series of measured pushes to the default branch can: the level before and after a commit
is measured by many commits each. This module finds those changes in one series per
(platform, metric, settings), oldest commit first in the branch's first-parent order.

* **Units**: each commit's value is the median of all its samples (re-runs included) in
  the metric's judging units (``noise.judging_units``), and a change is said as ``compare``
  says it: percent for ratio metrics, percentage points for loss, counts for counters,
  regression or improvement by the metric's ``Better``.
* **Deterministic series** (zperf and twister under QEMU icount, or a series whose values
  repeat exactly, see ``looks_deterministic``): the first commit at a new value is the
  change, exactly, once a second commit holds it; a value seen at one commit only is a
  spike.
* **Stochastic series**: segmented by ``perfbot.engine.judge.segments``: the noise of
  one commit measured from the series itself (neighbouring differences), outlying commits
  pulled towards their neighbours, optimal partitioning with a penalty per change, then
  each cut judged by a two-sample test of its neighbouring segments against that noise
  (``THRESHOLD`` standard errors, widened by Student's t for a short series) and by their
  ranks (``RANK_Z``). A segment is at least ``MIN_SEGMENT`` commits long, so one or two
  outlying commits are never a level, and a cut is reported only once the new level
  has held that long.
* **Drift**: consecutive cuts the same way that one straight ramp explains as well (by
  Schwarz's criterion: a ramp has fewer things to choose than a staircase) are one change
  of shape ``DRIFT``, from the commit before the ramp to the first commit past it. It is
  reported once its size clears the test, and its end moves while the ramp goes on.
* **Floors**: a change smaller than ``Policy``'s floor for the metric (1 %, 0.1 point,
  1 count by default) is no change, as in a comparison.

Pure and deterministic: the same series gives the same answer, and no I/O is done. The
App calls ``detect`` on the stored window of each series a push run touched and matches
the answer with what it reported before by ``ChangePoint.identity`` (``track``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from perfbot.engine.judge import segments
from perfbot.engine.judge.compare import Policy
from perfbot.engine.judge.noise import Noise, critical, judging_units
from perfbot.model import Better, Scale, Settings

# The newest commits of a series that are looked at: a few hundred keep the cost bounded
# (O(n²) at worst) and the noise estimate about today's machine.
MAX_COMMITS = 300
# The fewest commits a level must hold: one or two outlying commits are spikes.
MIN_SEGMENT = 4
# How many standard errors a cut's neighbouring segments must differ by: measured on the
# bench (bench/changes.py) to keep false alarms under 1 per 1,000 commits.
THRESHOLD = 5.0
# The penalty per change of the segmentation, in squared standard errors: below the
# threshold's square, so that a weak cut is proposed and then judged by the test.
PENALTY = 16.0
# A cut's neighbouring segments must also differ in their ranks by this many standard
# deviations of Mann–Whitney's U: a heavy tail's run of bad commits has extreme values,
# not extreme ranks.
RANK_Z = 3.0
# How far one commit may stand from its neighbours' median, in standard deviations.
CLIP = 2.5
# A deterministic series' new value must be held by this many commits to be a change.
DETERMINISTIC_HOLD = 2
# A series is recognised as deterministic when at most this share of neighbouring
# commits differ (and every commit repeats itself exactly).
DETERMINISTIC_CHANGE_SHARE = 0.1


class Direction(enum.StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


class Shape(enum.StrEnum):
    STEP = "step"
    DRIFT = "drift"


@dataclass(frozen=True, slots=True)
class MeasuredCommit:
    """Every sample of one commit of the series (all its runs), in the metric's units."""

    sha: str
    samples: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class BranchSeries:
    """One metric of one platform under one settings fingerprint, oldest commit first.

    ``deterministic``: the measuring format's prior (``Series.deterministic``); None when
    it is not known (the store does not keep it), and the data decide. ``noise``: what
    same-commit repeats taught of one sample's noise (``noise.learned``), if anything: the
    series' own scatter is never taken as smaller than that allows.
    """

    platform: str
    metric: str
    unit: str
    better: Better
    commits: tuple[MeasuredCommit, ...]
    scale: Scale = Scale.RATIO
    settings: Settings = ()
    deterministic: bool | None = None
    noise: Noise | None = None


@dataclass(frozen=True, slots=True)
class Level:
    """A segment's level in the metric's own units: the median of its commits' values,
    their interquartile range (``low`` to ``high``), and how many commits measured it."""

    value: float
    low: float
    high: float
    commits: int


@dataclass(frozen=True, slots=True)
class ChangeId:
    """What stays the same while a change is followed commit after commit: an issue about
    it is found again by this."""

    platform: str
    metric: str
    settings: Settings
    sha: str


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """One change of a series' level.

    ``sha`` is the first commit at the new level, ``previous_sha`` the last one at the old
    level (commits between them were not measured, or were spikes). ``change`` is in
    percent for ratio metrics, percentage points for points, counts for counters.
    ``confidence`` is one minus the two-sided p-value of the cut's test (1.0 for a
    deterministic series). ``returned_sha``: the first commit of a later level that is
    back at the old one (the change was undone), else None. ``index`` is the position of
    ``sha`` among the series' measured commits.
    """

    platform: str
    metric: str
    unit: str
    scale: Scale
    better: Better
    settings: Settings
    sha: str
    previous_sha: str
    index: int
    before: Level
    after: Level
    change: float
    direction: Direction
    confidence: float
    shape: Shape = Shape.STEP
    deterministic: bool = False
    returned_sha: str | None = None

    @property
    def identity(self) -> ChangeId:
        return ChangeId(self.platform, self.metric, self.settings, self.sha)


@dataclass(frozen=True, slots=True)
class _Points:
    """The usable commits of a series and their values in judging units."""

    shas: list[str]
    units: list[list[float]]
    values: list[float]
    raw: list[float]


def detect(series: BranchSeries, policy: Policy | None = None) -> tuple[ChangePoint, ...]:
    """The change points of ``series`` (its newest ``MAX_COMMITS`` commits), oldest first.

    ``policy`` gives each metric its floor and, through its rules, its direction (as in a
    comparison); an ignored metric has no change points. Never raises on finite samples.
    """
    policy = policy or Policy()
    better, floor, _, ignore = policy.resolve(series.metric, series.scale)
    if ignore:
        return ()
    points = _points(series)
    if len(points.values) < 2 * min(MIN_SEGMENT, DETERMINISTIC_HOLD):
        return ()
    exact = all(min(units) == max(units) for units in points.units)
    if exact and (series.deterministic or _recognised(series, points.raw)):
        cuts = _deterministic_cuts(points.raw, series.scale, floor)
        found = [_Cut(index, 1.0) for index in cuts]
        deterministic = True
    else:
        found = _stochastic_cuts(series, points, floor)
        deterministic = False
    changes = [
        _change_point(series, points, found, position, better or series.better, deterministic)
        for position in range(len(found))
    ]
    return tuple(_with_returns(changes, series.scale, floor))


def _points(series: BranchSeries) -> _Points:
    """Commits in order, a commit listed twice (a re-run) merged into its first place, and
    samples without judging units (a ratio metric's zero) left out."""
    merged: dict[str, list[float]] = {}
    for commit in series.commits:
        merged.setdefault(commit.sha, []).extend(commit.samples)
    shas, units, values, raw = [], [], [], []
    for sha, samples in list(merged.items())[-MAX_COMMITS:]:
        usable = [s for s in samples if math.isfinite(s)]
        if series.scale is Scale.RATIO:
            usable = [s for s in usable if s > 0]
        converted = judging_units(usable, series.scale) if usable else None
        if not converted:
            continue
        shas.append(sha)
        units.append(converted)
        values.append(segments.median(converted))
        raw.append(segments.median(usable))
    return _Points(shas, units, values, raw)


def looks_deterministic(values: Sequence[float]) -> bool:
    """Whether commit values look like a deterministic tool's: at most a tenth of
    neighbouring commits differ, and no more one-commit excursions than lasting changes
    (a counter that is mostly zero with bursts has excursions only)."""
    if len(values) < 2 * MIN_SEGMENT:
        return False
    runs = _runs(values)
    changes = len(runs) - 1
    if changes > DETERMINISTIC_CHANGE_SHARE * (len(values) - 1):
        return False
    inner = runs[1:-1]
    excursions = sum(1 for _, _, length in inner if length < DETERMINISTIC_HOLD)
    return excursions <= changes - excursions


def _recognised(series: BranchSeries, values: Sequence[float]) -> bool:
    return series.deterministic is None and looks_deterministic(values)


def _runs(values: Sequence[float]) -> list[tuple[float, int, int]]:
    """(value, first index, length) of each stretch of equal values."""
    runs: list[tuple[float, int, int]] = []
    for index, value in enumerate(values):
        if runs and runs[-1][0] == value:
            run_value, start, length = runs[-1]
            runs[-1] = (run_value, start, length + 1)
        else:
            runs.append((value, index, 1))
    return runs


def _deterministic_cuts(values: Sequence[float], scale: Scale, floor: float) -> list[int]:
    """The first commit of each new value held by ``DETERMINISTIC_HOLD`` commits that is
    beyond the floor from the level before (shorter stretches are spikes). A move within
    the floor leaves the level where it was: small moves that add up past the floor are
    reported at the commit where they do."""
    runs = _runs(values)
    level = runs[0][0]
    cuts = []
    for value, start, length in runs[1:]:
        if length < DETERMINISTIC_HOLD or value == level:
            continue
        if abs(_change_units(level, value, scale)) >= floor:
            cuts.append(start)
            level = value
    return cuts


@dataclass(frozen=True, slots=True)
class _Cut:
    """A change found at ``index``; a drift's ``first`` is where its ramp began."""

    index: int
    confidence: float
    shape: Shape = Shape.STEP
    first: int = -1

    @property
    def begins(self) -> int:
        return self.first if self.first >= 0 else self.index


def _stochastic_cuts(series: BranchSeries, points: _Points, floor: float) -> list[_Cut]:
    values = points.values
    sigma = _sigma(series, points)
    if sigma <= 0:
        return []
    smooth = segments.winsorised(values, sigma, CLIP)
    threshold = _threshold(len(values))
    proposed = segments.partition(smooth, sigma, PENALTY, MIN_SEGMENT)
    cuts = segments.prune(smooth, proposed, sigma, threshold, RANK_Z)
    # Below the floor is no change, as in a comparison: such a cut goes, and its
    # neighbours are judged again on the merged segment.
    while True:
        small = [cut for cut in cuts if abs(_cut_change(points, cut, series.scale)) < floor]
        if not small:
            break
        weakest = min(small, key=lambda cut: cut.statistic)
        kept = [cut.index for cut in cuts if cut is not weakest]
        cuts = segments.prune(smooth, kept, sigma, threshold, RANK_Z)
    found: list[_Cut] = []
    for group in _same_way_groups(smooth, cuts):
        found += _shaped(smooth, group, sigma)
    return found


def _threshold(commits: int) -> float:
    """``THRESHOLD`` standard errors, widened for a short series: its noise is itself
    estimated from few commits (Student's t at the same two-sided level)."""
    return critical(max(commits - 2, 1), math.erfc(THRESHOLD / math.sqrt(2)))


def _same_way_groups(values: Sequence[float], cuts: list[segments.Cut]) -> list[list[segments.Cut]]:
    """Runs of consecutive cuts that all move the level the same way (a staircase)."""
    groups: list[list[segments.Cut]] = []
    for cut in cuts:
        rises = _rises(values, cut)
        if groups and _rises(values, groups[-1][-1]) == rises:
            groups[-1].append(cut)
        else:
            groups.append([cut])
    return groups


def _rises(values: Sequence[float], cut: segments.Cut) -> bool:
    before = values[max(cut.start, cut.index - segments.LOCAL) : cut.index]
    after = values[cut.index : min(cut.stop, cut.index + segments.LOCAL)]
    return math.fsum(after) / len(after) > math.fsum(before) / len(before)


def _shaped(values: Sequence[float], group: list[segments.Cut], sigma: float) -> list[_Cut]:
    """A staircase that one straight ramp explains as well is one drift (from the ramp's
    first commit to the first past it); else each cut is judged alone.

    "As well" weighs what each model may choose (Schwarz's criterion, log n squared
    standard deviations per parameter): m steps choose m + 1 levels and m commits, a
    ramp two levels, where it begins and how wide it is. So a lone step stays a step
    unless a ramp fits clearly better, and three steps in a row are a drift unless the
    steps fit clearly better.
    """
    start, stop = group[0].start, group[-1].stop
    confidence = max(_confidence(cut) for cut in group)
    ramp = segments.best_ramp(values, start, stop)
    steps = segments.staircase_error(values, start, [cut.index for cut in group], stop)
    per_parameter = math.log(stop - start) * sigma * sigma
    extra_step_parameters = 2 * len(group) + 1 - 4
    if ramp is not None and ramp.error < steps + extra_step_parameters * per_parameter:
        return [_Cut(ramp.begin + ramp.width, confidence, Shape.DRIFT, ramp.begin)]
    if len(group) == 1:
        return [_Cut(group[0].index, confidence)]
    return [cut for single in group for cut in _shaped(values, [single], sigma)]


def _confidence(cut: segments.Cut) -> float:
    return 1 - math.erfc(cut.statistic / math.sqrt(2))


def _sigma(series: BranchSeries, points: _Points) -> float:
    """One commit's noise: from the series' own neighbouring commits, never below what
    learned noise says a commit of this many samples has."""
    sigma = segments.commit_noise(points.values)
    if series.noise is not None and series.noise.sigma > 0:
        typical = segments.median([len(units) for units in points.units])
        sigma = max(sigma, series.noise.sigma / math.sqrt(typical))
    # A metric that barely scatters still has rounding: a thousandth of a percent (or of
    # a point, or of a count) is the least noise there is.
    return max(sigma, 1e-5) if sigma > 0 else 0.0


def _cut_change(points: _Points, cut: segments.Cut, scale: Scale) -> float:
    before = points.raw[max(cut.start, cut.index - segments.LOCAL) : cut.index]
    after = points.raw[cut.index : min(cut.stop, cut.index + segments.LOCAL)]
    return _change_units(segments.median(before), segments.median(after), scale)


def _change_point(  # noqa: PLR0917  (one call site, every argument named by role)
    series: BranchSeries,
    points: _Points,
    found: list[_Cut],
    position: int,
    better: Better,
    deterministic: bool,
) -> ChangePoint:
    cut = found[position]
    # A drift's old level is the one before its ramp began, its new one after its end;
    # each level reaches to the neighbouring change, at most ``segments.LOCAL`` commits.
    begins = cut.begins
    start = found[position - 1].index if position > 0 else 0
    stop = found[position + 1].begins if position + 1 < len(found) else len(points.values)
    start = start if start < begins else max(0, begins - MIN_SEGMENT)
    stop = stop if stop > cut.index else min(len(points.values), cut.index + MIN_SEGMENT)
    before = _level(points.raw[max(start, begins - segments.LOCAL) : begins])
    after = _level(points.raw[cut.index : min(stop, cut.index + segments.LOCAL)])
    change = _change_units(before.value, after.value, series.scale)
    rose = after.value > before.value
    gain = rose if better is Better.HIGHER else not rose
    return ChangePoint(
        platform=series.platform,
        metric=series.metric,
        unit=series.unit,
        scale=series.scale,
        better=better,
        settings=series.settings,
        sha=points.shas[cut.index],
        previous_sha=_last_at_old_level(points, begins, before, deterministic),
        index=cut.index,
        before=before,
        after=after,
        change=change,
        direction=Direction.IMPROVEMENT if gain else Direction.REGRESSION,
        confidence=cut.confidence,
        shape=cut.shape,
        deterministic=deterministic,
    )


def _last_at_old_level(points: _Points, index: int, before: Level, deterministic: bool) -> str:
    """The commit before ``index``; in a deterministic series, the last commit that had
    the old value (a spike just before the change is not the old level)."""
    if deterministic:
        for earlier in range(index - 1, -1, -1):
            if points.raw[earlier] == before.value:
                return points.shas[earlier]
    return points.shas[index - 1]


def _level(values: Sequence[float]) -> Level:
    return Level(
        value=segments.median(values),
        low=segments.quantile(values, 0.25),
        high=segments.quantile(values, 0.75),
        commits=len(values),
    )


def _change_units(before: float, after: float, scale: Scale) -> float:
    """The change as a comparison states it: percent, points or counts."""
    if scale is Scale.RATIO:
        if before == 0:
            return math.inf if after else 0.0
        return (after - before) / abs(before) * 100.0
    return after - before


def _with_returns(changes: list[ChangePoint], scale: Scale, floor: float) -> list[ChangePoint]:
    """Each change undone by the next one (back within the floor of the old level, the
    other way) gets the commit where the old level returned."""
    result = list(changes)
    for position in range(len(result) - 1):
        first, second = result[position], result[position + 1]
        back = abs(_change_units(first.before.value, second.after.value, scale)) < max(
            floor, abs(first.change) / 2
        )
        if back and (second.after.value - second.before.value) * first.change < 0:
            result[position] = replace(first, returned_sha=second.sha)
    return result
