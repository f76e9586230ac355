"""perfbot's own statistics (``perfbot.engine.judge.stats``) against scipy's, the field's
reference: the same t quantiles, incomplete beta values and Mann-Whitney p-values."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import special
from scipy import stats as reference

from perfbot.engine.judge import stats

ALPHAS = (0.001, 0.002, 0.01, 0.05, 0.2)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 19, 30, 60, 120, 1000])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_t_quantiles_are_scipys(df: int, alpha: float) -> None:
    expected = reference.t.ppf(1 - alpha / 2, df)
    assert stats.t_quantile(df, alpha) == pytest.approx(expected, rel=1e-9)


def test_no_degrees_of_freedom_is_no_quantile() -> None:
    assert stats.t_quantile(0, 0.01) == math.inf


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5, 15.0, 500.0])
@pytest.mark.parametrize("b", [0.5, 1.0, 3.0, 40.0])
@pytest.mark.parametrize("x", [1e-6, 0.01, 0.3, 0.5, 0.77, 0.999])
def test_the_incomplete_beta_function_is_scipys(a: float, b: float, x: float) -> None:
    assert stats.incomplete_beta(a, b, x) == pytest.approx(special.betainc(a, b, x), abs=1e-12)


@pytest.mark.parametrize(("n", "m"), [(2, 2), (3, 3), (3, 5), (4, 4), (5, 8), (8, 8), (12, 9)])
def test_exact_mann_whitney_p_values_are_scipys(n: int, m: int) -> None:
    rng = random.Random(n * 100 + m)
    for _ in range(25):
        shift = rng.choice((0.0, 0.5, 2.0))
        base = [rng.gauss(0, 1) for _ in range(n)]
        head = [rng.gauss(shift, 1) for _ in range(m)]
        expected = reference.mannwhitneyu(base, head, alternative="two-sided", method="exact")
        assert stats.mann_whitney_p(base, head) == pytest.approx(expected.pvalue, rel=1e-9)


def test_large_samples_use_the_normal_approximation_as_scipy_does() -> None:
    rng = random.Random(7)
    base = [rng.gauss(0, 1) for _ in range(40)]
    head = [rng.gauss(0.4, 1) for _ in range(30)]
    expected = reference.mannwhitneyu(
        base, head, alternative="two-sided", method="asymptotic", use_continuity=True
    )
    assert stats.mann_whitney_p(base, head) == pytest.approx(expected.pvalue, rel=1e-6)


def test_the_smallest_p_value_is_complete_separation() -> None:
    for n, m in itertools.product(range(1, 7), repeat=2):
        separated = reference.mannwhitneyu(
            list(range(n)), list(range(n, n + m)), alternative="two-sided", method="exact"
        )
        assert stats.smallest_p(n, m) == pytest.approx(min(separated.pvalue, 1.0))


def test_the_median_stays_finite_where_a_sum_would_not() -> None:
    assert stats.median([1.7e308, 1.7e308]) == 1.7e308
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 2.0, 3.0]) == 2.5
