"""The verdict engine never raises on valid parsed input: any finite samples, any scale.

Found by review: a loss percentage or counter with huge finite values (a hostile perfbot
JSON baseline, or an artifact) overflowed in the noise model's sums of squares
(``(x - mean) ** 2`` and ``math.fsum`` raise OverflowError), so ``compare`` and the App's
``learned_noise`` raised instead of judging.
"""

from __future__ import annotations

import math
from typing import cast

from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.judge import noise, stats
from perfbot.engine.judge.compare import Verdict, compare
from perfbot.engine.read.sides import Series, SideReport
from perfbot.model import Better, Scale

FINITE = st.floats(allow_nan=False, allow_infinity=False)
SAMPLES = st.lists(FINITE, min_size=1, max_size=6)


def _side(samples: list[float], scale: Scale, deterministic: bool = False) -> SideReport:
    side = SideReport()
    side.series[("board", "metric")] = Series(
        "x", Better.HIGHER, list(samples), scale=scale, deterministic=deterministic
    )
    return side


def test_a_huge_loss_percentage_is_judged_not_raised() -> None:
    comparison = compare(_side([1e308, -1e308], Scale.POINTS), _side([1.0, 2.0], Scale.POINTS))
    (metric,) = comparison.platforms[0].metrics
    assert metric.verdict is not Verdict.FAILED


def test_learned_noise_of_huge_counters_is_none_not_raised() -> None:
    assert noise.learned([[1e200, -1e200], [1.0, 2.0]], Scale.COUNT, "e") is None
    assert noise.learned([[1e308, 1e308, -1e308]], Scale.COUNT, "e") is None


@settings(max_examples=300, deadline=None)
@given(
    base=SAMPLES,
    head=SAMPLES,
    scale=st.sampled_from(list(Scale)),
    deterministic=st.booleans(),
    groups=st.lists(st.lists(FINITE, max_size=5), max_size=4),
)
def test_compare_never_raises_on_finite_samples(
    base: list[float],
    head: list[float],
    scale: Scale,
    deterministic: bool,
    groups: list[list[float]],
) -> None:
    learned = noise.learned(groups, scale, "history")
    known = {("board", "metric"): learned} if learned is not None else None
    comparison = compare(
        _side(base, scale, deterministic), _side(head, scale, deterministic), noise=known
    )
    (metric,) = comparison.platforms[0].metrics
    assert metric.verdict in set(Verdict)
    if metric.band is not None:
        assert not math.isnan(metric.band)


class _Counted(float):
    """A float that counts how often it is compared."""

    comparisons = 0

    def __lt__(self, other: object) -> bool:
        _Counted.comparisons += 1
        return float(self) < float(cast(float, other))

    def __gt__(self, other: object) -> bool:
        _Counted.comparisons += 1
        return float(self) > float(cast(float, other))

    def __eq__(self, other: object) -> bool:
        _Counted.comparisons += 1
        return float(self) == float(cast(float, other))

    __hash__ = float.__hash__


def test_the_rank_test_is_not_quadratic_in_the_runs() -> None:
    # A hostile artifact may hold 10,000 runs per side of many metrics: pair by pair, the
    # U statistic took 10^8 comparisons per metric. Counted, not timed.
    n = 2000
    base = [_Counted(100.0 + (i * 7919 % n) / n) for i in range(n)]
    head = [_Counted(99.0 + (i * 104729 % n) / n) for i in range(n)]
    _Counted.comparisons = 0
    noise.ranks_agree(base, head)
    assert _Counted.comparisons < 100 * n


@settings(max_examples=300, deadline=None)
@given(
    first=st.lists(st.integers(-3, 3).map(float), max_size=8),
    second=st.lists(st.integers(-3, 3).map(float), max_size=8),
)
def test_u_counts_every_pair_a_tie_half(first: list[float], second: list[float]) -> None:
    pairs = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in first for b in second)
    assert stats.u_statistic(first, second) == pairs
