"""How much a metric scatters when nothing changed, and whether a move stands out of it.

A metric is judged in its own units: the logarithm of its value for ratio metrics
(throughput, latency: ±x % is symmetric in logs), percentage points for loss
percentages, counts for counters. Its *noise* is the standard deviation of one run in
those units. It comes from, best first:

* **learned**: measurements of the *same commit* seen before (the base side of many
  PRs against one target commit, re-runs, push runs of that commit). Nothing changed
  between them, so their scatter is pure noise; across different commits, real
  changes and noise would be mixed;
* **within the run**: the repeats of each side (n ≥ 2), pooled;
* **the format's prior**: a deterministic tool (zperf or twister under QEMU icount)
  repeats its numbers exactly, so its noise is zero and only the plain floor applies.

A stochastic metric with none of these (one run per side, never seen before) has no
known noise: its change is shown, never called a regression.

Two tests share the false-alarm rate ``ALPHA`` per metric, half each, and a move
passes either: Student's t on the difference of the sides' means against the noise's
standard error for nb and nh runs (efficient, but one outlier run inflates its spread
and hides a real drop), and a robust one on the difference of the medians against the
median deviation of the runs (``robust_statistic``; one outlier moves neither). With
three or more runs on each side the ranks must agree too (a Mann–Whitney U test at its
strictest attainable level): one outlier run cannot make a move alone either.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfbot.engine.judge import stats
from perfbot.engine.judge.stats import median as _median
from perfbot.model import Scale

# Two-sided false-alarm rate per metric. A report holds tens of metrics: at 1 % each,
# every other A/A report would cry wolf; at 0.2 % one in ten does (before the floor
# and the rank test, which cut it further). Measured by bench/signal.py.
ALPHA = 0.002
# A learned sample this far from its commit's median, in robust standard deviations, is
# an accident of that run (a runner hiccup), not noise to learn.
OUTLIER_SIGMAS = 5.0
# More outliers than this share of the samples are no accidents: the metric has tails.
OUTLIER_SHARE = 0.05
# Fewer same-commit repeats than this teach nothing reliable yet.
MIN_LEARNED_DF = 3
# Points and counters beyond this size are absurd (no loss percentage or counter is), and
# their squares would overflow the noise's sums (OverflowError): such a series is judged
# by the floor alone, as a ratio metric with a value <= 0 is.
MAX_ABSOLUTE_UNITS = 1e100
# Each of the two tests gets half of ALPHA; the robust one has critical values for up to
# this many runs per side (scripts/robust_table.py), and beyond it the t test decides.
ROBUST_ALPHA = ALPHA / 2
ROBUST_MAX_RUNS = 8
ROBUST_SPREAD_FLOOR = 1 / 4


class Source(enum.StrEnum):
    LEARNED = "learned"
    WITHIN_RUN = "within the run"
    DETERMINISTIC = "deterministic"


@dataclass(frozen=True, slots=True)
class Noise:
    """One run's standard deviation in the metric's judging units, and its evidence.

    ``df`` is the degrees of freedom of the estimate (how much to trust it);
    ``evidence`` says where it came from in words, e.g. "8 measurements of main@abc1234".
    """

    sigma: float
    df: int
    source: Source
    evidence: str
    # Learned samples left out as accidents of their run: a history with outliers has
    # tails a standard deviation understates, so a single run is no evidence alone.
    outliers: int = 0
    # The same runs' standard deviation in the metric's own unit (ms, Mbps), for a ratio
    # metric whose band in percent is too wide to read (a side near zero); None unknown.
    # Points and counters are judged in their own units already: it is ``sigma``.
    unit_sigma: float | None = None

    @property
    def exact(self) -> bool:
        return self.sigma == 0.0


DETERMINISTIC = Noise(
    0.0, 0, Source.DETERMINISTIC, "deterministic (the same code gives the same numbers)", 0, 0.0
)


def judging_units(values: Iterable[float], scale: Scale) -> list[float] | None:
    """Values in the units noise is measured in; None when a ratio metric has a value ≤ 0
    (no logarithm), or points or counts are absurdly large (``MAX_ABSOLUTE_UNITS``): such
    a metric is judged by the floor alone."""
    values = list(values)
    if scale is not Scale.RATIO:
        if any(abs(value) > MAX_ABSOLUTE_UNITS for value in values):
            return None
        return values
    if any(value <= 0 for value in values):
        return None
    return [math.log(value) for value in values]


def learned(groups: Sequence[Sequence[float]], scale: Scale, evidence: str) -> Noise | None:
    """Noise from repeated measurements of the same commit: ``groups`` holds, per commit,
    the samples of every run of it (in the metric's own units).

    A pooled standard deviation around each commit's mean, after dropping samples that
    sit absurdly far from their commit's median (``OUTLIER_SIGMAS`` robust deviations) —
    unless they are too many to be accidents (``OUTLIER_SHARE``): then the metric is
    heavy-tailed, and its tails are its noise.
    """
    units = [judging_units(group, scale) for group in groups]
    usable = [group for group in units if group is not None and len(group) >= 2]
    if not usable:
        return None
    robust = _robust_sigma(usable)
    kept_groups = usable
    outliers = 0
    if robust > 0:
        kept_groups = [
            [x for x in group if abs(x - _median(group)) <= OUTLIER_SIGMAS * robust]
            for group in usable
        ]
        outliers = sum(len(a) - len(b) for a, b in zip(usable, kept_groups, strict=True))
        if outliers > OUTLIER_SHARE * sum(len(group) for group in usable):
            kept_groups = usable
    squares, df = stats.pooled_squares(kept_groups)
    if df < MIN_LEARNED_DF:
        return None
    unit_sigma = _unit_sigma([_own_units(group, scale) for group in kept_groups])
    return Noise(math.sqrt(squares / df), df, Source.LEARNED, evidence, outliers, unit_sigma)


def within_run(base: Sequence[float], head: Sequence[float], scale: Scale) -> Noise | None:
    """Noise from the repeats of each side, pooled; None with no repeat on either side."""
    sides = [judging_units(side, scale) for side in (base, head)]
    usable = [units for units in sides if units is not None]
    squares, df = stats.pooled_squares(usable)
    if df == 0:
        return None
    runs = f"{len(base)} base and {len(head)} PR runs"
    if len(base) == len(head):
        runs = f"{len(base)} runs per side"
    unit_sigma = _unit_sigma([_own_units(units, scale) for units in usable])
    return Noise(math.sqrt(squares / df), df, Source.WITHIN_RUN, runs, 0, unit_sigma)


def pooled(first: Noise, second: Noise) -> Noise:
    """Two estimates of one metric's noise as one, weighted by their degrees of freedom."""
    df = first.df + second.df
    variance = (first.df * first.sigma**2 + second.df * second.sigma**2) / df
    unit_sigma = None
    if first.unit_sigma is not None and second.unit_sigma is not None:
        unit_variance = first.df * first.unit_sigma**2 + second.df * second.unit_sigma**2
        unit_sigma = math.sqrt(unit_variance / df)
    return Noise(
        math.sqrt(variance),
        df,
        first.source,
        f"{first.evidence} and {second.evidence}",
        first.outliers + second.outliers,
        unit_sigma if unit_sigma is None or math.isfinite(unit_sigma) else None,
    )


def _own_units(units: Sequence[float], scale: Scale) -> list[float]:
    """Judging units back in the metric's own unit (a ratio metric is judged in logs)."""
    return [math.exp(x) for x in units] if scale is Scale.RATIO else list(units)


def _unit_sigma(groups: Sequence[Sequence[float]]) -> float | None:
    """The pooled standard deviation of ``groups`` in the metric's own unit; None when it
    has no degrees of freedom or overflows (absurd samples)."""
    try:
        squares, df = stats.pooled_squares(groups)
    except OverflowError:  # samples near the float limit: their squares do not exist
        return None
    if df == 0 or not math.isfinite(squares):
        return None
    return math.sqrt(squares / df)


def robust_statistic(base: Sequence[float], head: Sequence[float]) -> float | None:
    """|median(head) − median(base)| over the median absolute deviation of the runs from
    their side's median (each odd side's median run left out: its deviation is zero by
    construction). None with no repeat on either side; ∞ for a move between sides that
    repeat exactly.

    A side whose runs are all equal while the other's scatter tells of the tool's
    rounding, not of zero noise: its deviations are left out, or the other side's
    scatter would look like a move. And the deviation is never taken below a quarter of
    the runs' pooled standard deviation (``ROBUST_SPREAD_FLOOR``): it discounts one
    outlier run, but a metric that jumps between two levels (iperf3's UDP jitter on
    loopback: 5 µs or 60 µs) has no typical deviation for three runs to show. Both only
    lower the statistic, so its false-alarm rate stays within the table's (measured by
    bench/signal_noise.py: 1/4 kept every A/A comparison of /work/signal-corpus-3 at
    exit 0 with history, and lost no 5 % drop).
    """
    constant = [len(side) >= 2 and min(side) == max(side) for side in (base, head)]
    deviations: list[float] = []
    for side, tied in zip((base, head), constant, strict=True):
        if len(side) < 2 or (tied and not all(constant)):
            continue
        ordered = sorted(side)
        middle = _median(ordered)
        off_centre = [abs(x - middle) for x in ordered]
        if len(ordered) % 2:
            del off_centre[len(ordered) // 2]
        deviations.extend(off_centre)
    if not deviations:
        return None
    difference = abs(_median(head) - _median(base))
    spread = _median(deviations)
    squares, df = stats.pooled_squares((base, head))
    if df and math.isfinite(squares):
        spread = max(spread, ROBUST_SPREAD_FLOOR * math.sqrt(squares / df))
    if spread == 0:
        return math.inf if difference > 0 else 0.0
    return difference / spread


def critical(df: int, alpha: float = ALPHA / 2) -> float:
    """How many standard errors a move must reach: Student's t at 1 − alpha/2 (by
    default the t test's half of ``ALPHA``)."""
    return stats.t_quantile(df, alpha)


def robust_critical(base_runs: int, head_runs: int) -> float | None:
    """The robust statistic's critical value for these sizes, or None beyond the table."""
    return stats.robust_critical(base_runs, head_runs)


def standard_error(noise: Noise, base_runs: int, head_runs: int) -> float:
    """The standard error of the difference of the two sides' means."""
    return noise.sigma * math.sqrt(1 / base_runs + 1 / head_runs)


def ranks_agree(base: Sequence[float], head: Sequence[float]) -> bool:
    """With three or more runs per side: whether a two-sided Mann–Whitney U test rejects
    "no difference" at max(ALPHA·5, the smallest p-value these sizes allow). At 3 against
    3 or 4 against 4 that means every PR run lies beyond every base run.

    Fewer runs: True (the rank test can say nothing; the t test decides alone).
    """
    if len(base) < 3 or len(head) < 3:
        return True
    level = max(ALPHA * 5, stats.smallest_p(len(base), len(head)))
    return stats.mann_whitney_p(base, head) <= level + 1e-12


def _robust_sigma(groups: Sequence[Sequence[float]]) -> float:
    """1.4826 × the median absolute deviation from each group's median, each deviation
    scaled by sqrt(m/(m-1)) so that small groups are not mistaken for quiet ones. The
    median, not the mean: an accident of one run would drag a mean toward itself and
    hide behind the deviation it inflated."""
    deviations: list[float] = []
    for group in groups:
        middle = _median(group)
        scale = math.sqrt(len(group) / (len(group) - 1))
        deviations.extend(abs(x - middle) * scale for x in group)
    return 1.4826 * _median(deviations)
