"""The noise model: its statistics, and the verdicts it leads to (issue 13)."""

from __future__ import annotations

import math
import random

import pytest

from perfbot.engine.judge import noise, stats
from perfbot.engine.judge.compare import MOVED, MetricResult, Policy, Verdict, compare
from perfbot.engine.judge.noise import Noise, Source
from perfbot.engine.read.sides import SideReport
from perfbot.model import Better, Measurement, Scale, settings_of
from tests.builders import side

PLATFORM = "qemu_x86/atom"


def only(base: SideReport, head: SideReport, **kwargs: object) -> MetricResult:
    (platform,) = compare(base, head, **kwargs).platforms  # type: ignore[arg-type]
    (metric,) = platform.metrics
    return metric


def stochastic(values: dict[str, float | list[float]], **kwargs: object) -> SideReport:
    return side(values, deterministic=False, **kwargs)  # type: ignore[arg-type]


# The statistics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "alpha", "expected"),
    [
        # Student's t quantiles as printed in every table.
        (1, 0.05, 12.706),
        (2, 0.05, 4.303),
        (4, 0.01, 4.604),
        (10, 0.002, 4.144),
        (30, 0.01, 2.750),
        (10**7, 0.05, 1.960),
    ],
)
def test_critical_values_are_students_t(df: int, alpha: float, expected: float) -> None:
    assert noise.critical(df, alpha) == pytest.approx(expected, abs=2e-3)


def test_no_degrees_of_freedom_means_no_move_can_be_told() -> None:
    assert noise.critical(0) == math.inf


@pytest.mark.parametrize(
    ("base", "head", "p"),
    [
        ([1, 2, 3], [4, 5, 6], 0.1),  # complete separation at 3 v 3: 2 of 20 orderings
        ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 2 / 252),
        ([1, 2, 4], [3, 5, 6], 0.2),  # U = 1: as extreme as 0, 1, 8 or 9 → 4 of 20
    ],
)
def test_mann_whitney_exact_p_values(base: list[float], head: list[float], p: float) -> None:
    assert stats.mann_whitney_p(base, head) == pytest.approx(p)


def test_ranks_must_agree_at_three_runs_but_not_fewer() -> None:
    assert noise.ranks_agree([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert not noise.ranks_agree([1.0, 2.0, 4.0], [3.0, 5.0, 6.0])
    assert noise.ranks_agree([1.0, 2.0], [1.5, 2.5])  # too few for ranks to say anything


def test_within_run_noise_is_the_pooled_deviation_in_logs() -> None:
    estimate = noise.within_run([100.0, 110.0], [200.0, 220.0], Scale.RATIO)
    assert estimate is not None
    # Both sides are 10 % apart: the same spread in logs, one degree of freedom each.
    assert estimate.sigma == pytest.approx(math.log(1.1) / math.sqrt(2))
    assert estimate.df == 2
    assert estimate.evidence == "2 runs per side"
    assert noise.within_run([1.0], [2.0], Scale.RATIO) is None


def test_counters_and_points_are_judged_in_their_own_units() -> None:
    estimate = noise.within_run([0.0, 2.0], [4.0, 6.0], Scale.COUNT)
    assert estimate is not None
    assert estimate.sigma == pytest.approx(math.sqrt(2))


def test_learned_noise_drops_an_accident_of_one_run() -> None:
    rng = random.Random(5)
    groups = [[1000 * (1 + rng.gauss(0, 0.01)) for _ in range(4)] for _ in range(5)]
    clean = noise.learned(groups, Scale.RATIO, "20 measurements")
    groups[2][1] = 400.0  # a runner hiccup
    with_accident = noise.learned(groups, Scale.RATIO, "20 measurements")
    assert clean is not None
    assert with_accident is not None
    assert with_accident.sigma == pytest.approx(clean.sigma, rel=0.35)
    assert with_accident.df == clean.df - 1
    assert with_accident.source is Source.LEARNED


def test_too_few_same_commit_measurements_teach_nothing() -> None:
    assert noise.learned([[1.0, 1.1]], Scale.RATIO, "2 measurements") is None
    assert noise.learned([[1.0], [2.0], [3.0]], Scale.RATIO, "3 commits") is None


def test_robust_statistic_ignores_one_outlier() -> None:
    base = [math.log(v) for v in (97.97, 99.90, 99.89)]
    head = [math.log(v) for v in (94.56, 94.91, 94.90)]
    statistic = noise.robust_statistic(base, head)
    limit = noise.robust_critical(3, 3)
    assert statistic is not None
    assert limit is not None
    assert statistic > limit
    assert noise.robust_statistic([1.0], [2.0]) is None
    assert noise.robust_statistic([1.0, 1.0], [2.0, 2.0]) == math.inf


def test_the_robust_table_holds_its_false_alarm_rate() -> None:
    # Re-simulate one cell of the generated table: under pure noise the statistic passes
    # its critical value about ROBUST_ALPHA of the time (0.1 %), never ten times as often.
    rng = random.Random(7)
    limit = noise.robust_critical(3, 3)
    assert limit is not None
    trials = 20_000
    alarms = 0
    for _ in range(trials):
        base = [rng.gauss(0, 1) for _ in range(3)]
        head = [rng.gauss(0, 1) for _ in range(3)]
        statistic = noise.robust_statistic(base, head)
        alarms += statistic is not None and statistic > limit
    assert alarms / trials < 10 * noise.ROBUST_ALPHA


# The verdicts --------------------------------------------------------------------------------


def test_a_single_run_of_a_stochastic_tool_is_never_a_regression() -> None:
    metric = only(
        stochastic({"tcp.receiver_mbps": 1000.0}), stochastic({"tcp.receiver_mbps": 800.0})
    )
    assert metric.verdict is Verdict.UNCERTAIN
    assert metric.verdict not in MOVED
    assert not metric.beyond_tolerance
    assert metric.note == "single run, noise unknown"
    assert metric.change_pct == pytest.approx(-20.0)


def test_a_deterministic_tool_keeps_the_plain_floor() -> None:
    # zperf under icount: one run per side, a 1.5 % drop is real.
    metric = only(side({"tcp_upload": 100.0}), side({"tcp_upload": 98.5}))
    assert metric.verdict is Verdict.REGRESSED
    assert metric.noise is not None
    assert metric.noise.source is Source.DETERMINISTIC


def test_an_outlier_run_does_not_hide_a_real_drop() -> None:
    base = stochastic({"udp.receiver_mbps": [97.97, 99.90, 99.89]})
    head = stochastic({"udp.receiver_mbps": [94.56, 94.91, 94.90]})
    metric = only(base, head)
    assert metric.verdict is Verdict.REGRESSED
    assert metric.beyond_tolerance is False  # −5.0 % is at, not beyond, the 5 % tolerance


def test_noisy_repeats_are_within_noise() -> None:
    base = stochastic({"tcp.receiver_mbps": [1000.0, 1300.0, 900.0]})
    head = stochastic({"tcp.receiver_mbps": [1100.0, 850.0, 1250.0]})
    metric = only(base, head)
    assert metric.verdict is Verdict.UNCHANGED
    assert metric.note == "within noise"
    assert metric.band is not None
    assert metric.band > 10


def test_learned_noise_calls_the_stable_metric_and_spares_the_noisy_one() -> None:
    # The same 4 % drop on two metrics, one run each: the one whose same-commit history
    # scatters by 0.1 % regressed; the one scattering by 5 % did not.
    base = stochastic({"stable": 1000.0, "noisy": 1000.0})
    head = stochastic({"stable": 960.0, "noisy": 960.0})
    known = {
        (PLATFORM, "stable"): Noise(0.001, 20, Source.LEARNED, "21 measurements of main@abc1234"),
        (PLATFORM, "noisy"): Noise(0.05, 20, Source.LEARNED, "21 measurements of main@abc1234"),
    }
    (platform,) = compare(base, head, noise=known).platforms
    verdicts = {m.name: m for m in platform.metrics}
    assert verdicts["stable"].verdict is Verdict.REGRESSED
    assert verdicts["noisy"].verdict is Verdict.UNCHANGED
    assert verdicts["noisy"].noise is not None
    assert verdicts["noisy"].noise.evidence == "21 measurements of main@abc1234"


def test_loss_from_zero_is_judged_in_points() -> None:
    base = stochastic(
        {"udp.lost_percent": [0.0, 0.0, 0.0]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    head = stochastic(
        {"udp.lost_percent": [5.7, 5.5, 6.0]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    metric = only(base, head)
    assert metric.verdict is Verdict.REGRESSED
    assert metric.beyond_tolerance
    assert metric.change_pct == pytest.approx(5.7)  # points, never "from zero" nor a ratio
    assert metric.note != "from zero"


def test_a_small_loss_rise_is_within_the_points_tolerance() -> None:
    policy = Policy()
    base = stochastic(
        {"udp.lost_percent": [0.0, 0.0, 0.0]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    head = stochastic(
        {"udp.lost_percent": [0.5, 0.5, 0.5]}, scale=Scale.POINTS, unit="%", better=Better.LOWER
    )
    metric = only(base, head, policy=policy)
    assert metric.verdict is Verdict.REGRESSED
    assert not metric.beyond_tolerance  # 0.5 pp < the 1 pp default


def _with_settings(value: float, **settings: object) -> SideReport:
    report = SideReport()
    report.add(
        Measurement(
            PLATFORM,
            "tcp.receiver_mbps",
            value,
            "Mbps",
            Better.HIGHER,
            settings=settings_of(**settings),
        )
    )
    return report


def test_runs_with_different_settings_are_not_comparable() -> None:
    metric = only(
        _with_settings(1000.0, streams=1, duration=2), _with_settings(3000.0, streams=4, duration=3)
    )
    assert metric.verdict is Verdict.NOT_COMPARABLE
    assert metric.note == "run settings differ: duration 2 vs 3, streams 1 vs 4"
    same = only(_with_settings(1000.0, streams=1), _with_settings(1000.0, streams=1))
    assert same.verdict is Verdict.UNCHANGED


def test_a_series_refuses_a_sample_run_with_other_settings() -> None:
    report = _with_settings(1000.0, streams=1)
    taken = report.add(
        Measurement(
            PLATFORM,
            "tcp.receiver_mbps",
            3000.0,
            "Mbps",
            Better.HIGHER,
            settings=settings_of(streams=4),
        )
    )
    assert not taken
    assert report.series[(PLATFORM, "tcp.receiver_mbps")].samples == [1000.0]
    # Which files were left out is read_side's to say, once per case (test_runs_left_out).
    assert report.failures == []


def test_a_setting_only_one_side_states_is_no_difference() -> None:
    # iperf3's text output states fewer settings than its JSON: only shared ones count.
    metric = only(
        _with_settings(1000.0, streams=1, duration=2, blksize=131072),
        _with_settings(1000.0, streams=1),
    )
    assert metric.verdict is Verdict.UNCHANGED


def test_a_metric_jumping_between_two_levels_is_no_move_at_three_runs() -> None:
    # iperf3's UDP jitter on loopback (A/A, /work/signal-corpus-3 aa_3int/03): 5 µs or 60 µs.
    base = stochastic({"udp.jitter_ms": [0.00532, 0.004352, 0.005496]}, better=Better.LOWER)
    head = stochastic({"udp.jitter_ms": [0.06148, 0.05656, 0.006204]}, better=Better.LOWER)
    metric = only(base, head)
    assert metric.verdict is Verdict.UNCHANGED
    assert not metric.beyond_tolerance


def test_a_side_the_tool_rounded_to_one_value_is_not_zero_noise() -> None:
    statistic = noise.robust_statistic([5.0, 5.0, 5.0], [5.0, 9.0, 1.0])
    assert statistic is not None
    assert statistic < 1  # judged by the scattering side's own deviations


def test_one_run_each_with_a_history_of_outliers_is_uncertain() -> None:
    tailed = Noise(0.0001, 14, Source.LEARNED, "15 measurements of main@abc1234", outliers=1)
    base, head = stochastic({"udp.receiver_mbps": 99.9}), stochastic({"udp.receiver_mbps": 82.0})
    metric = only(base, head, noise={(PLATFORM, "udp.receiver_mbps"): tailed})
    assert metric.verdict is Verdict.UNCERTAIN
    assert metric.note == "single run of a metric with outlier runs"
    quiet = Noise(0.0001, 14, Source.LEARNED, "15 measurements of main@abc1234")
    called = only(base, head, noise={(PLATFORM, "udp.receiver_mbps"): quiet})
    assert called.verdict is Verdict.REGRESSED


def test_one_run_each_of_a_counter_is_uncertain_even_with_history() -> None:
    learned = Noise(4.6, 14, Source.LEARNED, "15 measurements of main@abc1234")
    base = stochastic({"tcp.retransmits": 2.0}, scale=Scale.COUNT, unit="", better=Better.LOWER)
    head = stochastic({"tcp.retransmits": 31.0}, scale=Scale.COUNT, unit="", better=Better.LOWER)
    metric = only(base, head, noise={(PLATFORM, "tcp.retransmits"): learned})
    assert metric.verdict is Verdict.UNCERTAIN


def test_learned_noise_counts_the_samples_it_left_out() -> None:
    groups = [[100.0, 100.1, 99.9, 100.05, 99.95, 60.0]]
    estimate = noise.learned(groups, Scale.RATIO, "6 measurements")
    assert estimate is not None
    assert estimate.outliers == 1
