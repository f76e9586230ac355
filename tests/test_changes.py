"""The change-point detector (perfbot.engine.judge.changes) on constructed series: a clean
step, a spike, drift, a settings change, re-runs, a deterministic step, an improvement
against a regression, loss in points, a counter; and the App's tracking of a change as
commits arrive. Properties: it never raises on finite series, is deterministic, and a
ratio metric's change points do not depend on its scale."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.judge.change_series import Observation, Status, series_of, track
from perfbot.engine.judge.changes import (
    MIN_SEGMENT,
    BranchSeries,
    ChangeId,
    ChangePoint,
    Direction,
    MeasuredCommit,
    Shape,
    detect,
    looks_deterministic,
)
from perfbot.engine.judge.compare import MetricRule, Policy
from perfbot.model import Better, Scale


def sha(index: int) -> str:
    return f"{index:040x}"


def noisy(
    levels: Sequence[float], sigma: float = 0.02, seed: int = 1, relative: bool = True
) -> list[float]:
    rng = random.Random(seed)
    if relative:
        return [level * math.exp(rng.gauss(0, sigma)) for level in levels]
    return [level + rng.gauss(0, sigma) for level in levels]


def series(
    values: Sequence[float],
    *,
    scale: Scale = Scale.RATIO,
    better: Better = Better.HIGHER,
    deterministic: bool | None = None,
    metric: str = "tcp_rx.mbps",
) -> BranchSeries:
    return BranchSeries(
        platform="lab",
        metric=metric,
        unit="Mbps",
        better=better,
        commits=tuple(MeasuredCommit(sha(i), (v,)) for i, v in enumerate(values)),
        scale=scale,
        deterministic=deterministic,
    )


def step(before: int, after: int, low: float = 100.0, high: float = 90.0) -> list[float]:
    return [low] * before + [high] * after


def test_a_clean_step_is_found_at_its_first_commit_with_its_levels() -> None:
    values = noisy(step(60, 60, 100.0, 90.0))  # −10 % at σ = 2 %: a 5σ step
    (change,) = detect(series(values))
    assert change.sha == sha(60)
    assert change.previous_sha == sha(59)
    assert change.direction is Direction.REGRESSION
    assert change.shape is Shape.STEP
    assert -12 < change.change < -8
    assert 97 < change.before.value < 103
    assert 87 < change.after.value < 93
    assert change.before.low < change.before.value < change.before.high
    assert change.before.commits == change.after.commits == 60
    assert change.confidence > 0.999999
    assert change.identity.sha == sha(60)


def test_nothing_changes_in_noise() -> None:
    assert detect(series(noisy([100.0] * 200, seed=3))) == ()


def test_a_single_outlying_commit_is_a_spike_not_a_change() -> None:
    values = noisy([100.0] * 120)
    values[60] = 40.0  # a runner hiccup: −60 %
    values[90] = 180.0
    assert detect(series(values)) == ()


def test_two_outlying_commits_in_a_row_are_spikes_too() -> None:
    values = noisy([100.0] * 120)
    values[60] = values[61] = 50.0
    assert detect(series(values)) == ()


def test_a_level_needs_min_segment_commits_before_it_is_reported() -> None:
    values = noisy(step(60, 60, 100.0, 50.0))
    # Two commits at half the level: still a spike. (With three, a segment of four can
    # hold them and one old commit: reported a commit early, then put right.)
    assert detect(series(values[:62])) == ()
    assert [c.sha for c in detect(series(values[: 60 + MIN_SEGMENT]))] == [sha(60)]


def test_a_slow_drift_is_one_change_spanning_the_ramp() -> None:
    ramp = [100.0] * 50 + [100.0 - 0.4 * i for i in range(1, 61)] + [76.0] * 50
    found = detect(series(noisy(ramp, sigma=0.01)))
    assert len(found) == 1
    (drift,) = found
    assert drift.shape is Shape.DRIFT
    assert drift.direction is Direction.REGRESSION
    # It spans the ramp: it began near commit 50 and was over near commit 110.
    assert 40 <= int(drift.previous_sha, 16) <= 60
    assert 100 <= int(drift.sha, 16) <= 120
    assert -27 < drift.change < -21


def test_a_settings_change_starts_a_new_series_not_a_change_point() -> None:
    rows = [
        Observation("lab", "tcp", "Mbps", Better.HIGHER, Scale.RATIO, settings, sha(i), (v,))
        for i, (v, settings) in enumerate(
            [(value, (("streams", "1"),)) for value in noisy([100.0] * 60)]
            + [(value, (("streams", "4"),)) for value in noisy([400.0] * 60, seed=2)]
        )
    ]
    every_series = series_of(rows)
    assert [s.settings for s in every_series] == [(("streams", "1"),), (("streams", "4"),)]
    assert [detect(s) for s in every_series] == [(), ()]
    # Mixed into one series, the same rows are a change: the key is what prevents it.
    mixed = BranchSeries(
        "lab",
        "tcp",
        "Mbps",
        Better.HIGHER,
        tuple(MeasuredCommit(r.sha, r.samples) for r in rows),
    )
    assert len(detect(mixed)) == 1


def test_re_runs_are_samples_of_their_commit_wherever_they_are_listed() -> None:
    values = noisy(step(40, 40, 100.0, 80.0))
    commits = [MeasuredCommit(sha(i), (v,)) for i, v in enumerate(values)]
    # Commit 40 (the first at the new level) was re-run; its run finished later.
    commits.insert(45, MeasuredCommit(sha(40), (79.5, 80.5)))
    found = detect(BranchSeries("lab", "tcp", "Mbps", Better.HIGHER, tuple(commits)))
    assert [change.sha for change in found] == [sha(40)]
    assert found[0].after.commits == 40  # commit 40 is counted once


def test_a_deterministic_step_is_the_first_differing_commit_exactly() -> None:
    values = step(30, 30, 1.76, 1.74)  # −1.1 %, in a tool that repeats itself
    values[12] = 1.2  # one flaky run: a spike, not a change
    for deterministic in (True, None):
        (change,) = detect(series(values, deterministic=deterministic))
        assert change.sha == sha(30)
        assert change.previous_sha == sha(29)
        assert change.deterministic
        assert change.confidence == 1.0
        assert change.before.value == 1.76
        assert change.after.value == 1.74
    # Below compare's floor (1 %) a deterministic move is no change either.
    assert detect(series(step(30, 30, 1.76, 1.75), deterministic=True)) == ()


def test_a_deterministic_spike_before_the_change_is_not_the_old_level() -> None:
    values = step(30, 30, 500.0, 450.0)
    values[29] = 300.0
    (change,) = detect(series(values, deterministic=True))
    assert (change.sha, change.previous_sha) == (sha(30), sha(28))


def test_deterministic_is_recognised_from_exactly_repeated_values_only() -> None:
    assert looks_deterministic(step(30, 30, 1.76, 1.74))
    assert not looks_deterministic(noisy([100.0] * 60))
    # A counter at zero with bursts repeats itself too, but only between bursts.
    bursts = [0.0] * 60
    for index in range(5, 60, 7):
        bursts[index] = 3.0
    assert not looks_deterministic(bursts)


def test_improvement_and_regression_follow_better() -> None:
    values = noisy(step(50, 50, 100.0, 80.0))
    (higher,) = detect(series(values, better=Better.HIGHER))
    (lower,) = detect(series(values, better=Better.LOWER))
    assert higher.direction is Direction.REGRESSION
    assert lower.direction is Direction.IMPROVEMENT
    # A configuration rule turns the direction round, as in a comparison.
    policy = Policy(rules=(MetricRule("tcp_*", better=Better.LOWER),))
    (ruled,) = detect(series(values, better=Better.HIGHER), policy)
    assert ruled.direction is Direction.IMPROVEMENT
    assert detect(series(values), Policy(rules=(MetricRule("tcp_*", ignore=True),))) == ()


def test_loss_is_judged_and_stated_in_percentage_points() -> None:
    values = noisy(step(50, 50, 0.5, 3.5), sigma=0.3, relative=False)
    (change,) = detect(series(values, scale=Scale.POINTS, better=Better.LOWER))
    assert 2.5 < change.change < 3.5  # points, not +600 %
    assert change.direction is Direction.REGRESSION


def test_loss_from_zero_is_a_change_in_points() -> None:
    values = [0.0] * 50 + noisy([2.0] * 50, sigma=0.2, relative=False)
    (change,) = detect(series(values, scale=Scale.POINTS, better=Better.LOWER))
    assert change.sha == sha(50)
    assert 1.5 < change.change < 2.5


def test_a_counter_is_judged_in_counts() -> None:
    values = noisy(step(50, 50, 10.0, 40.0), sigma=4.0, relative=False)
    (change,) = detect(series(values, scale=Scale.COUNT, better=Better.LOWER))
    assert 25 < change.change < 35
    assert change.direction is Direction.REGRESSION


def test_a_change_undone_later_says_where_the_old_level_returned() -> None:
    values = noisy([100.0] * 50 + [80.0] * 30 + [100.0] * 50)
    first, second = detect(series(values))
    assert first.returned_sha == sha(80) == second.sha
    assert second.returned_sha is None


def test_a_ratio_metric_at_zero_or_below_is_left_out_not_an_error() -> None:
    values = [*noisy(step(40, 40)), 0.0, -5.0]
    assert [change.sha for change in detect(series(values))] == [sha(40)]


def test_too_short_a_series_has_no_change_points() -> None:
    assert detect(series([100.0, 50.0, 100.0])) == ()
    assert detect(series([])) == ()


def test_only_the_newest_window_is_looked_at() -> None:
    values = noisy(step(100, 400))  # the step is 400 commits back
    assert detect(series(values)) == ()


def first_index(found: Sequence[ChangePoint]) -> int:
    return int(found[0].sha, 16)


def test_tracking_follows_a_change_as_commits_arrive() -> None:
    values = noisy(step(60, 60, 100.0, 90.0))
    values[60] = 95.0  # the first new commit is half-way: early on the cut may be late
    whole = series(values)
    found = detect(whole)
    reported = [change.identity for change in found]
    first = reported[0]
    moved = [ChangeId(first.platform, first.metric, first.settings, sha(first_index(found) + 2))]
    (standing,) = track(reported, found, whole)
    assert standing.status is Status.STANDING
    (followed,) = track(moved, found, whole)
    assert followed.status is Status.MOVED
    assert followed.change is not None
    assert followed.change.sha == found[0].sha
    quiet = series(noisy([100.0] * 120))
    (gone,) = track(reported, detect(quiet), quiet)
    assert gone.status is Status.GONE
    later = series(noisy([90.0] * 120, seed=9))
    later = BranchSeries(
        "lab",
        "tcp_rx.mbps",
        "Mbps",
        Better.HIGHER,
        tuple(MeasuredCommit(sha(1000 + i), c.samples) for i, c in enumerate(later.commits)),
    )
    (beyond,) = track(reported, detect(later), later)
    assert beyond.status is Status.BEYOND_WINDOW
    (new,) = track([], found, whole)
    assert new.status is Status.NEW
    assert new.reported is None


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(finite, min_size=0, max_size=80),
    st.sampled_from(list(Scale)),
    st.sampled_from([True, False, None]),
)
def test_never_raises_on_finite_series_and_is_deterministic(
    values: list[float], scale: Scale, deterministic: bool | None
) -> None:
    first = detect(series(values, scale=scale, deterministic=deterministic))
    again = detect(series(list(values), scale=scale, deterministic=deterministic))
    assert first == again
    for change in first:
        assert math.isfinite(change.change) or scale is Scale.RATIO
        assert 0.0 <= change.confidence <= 1.0


@settings(max_examples=30, deadline=None)
@given(
    st.integers(min_value=0, max_value=10_000),
    st.floats(min_value=1e-6, max_value=1e6),
    st.floats(min_value=0.5, max_value=2.0),
)
def test_a_ratio_metrics_change_points_do_not_depend_on_its_scale(
    seed: int, factor: float, jump: float
) -> None:
    values = noisy(step(40, 40, 100.0, 100.0 * jump), seed=seed)
    base = detect(series(values))
    scaled = detect(series([value * factor for value in values]))
    assert [c.sha for c in base] == [c.sha for c in scaled]
    assert [round(c.change, 6) for c in base] == [round(c.change, 6) for c in scaled]
