"""How moves are judged: the noise floor and the tolerance, and the per-metric rules of the
configuration (``metrics:`` in ``.github/perfbot.yml``) that override them."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from perfbot.model import Better, Scale


@dataclass(frozen=True, slots=True)
class MetricRule:
    """A per-metric override from the configuration; ``pattern`` is a glob on the name.

    ``report_only``: the metric is measured, shown, recorded and learned from, but never
    red, never beyond tolerance, never confirmed and never fails the check (a flaky
    metric in quarantine). None leaves what an earlier rule said.
    """

    pattern: str
    better: Better | None = None
    threshold: float | None = None
    tolerance: float | None = None
    ignore: bool = False
    report_only: bool | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    """What the rules say of one metric, in its scale's units."""

    better: Better | None
    threshold: float
    tolerance: float
    ignore: bool
    report_only: bool


@dataclass(frozen=True, slots=True)
class Policy:
    """How moves are judged: noise floor and tolerance in percent, plus overrides.

    Rules apply in order; a later matching rule overrides what an earlier one set.
    """

    threshold: float = 1.0
    tolerance: float = 5.0
    rules: tuple[MetricRule, ...] = ()
    # Loss percentages, in percentage points: below the floor nothing moved; a rise
    # beyond the tolerance (0 → 5.7 % loss) is red.
    points_threshold: float = 0.1
    points_tolerance: float = 1.0
    # Counters (retransmits, errors, lost packets), in counts.
    count_threshold: float = 1.0
    count_tolerance: float = 10.0

    def resolve(
        self, metric: str, scale: Scale = Scale.RATIO
    ) -> tuple[Better | None, float, float, bool]:
        """Direction, floor, tolerance and ignore for ``metric``, in its scale's units."""
        rule = self.rule(metric, scale)
        return rule.better, rule.threshold, rule.tolerance, rule.ignore

    def _defaults(self, scale: Scale) -> Resolved:
        if scale is Scale.POINTS:
            return Resolved(None, self.points_threshold, self.points_tolerance, False, False)
        if scale is Scale.COUNT:
            return Resolved(None, self.count_threshold, self.count_tolerance, False, False)
        return Resolved(None, self.threshold, self.tolerance, False, False)

    def rule(self, metric: str, scale: Scale = Scale.RATIO) -> Resolved:
        """Everything the policy says of ``metric``.

        A rule's threshold and tolerance are in the metric's units: percent for ratio
        metrics, points for percentages, counts for counters.
        """
        if not self.rules:  # no overrides, the usual case: the scale's defaults
            return self._defaults(scale)
        threshold, tolerance = self.threshold, self.tolerance
        if scale is Scale.POINTS:
            threshold, tolerance = self.points_threshold, self.points_tolerance
        elif scale is Scale.COUNT:
            threshold, tolerance = self.count_threshold, self.count_tolerance
        better, ignore, report_only = None, False, False
        for rule in self.rules:
            if fnmatchcase(metric, rule.pattern):
                better = rule.better if rule.better is not None else better
                threshold = rule.threshold if rule.threshold is not None else threshold
                tolerance = rule.tolerance if rule.tolerance is not None else tolerance
                ignore = ignore or rule.ignore
                report_only = rule.report_only if rule.report_only is not None else report_only
        return Resolved(better, threshold, tolerance, ignore, report_only)
