"""The statistics perfbot's verdicts rest on, written once: Student's t quantiles (by the
regularised incomplete beta function), the exact Mann–Whitney U test, the pooled sum of
squares, the median, and the robust test's simulated critical values.

Why not ``scipy.stats``, the field's library: importing it takes about 0.9 s (perfbot
compare must start fast) and ``mannwhitneyu`` about 1 ms a call, 20 s for a report of
20,000 metrics; here a U test of small samples is a table look-up and a t quantile is
cached per degrees of freedom (``bench/stats_choice.py`` prints both side by side).
``tests/test_stats.py`` checks these answers against scipy's on a grid.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from functools import cache

from perfbot.engine.judge._robust_table import CRITICAL


@cache
def t_quantile(df: int, alpha: float) -> float:
    """Student's t at 1 − alpha/2 with ``df`` degrees of freedom: how many standard errors a
    two-sided move must reach at false-alarm rate ``alpha`` (∞ without degrees of freedom)."""
    if df <= 0:
        return math.inf
    target = 1 - alpha / 2
    low, high = 0.0, 1.0
    while t_cdf(high, df) < target:
        high *= 2
    for _ in range(200):  # bisection to float precision
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if t_cdf(middle, df) < target:
            low = middle
        else:
            high = middle
    return high


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom, t ≥ 0."""
    x = df / (df + t * t)
    return 1 - 0.5 * incomplete_beta(df / 2, 0.5, x)


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction
    (evaluated with the modified Lentz method), on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - incomplete_beta(b, a, 1 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a) - _log_beta(a, b)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return math.exp(log_front) * fraction


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def pooled_squares(groups: Iterable[Sequence[float]]) -> tuple[float, int]:
    """The summed squared deviations of each group of 2+ values from its own mean, and
    their degrees of freedom: the pieces of a pooled standard deviation."""
    squares, df = 0.0, 0
    for group in groups:
        if len(group) >= 2:
            mean = math.fsum(group) / len(group)
            squares += math.fsum((x - mean) ** 2 for x in group)
            df += len(group) - 1
    return squares, df


def mann_whitney_p(base: Sequence[float], head: Sequence[float]) -> float:
    """The two-sided p-value of U (a tie counts half) from U's exact distribution without
    ties, which is what small samples of real numbers have; normal beyond 25 runs."""
    n, m = len(base), len(head)
    observed = u_statistic(base, head)
    mean = n * m / 2
    extreme = abs(observed - mean)
    if n > 25 or m > 25:
        spread = math.sqrt(n * m * (n + m + 1) / 12)
        return math.erfc(max(extreme - 0.5, 0.0) / spread / math.sqrt(2))
    counts = _u_counts(n, m)
    total = math.comb(n + m, n)
    hits = sum(c for u, c in enumerate(counts) if abs(u - mean) >= extreme - 1e-9)
    return hits / total


@cache
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many orderings of n and m distinct values give each U from 0 to n·m."""
    if n == 0 or m == 0:
        return (1,)
    # The largest value belongs to the first sample (U gains m) or to the second.
    with_first = _u_counts(n - 1, m)
    with_second = _u_counts(n, m - 1)
    counts = [0] * (n * m + 1)
    for u, c in enumerate(with_first):
        counts[u + m] += c
    for u, c in enumerate(with_second):
        counts[u] += c
    return tuple(counts)


def u_statistic(first: Sequence[float], second: Sequence[float]) -> float:
    """How many (a, b) pairs have a > b, a tie counting half: by bisection in the sorted
    second sample, O((n + m) log m). Pair by pair it was O(n·m), and an artifact may hold
    ten thousand runs per side (seconds per metric, hours for a report of such series)."""
    ordered = sorted(second)
    total = 0.0
    for a in first:
        below = bisect.bisect_left(ordered, a)
        total += below + (bisect.bisect_right(ordered, a, lo=below) - below) / 2
    return total


@cache
def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value U can reach for samples of n and m values: complete
    separation, either way, is 2 of the C(n + m, n) orderings."""
    return 2 / math.comb(n + m, n)


def robust_critical(base_runs: int, head_runs: int) -> float | None:
    """The robust statistic's critical value for these sizes (``ROBUST_ALPHA`` of the noise
    model, simulated by scripts/robust_table.py), or None beyond the table."""
    return CRITICAL.get((min(base_runs, head_runs), max(base_runs, head_runs)))


def median(values: Iterable[float]) -> float:
    """The median, finite for any finite samples: ``statistics.median`` adds the two middle
    values first, which overflows to infinity for samples near the float limit."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    # Halving is exact for normal floats, so this equals (a + b) / 2 wherever that is finite.
    return ordered[middle - 1] / 2 + ordered[middle] / 2
