"""The verdict engine never raises on valid parsed input: any finite samples, any scale.

Found by review: a loss percentage or counter with huge finite values (a hostile perfbot
JSON baseline, or an artifact) overflowed in the noise model's sums of squares
(``(x - mean) ** 2`` and ``math.fsum`` raise OverflowError), so ``compare`` and the App's
``learned_noise`` raised instead of judging.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine import noise
from perfbot.engine.compare import Verdict, compare
from perfbot.engine.sides import Series, SideReport
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
