"""Base against head: statistics and a verdict per platform and metric, no formatting.

A move counts only when it clears both the noise floor (``Policy.threshold``: a change
too small to matter) and the metric's noise (``perfbot.engine.judge.noise``: a change too
small to be told from chance). Ratio metrics are judged in percent, loss percentages in
percentage points and counters in counts, each with its own floor and tolerance. What a
comparison holds (verdicts, statistics, failures) is defined in ``results.py``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace

from perfbot.engine.judge import noise as noise_model
from perfbot.engine.judge.noise import Noise
from perfbot.engine.judge.policy import MetricRule, Policy, Resolved
from perfbot.engine.judge.results import (
    MOVED,
    Comparison,
    Incomparable,
    MetricResult,
    PlatformResult,
    Side,
    SideFailure,
    SideRunsLeftOut,
    Stats,
    Verdict,
    quick_metric_result,
)
from perfbot.engine.read.collector import fewer_collections
from perfbot.engine.read.sides import Series, SideReport
from perfbot.model import Better, FailedCase, Scale, Settings, quick_constructor

__all__ = [
    "MOVED",
    "Comparison",
    "Incomparable",
    "MetricResult",
    "MetricRule",
    "NoiseKnowledge",
    "PlatformResult",
    "Policy",
    "Side",
    "SideFailure",
    "SideRunsLeftOut",
    "Stats",
    "Verdict",
    "compare",
    "move_from",
]

# What is known of the noise of each (platform, metric), learned from earlier runs.
NoiseKnowledge = Mapping[tuple[str, str], Noise]


@fewer_collections
def compare(
    base: SideReport,
    head: SideReport,
    policy: Policy | None = None,
    noise: NoiseKnowledge | None = None,
) -> Comparison:
    """Compare two sides platform by platform; see ``Verdict`` for the outcomes.

    ``noise`` holds what earlier measurements of the same commit taught about each
    metric (``perfbot.engine.judge.noise.learned``); without it, only the runs' own repeats
    and the formats' priors are known.
    """
    policy = policy or Policy()
    base_metrics, head_metrics = _metrics_by_platform(base), _metrics_by_platform(head)
    names = base_metrics.keys() | head_metrics.keys()
    names |= {f.platform for f in base.failures} | {f.platform for f in head.failures}
    known = noise or {}
    rules = _Rules(policy)
    platforms = [
        _compare_platform(
            name,
            base,
            head,
            measured=(base_metrics.get(name), head_metrics.get(name)),
            rules=rules,
            known=known,
        )
        for name in names
    ]
    platforms.sort(key=lambda p: (p.severity(), p.name))
    return Comparison(tuple(platforms), policy)


def _metrics_by_platform(side: SideReport) -> dict[str, list[str]]:
    """The metrics of each platform a side measured, in one pass over its series (a
    platform at a time would walk every series once per platform)."""
    grouped: dict[str, list[str]] = {}
    for platform, metric in side.series:
        grouped.setdefault(platform, []).append(metric)
    return grouped


class _Rules:
    """What the policy says of each metric, asked once per metric name and scale.

    Without overrides the answer depends on the scale alone; the judge of a metric
    without learned noise depends only on its rule, so it is made once per rule too.
    """

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._known: dict[object, tuple[Resolved, _Judge]] = {}

    def of(self, metric: str, scale: Scale) -> tuple[Resolved, _Judge]:
        key: object = (metric, scale) if self._policy.rules else scale
        found = self._known.get(key)
        if found is None:
            rule = self._policy.rule(metric, scale)
            found = rule, _Judge(rule.better, rule.threshold, rule.tolerance)
            self._known[key] = found
        return found


def _compare_platform(
    name: str,
    base: SideReport,
    head: SideReport,
    *,
    measured: tuple[list[str] | None, list[str] | None],
    rules: _Rules,
    known: NoiseKnowledge,
) -> PlatformResult:
    base_failures = [f for f in base.failures if f.platform == name]
    head_failures = [f for f in head.failures if f.platform == name]
    base_metrics, head_metrics = measured
    unavailable = None
    if base_metrics is None:
        unavailable = "no base measurement"
    elif head_metrics is None:
        unavailable = "no PR measurement"
    metrics = []
    keys = set(base_metrics or ()).union(head_metrics or ())
    base_series_of, head_series_of = base.series.get, head.series.get
    for metric in sorted(keys):
        key = (name, metric)
        base_series, head_series = base_series_of(key), head_series_of(key)
        present = head_series or base_series
        assert present is not None  # the metric came from one of the two sides
        rule, judge = rules.of(metric, present.scale)
        if rule.ignore:
            continue
        learned = known.get(key) if known else None
        if learned is not None:
            judge = _Judge(judge.better, judge.threshold, judge.tolerance, learned)
        result = _compare_metric(
            metric,
            base_series,
            head_series,
            judge=judge,
            base_failed=bool(base_failures) and _covered(metric, base_failures),
            head_failed=bool(head_failures) and _covered(metric, head_failures),
            unavailable=unavailable,
        )
        if rule.report_only:
            # Judged like any other, so its row says what happened; never red for it.
            result = replace(result, beyond_tolerance=False, report_only=True)
        metrics.append(result)
    failures = [SideFailure("base", name, f.case, f.reason) for f in base_failures]
    failures += [SideFailure("head", name, f.case, f.reason) for f in head_failures]
    left_out = [SideRunsLeftOut("base", runs) for runs in base.left_out if runs.platform == name]
    left_out += [SideRunsLeftOut("head", runs) for runs in head.left_out if runs.platform == name]
    return PlatformResult(name, tuple(metrics), tuple(failures), unavailable, tuple(left_out))


def _covered(metric: str, failures: list[FailedCase]) -> bool:
    return any(failure.covers(metric) for failure in failures)


@dataclass(frozen=True, slots=True)
class _Judge:
    better: Better | None
    threshold: float
    tolerance: float
    learned: Noise | None = None
    # ``learned`` is the whole noise to judge against, as it is (``move_from``).
    given: bool = False


def _compare_metric(
    name: str,
    base: Series | None,
    head: Series | None,
    *,
    judge: _Judge,
    base_failed: bool,
    head_failed: bool,
    unavailable: str | None,
) -> MetricResult:
    present = head or base
    assert present is not None  # the metric came from one of the two sides
    better = judge.better or present.better
    if base is None or head is None:
        base_stats = Stats.of(base.samples) if base else None
        head_stats = Stats.of(head.samples) if head else None
        if head is None and head_failed:
            verdict, note = Verdict.FAILED, "failed on PR"
        elif base is None and base_failed:
            verdict, note = Verdict.FAILED, "failed on base"
        elif unavailable:
            verdict, note = Verdict.NOT_COMPARABLE, unavailable
        else:
            verdict, note = (Verdict.NEW if base is None else Verdict.MISSING), ""
        return MetricResult(
            name,
            present.unit,
            better,
            base_stats,
            head_stats,
            None,
            verdict,
            note=note,
            scale=present.scale,
            incomparable=Incomparable.PLATFORM if verdict is Verdict.NOT_COMPARABLE else None,
        )
    if base.unit != head.unit:
        return MetricResult(
            name,
            head.unit,
            better,
            Stats.of(base.samples),
            Stats.of(head.samples),
            None,
            Verdict.NOT_COMPARABLE,
            note=f"unit differs ({base.unit} vs {head.unit})",
            scale=head.scale,
            incomparable=Incomparable.UNIT,
        )
    base_stats = Stats.of(base.samples)
    # A deterministic tool repeats its numbers exactly: most metrics of a zperf report
    # have the same samples on both sides, and one frozen Stats serves both. (Not for a
    # zero: -0.0 equals 0.0, yet the two are written apart.)
    same = head.samples == base.samples and 0.0 not in head.samples
    head_stats = base_stats if same else Stats.of(head.samples)
    differing = _settings_difference(base.settings, head.settings)
    if differing:
        return MetricResult(
            name,
            head.unit,
            better,
            base_stats,
            head_stats,
            None,
            Verdict.NOT_COMPARABLE,
            note=f"run settings differ: {differing}",
            scale=head.scale,
            incomparable=Incomparable.SETTINGS,
        )
    move = _judge_move(base, head, (base_stats, head_stats), better=better, judge=judge)
    prior = base.deterministic and head.deterministic
    repeats_exactly = judge.learned is not None and judge.learned.exact
    return quick_metric_result(  # the row of almost every metric: made the quick way
        name,
        head.unit,
        better,
        base_stats,
        head_stats,
        move.change,
        move.verdict,
        move.beyond,
        move.note,
        scale=head.scale,
        noise=move.noise,
        band=move.band,
        unit_band=move.unit_band,
        deterministic=prior or repeats_exactly,
        settings=head.settings,
    )


def move_from(value: float, metric: MetricResult, policy: Policy) -> tuple[Verdict, float | None]:
    """How ``metric``'s PR side moved from ``value`` (an accepted level), judged as a move
    from base to head is: the same floor and tolerance, against the noise the metric was
    judged with (``metric.noise``), with ``value`` as a base of one run. The verdict and
    the change, in the change's units (None: a ratio metric from zero)."""
    head_stats = metric.head
    assert head_stats is not None  # only a metric measured on the PR is accepted
    head = Series(
        metric.unit,
        metric.better,
        list(head_stats.samples),
        scale=metric.scale,
        settings=metric.settings,
        deterministic=metric.deterministic,
    )
    base = replace(head, samples=[value])
    rule = policy.rule(metric.name, metric.scale)
    judge = _Judge(metric.better, rule.threshold, rule.tolerance, metric.noise, given=True)
    stats = (Stats.of(base.samples), head_stats)
    move = _judge_move(base, head, stats, better=metric.better, judge=judge)
    return move.verdict, move.change


def _settings_difference(base: Settings, head: Settings) -> str:
    """``duration 2 vs 3, streams 1 vs 4``: the settings both sides state and disagree on
    ("" when none). A setting only one side states is unknown on the other, not a
    difference: iperf3's text output states fewer settings than its JSON."""
    if base == head:  # the usual case, once per metric: no maps to build
        return ""
    base_map, head_map = dict(base), dict(head)
    return ", ".join(
        f"{key} {base_map[key]} vs {head_map[key]}"
        for key in sorted(base_map.keys() & head_map.keys())
        if base_map[key] != head_map[key]
    )


@dataclass(frozen=True, slots=True)
class _Move:
    verdict: Verdict
    change: float | None
    note: str = ""
    beyond: bool = False
    noise: Noise | None = None
    band: float | None = None
    unit_band: float | None = None


# Made once per metric measured on both sides.
_quick_move = quick_constructor(_Move)


def _judge_move(
    base: Series, head: Series, stats: tuple[Stats, Stats], *, better: Better, judge: _Judge
) -> _Move:
    """The verdict of a metric present on both sides, with its change and evidence."""
    base_stats, head_stats = stats
    if head.scale is Scale.RATIO:
        change = _ratio_change(base_stats.value, head_stats.value)
        if change is None:
            return _from_zero(base_stats, head_stats, better)
    else:
        # Percentage points, or counts: a rise from 0 is a rise, never "+∞ %".
        change = head_stats.value - base_stats.value
        if not math.isfinite(change):  # 1e308 against -1e308: the move keeps its sign
            change = math.copysign(sys.float_info.max, head_stats.value - base_stats.value)
    if abs(change) < judge.threshold:
        return _quick_move(Verdict.UNCHANGED, change)
    gain = change > 0 if better is Better.HIGHER else change < 0
    moved = Verdict.IMPROVED if gain else Verdict.REGRESSED
    beyond = not gain and abs(change) > judge.tolerance
    noise = judge.learned if judge.given else _noise_of(base, head, judge.learned)
    if noise is None:
        return _Move(Verdict.UNCERTAIN, change, "single run, noise unknown")
    base_units = noise_model.judging_units(base.samples, head.scale)
    head_units = noise_model.judging_units(head.samples, head.scale)
    if noise.exact or base_units is None or head_units is None:
        return _quick_move(moved, change, "", beyond, noise, 0.0)
    difference = _mean(head_units) - _mean(base_units)
    error = noise_model.standard_error(noise, len(base_units), len(head_units))
    reach = noise_model.critical(noise.df) * error
    band = _band_in_change_units(reach, head.scale)
    unit_band = None
    if noise.unit_sigma is not None and head.scale is Scale.RATIO:
        runs = math.sqrt(1 / len(base_units) + 1 / len(head_units))
        unit_band = noise_model.critical(noise.df) * noise.unit_sigma * runs

    def judged(verdict: Verdict, note: str = "", beyond_tolerance: bool = False) -> _Move:
        return _Move(verdict, change, note, beyond_tolerance, noise, band, unit_band)

    if abs(difference) <= reach and not _robustly_moved(base_units, head_units):
        return judged(Verdict.UNCHANGED, "within noise")
    if len(base_units) == len(head_units) == 1 and _tailed(noise, head.scale):
        # One run against one: nothing but the learned noise says whether the move is
        # real, and that noise has tails its spread understates.
        return judged(Verdict.UNCERTAIN, TAILED_NOTE)
    if not noise_model.ranks_agree(base_units, head_units):
        return judged(Verdict.UNCHANGED, "runs overlap")
    return judged(moved, "", beyond)


TAILED_NOTE = "single run of a metric with outlier runs"


def _tailed(noise: Noise, scale: Scale) -> bool:
    """Whether learned noise leaves a single run unjudgeable: its history had runs far
    outside its spread, or it counts events (retransmits, errors), which come in bursts
    (one loopback run in ten had twice the retransmits of 15 runs before it)."""
    if noise.source is not noise_model.Source.LEARNED:
        return False
    return noise.outliers > 0 or scale is Scale.COUNT


def _robustly_moved(base: list[float], head: list[float]) -> bool:
    """Whether the medians moved beyond the runs' median deviation: the test one outlier
    run cannot fool (it inflates the t test's spread and would hide the move)."""
    statistic = noise_model.robust_statistic(base, head)
    limit = noise_model.robust_critical(len(base), len(head))
    return statistic is not None and limit is not None and statistic > limit


def _noise_of(base: Series, head: Series, learned: Noise | None) -> Noise | None:
    """What is known of the metric's noise: learned and within-run pooled, else either,
    else zero for a deterministic tool, else nothing."""
    within = noise_model.within_run(base.samples, head.samples, head.scale)
    if learned is not None and within is not None:
        return noise_model.pooled(learned, within)
    if learned is not None or within is not None:
        return learned or within
    if base.deterministic and head.deterministic:
        return noise_model.DETERMINISTIC
    return None


def _ratio_change(base: float, head: float) -> float | None:
    """The change in percent, or None from zero (no percentage exists)."""
    if base == 0:
        return None
    change = (head - base) / abs(base) * 100.0
    if not math.isfinite(change):
        # Absurd but finite samples (1e308 against 1e-308) overflow; the move keeps its sign.
        change = math.copysign(sys.float_info.max, head - base)
    return change


def _from_zero(base: Stats, head: Stats, better: Better) -> _Move:
    if head.value == 0:
        return _Move(Verdict.UNCHANGED, 0.0)
    # A ratio metric leaving zero has no percentage; shown, never red on its own. (Loss
    # and counters are judged in points and counts instead, see Scale.)
    gain = head.value > 0 if better is Better.HIGHER else head.value < 0
    return _Move(Verdict.IMPROVED if gain else Verdict.REGRESSED, None, "from zero")


def _band_in_change_units(reach: float, scale: Scale) -> float:
    """The noise band's half-width as the change is shown: percent for ratio metrics
    (the log-difference turned back into a ratio), else points or counts as they are."""
    if scale is Scale.RATIO:
        return math.expm1(min(reach, 700.0)) * 100.0
    return reach


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)
