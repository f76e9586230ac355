"""Base against head: statistics and a verdict per platform and metric, no formatting."""

from __future__ import annotations

import enum
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

from perfbot.engine.sides import Series, SideReport
from perfbot.model import Better, FailedCase

Side = Literal["base", "head"]


class Verdict(enum.StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    FAILED = "failed"
    NOT_COMPARABLE = "not comparable"


MOVED = frozenset({Verdict.REGRESSED, Verdict.IMPROVED})


@dataclass(frozen=True, slots=True)
class MetricRule:
    """A per-metric override from the configuration; ``pattern`` is a glob on the name."""

    pattern: str
    better: Better | None = None
    threshold: float | None = None
    tolerance: float | None = None
    ignore: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    """How moves are judged: noise floor and tolerance in percent, plus overrides.

    Rules apply in order; a later matching rule overrides what an earlier one set.
    """

    threshold: float = 1.0
    tolerance: float = 5.0
    rules: tuple[MetricRule, ...] = ()

    def resolve(self, metric: str) -> tuple[Better | None, float, float, bool]:
        better, threshold, tolerance, ignore = None, self.threshold, self.tolerance, False
        for rule in self.rules:
            if fnmatchcase(metric, rule.pattern):
                better = rule.better if rule.better is not None else better
                threshold = rule.threshold if rule.threshold is not None else threshold
                tolerance = rule.tolerance if rule.tolerance is not None else tolerance
                ignore = ignore or rule.ignore
        return better, threshold, tolerance, ignore


@dataclass(frozen=True, slots=True)
class Stats:
    """Median and spread of one side's samples."""

    value: float
    low: float
    high: float
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: Iterable[float]) -> Stats:
        values = tuple(samples)
        return cls(_median(values), min(values), max(values), values)

    @property
    def n(self) -> int:
        return len(self.samples)


def _median(values: tuple[float, ...]) -> float:
    """The median, finite for any finite samples: ``statistics.median`` adds the two middle
    values first, which overflows to infinity for samples near the float limit."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    # Halving is exact for normal floats, so this equals (a + b) / 2 wherever that is finite.
    return ordered[middle - 1] / 2 + ordered[middle] / 2


@dataclass(frozen=True, slots=True)
class MetricResult:
    name: str
    unit: str
    better: Better
    base: Stats | None
    head: Stats | None
    change_pct: float | None
    verdict: Verdict
    beyond_tolerance: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class SideFailure:
    side: Side
    platform: str
    case: str
    reason: str


@dataclass(frozen=True, slots=True)
class PlatformResult:
    name: str
    metrics: tuple[MetricResult, ...]
    failures: tuple[SideFailure, ...]
    unavailable: str | None = None

    def count(self, verdict: Verdict) -> int:
        return sum(1 for metric in self.metrics if metric.verdict is verdict)

    @property
    def beyond_tolerance(self) -> int:
        return sum(1 for metric in self.metrics if metric.beyond_tolerance)

    @property
    def moved(self) -> bool:
        return any(metric.verdict in MOVED for metric in self.metrics)

    def severity(self) -> tuple[int, ...]:
        """Sort key, worst platform first."""
        return (
            -self.beyond_tolerance,
            -self.count(Verdict.REGRESSED),
            -len(self.failures) - self.count(Verdict.FAILED),
            -self.count(Verdict.MISSING),
            -self.count(Verdict.IMPROVED),
            0 if self.unavailable else 1,
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    platforms: tuple[PlatformResult, ...]
    policy: Policy = field(default_factory=Policy)

    @property
    def failures(self) -> tuple[SideFailure, ...]:
        return tuple(f for platform in self.platforms for f in platform.failures)

    def summary(self) -> dict[Verdict, int]:
        counts = dict.fromkeys(Verdict, 0)
        for platform in self.platforms:
            for metric in platform.metrics:
                counts[metric.verdict] += 1
        return counts

    @property
    def regressed_beyond_tolerance(self) -> int:
        return sum(platform.beyond_tolerance for platform in self.platforms)


def compare(base: SideReport, head: SideReport, policy: Policy | None = None) -> Comparison:
    """Compare two sides platform by platform; see ``Verdict`` for the outcomes."""
    policy = policy or Policy()
    names = base.platforms | head.platforms
    names |= {f.platform for f in base.failures} | {f.platform for f in head.failures}
    platforms = [_compare_platform(name, base, head, policy) for name in names]
    platforms.sort(key=lambda p: (p.severity(), p.name))
    return Comparison(tuple(platforms), policy)


def _compare_platform(
    name: str, base: SideReport, head: SideReport, policy: Policy
) -> PlatformResult:
    base_failures = [f for f in base.failures if f.platform == name]
    head_failures = [f for f in head.failures if f.platform == name]
    unavailable = None
    if name not in base.platforms:
        unavailable = "no base measurement"
    elif name not in head.platforms:
        unavailable = "no PR measurement"
    metrics = []
    keys = {m for p, m in base.series if p == name} | {m for p, m in head.series if p == name}
    for metric in sorted(keys):
        better, threshold, tolerance, ignore = policy.resolve(metric)
        if ignore:
            continue
        metrics.append(
            _compare_metric(
                metric,
                base.series.get((name, metric)),
                head.series.get((name, metric)),
                judge=_Judge(better, threshold, tolerance),
                base_failed=_covered(metric, base_failures),
                head_failed=_covered(metric, head_failures),
                unavailable=unavailable,
            )
        )
    failures = [SideFailure("base", name, f.case, f.reason) for f in base_failures]
    failures += [SideFailure("head", name, f.case, f.reason) for f in head_failures]
    return PlatformResult(name, tuple(metrics), tuple(failures), unavailable)


def _covered(metric: str, failures: list[FailedCase]) -> bool:
    return any(failure.covers(metric) for failure in failures)


@dataclass(frozen=True, slots=True)
class _Judge:
    better: Better | None
    threshold: float
    tolerance: float


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
            name, present.unit, better, base_stats, head_stats, None, verdict, note=note
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
        )
    base_stats, head_stats = Stats.of(base.samples), Stats.of(head.samples)
    verdict, change, note, beyond = _judge_move(base_stats, head_stats, better, judge)
    return MetricResult(
        name, head.unit, better, base_stats, head_stats, change, verdict, beyond, note
    )


def _judge_move(
    base: Stats, head: Stats, better: Better, judge: _Judge
) -> tuple[Verdict, float | None, str, bool]:
    """Verdict, change in percent, note and "beyond tolerance" of a metric on both sides."""
    if base.value == 0:
        if head.value == 0:
            return Verdict.UNCHANGED, 0.0, "", False
        # No percentage exists from zero; a counter that leaves zero (errors, drops) is
        # still a move worth showing, but not one that trips the tolerance on its own.
        gain = head.value > 0 if better is Better.HIGHER else head.value < 0
        return (Verdict.IMPROVED if gain else Verdict.REGRESSED), None, "from zero", False
    change = (head.value - base.value) / abs(base.value) * 100.0
    if not math.isfinite(change):
        # Absurd but finite samples (1e308 against 1e-308) overflow; the move keeps its sign.
        change = math.copysign(sys.float_info.max, head.value - base.value)
    if abs(change) < judge.threshold:
        return Verdict.UNCHANGED, change, "", False
    if base.n > 1 and head.n > 1 and base.low <= head.high and head.low <= base.high:
        return Verdict.UNCHANGED, change, "sample ranges overlap", False
    gain = change > 0 if better is Better.HIGHER else change < 0
    if gain:
        return Verdict.IMPROVED, change, "", False
    return Verdict.REGRESSED, change, "", abs(change) > judge.tolerance
