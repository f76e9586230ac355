"""The verdicts of compare(): noise floor, tolerance, direction, spread, absent sides."""

from __future__ import annotations

import sys

import pytest

from perfbot.engine.judge.compare import MetricResult, MetricRule, Policy, Verdict, compare
from perfbot.engine.read.sides import SideReport
from perfbot.model import Better, FailedCase, Scale
from tests.builders import side


def only_metric(base: SideReport, head: SideReport, policy: Policy | None = None) -> MetricResult:
    comparison = compare(base, head, policy)
    (platform,) = comparison.platforms
    (metric,) = platform.metrics
    return metric


@pytest.mark.parametrize(
    ("base", "head", "better", "verdict", "beyond"),
    [
        pytest.param(100.0, 100.5, Better.HIGHER, Verdict.UNCHANGED, False, id="inside-floor"),
        pytest.param(100.0, 99.01, Better.HIGHER, Verdict.UNCHANGED, False, id="just-inside"),
        pytest.param(100.0, 103.0, Better.HIGHER, Verdict.IMPROVED, False, id="up-is-good"),
        pytest.param(100.0, 97.0, Better.HIGHER, Verdict.REGRESSED, False, id="within-tol"),
        pytest.param(100.0, 94.0, Better.HIGHER, Verdict.REGRESSED, True, id="beyond-tol"),
        pytest.param(100.0, 106.0, Better.LOWER, Verdict.REGRESSED, True, id="latency-up"),
        pytest.param(100.0, 90.0, Better.LOWER, Verdict.IMPROVED, False, id="latency-down"),
        pytest.param(0.0, 0.0, Better.LOWER, Verdict.UNCHANGED, False, id="zero-zero"),
        pytest.param(0.0, 3.0, Better.LOWER, Verdict.REGRESSED, False, id="errors-from-zero"),
    ],
)
def test_verdict(base: float, head: float, better: Better, verdict: Verdict, beyond: bool) -> None:
    metric = only_metric(side({"m": base}, better=better), side({"m": head}, better=better))
    assert metric.verdict is verdict
    assert metric.beyond_tolerance is beyond


def test_change_is_relative_to_base() -> None:
    metric = only_metric(side({"tcp4_mbps": 7.094}), side({"tcp4_mbps": 6.651}))
    assert metric.change_pct == pytest.approx(-6.2447, abs=1e-3)
    assert metric.verdict is Verdict.REGRESSED
    assert metric.beyond_tolerance


def test_median_of_samples_and_spread() -> None:
    metric = only_metric(side({"m": [10.0, 30.0, 11.0]}), side({"m": [12.0, 12.5, 13.0]}))
    assert metric.base is not None
    assert metric.head is not None
    assert (metric.base.value, metric.base.low, metric.base.high, metric.base.n) == (11, 10, 30, 3)
    assert metric.head.value == 12.5
    # The base runs scatter from 10 to 30: a move of this size is within their noise.
    assert metric.verdict is Verdict.UNCHANGED
    assert metric.note == "within noise"


def test_samples_near_the_float_limit_stay_finite() -> None:
    # statistics.median would add the two middle samples and overflow to infinity; the
    # change from 1e-308 to 1e308 overflows too. Both must stay finite numbers.
    metric = only_metric(side({"m": [1e-308, 1e-308]}), side({"m": [1e308, 1e308]}))
    assert metric.head is not None
    assert metric.head.value == 1e308
    assert metric.change_pct == sys.float_info.max
    assert metric.verdict is Verdict.IMPROVED
    fall = only_metric(side({"m": 1e-308}), side({"m": -1e308}))
    assert fall.change_pct == -sys.float_info.max
    assert fall.verdict is Verdict.REGRESSED
    assert fall.beyond_tolerance


def test_separated_runs_are_a_move() -> None:
    metric = only_metric(side({"m": [10.0, 10.1, 10.05]}), side({"m": [12.0, 12.2, 12.1]}))
    assert metric.verdict is Verdict.IMPROVED
    assert metric.noise is not None
    assert metric.noise.evidence == "3 runs per side"


def test_one_run_against_repeats_is_judged_by_the_repeats_spread() -> None:
    # Two base runs 20 % apart: a single PR run 9 % above their median is within noise.
    metric = only_metric(side({"m": [10.0, 12.0]}), side({"m": 12.0}))
    assert metric.verdict is Verdict.UNCHANGED
    assert metric.note == "within noise"


def test_new_missing_and_failed() -> None:
    base = side({"kept": 1.0, "gone": 1.0, "tcp_rx.receiver_mbps": 5.0})
    head = side(
        {"kept": 1.0, "added": 2.0},
        failures=[FailedCase("qemu_x86/atom", "tcp_rx", "iperf3 reported an error")],
    )
    (platform,) = compare(base, head).platforms
    verdicts = {m.name: m.verdict for m in platform.metrics}
    assert verdicts == {
        "kept": Verdict.UNCHANGED,
        "gone": Verdict.MISSING,
        "added": Verdict.NEW,
        "tcp_rx.receiver_mbps": Verdict.FAILED,
    }
    assert [f.side for f in platform.failures] == ["head"]


def test_a_side_with_nothing_is_not_available_never_zero() -> None:
    head = side({"udp4_mbps": 14.3})
    (platform,) = compare(SideReport(), head).platforms
    assert platform.unavailable == "no base measurement"
    (metric,) = platform.metrics
    assert metric.verdict is Verdict.NOT_COMPARABLE
    assert metric.base is None
    assert metric.change_pct is None


def test_whole_platform_failure_covers_missing_metrics() -> None:
    base = side({"udp4_mbps": 14.0, "tcp4_mbps": 7.0})
    head = side(
        {"udp4_mbps": 14.0},
        failures=[
            FailedCase("qemu_x86/atom", "sample.net.zperf", "twister: failed", whole_platform=True)
        ],
    )
    (platform,) = compare(base, head).platforms
    assert {m.name: m.verdict for m in platform.metrics}["tcp4_mbps"] is Verdict.FAILED


def test_unit_mismatch_is_not_comparable() -> None:
    metric = only_metric(side({"m": 1.0}, unit="Mbps"), side({"m": 1000.0}, unit="kbps"))
    assert metric.verdict is Verdict.NOT_COMPARABLE
    assert "unit differs" in metric.note


def test_policy_rules_override_direction_thresholds_and_ignore() -> None:
    policy = Policy(
        rules=(
            MetricRule("*.jitter_ms", better=Better.LOWER, threshold=10.0),
            MetricRule("noisy.*", ignore=True),
            MetricRule("*.jitter_ms", tolerance=50.0),
        )
    )
    base = side({"udp.jitter_ms": 1.0, "noisy.x": 1.0})
    head = side({"udp.jitter_ms": 1.3, "noisy.x": 9.0})
    (platform,) = compare(base, head, policy).platforms
    (metric,) = platform.metrics
    assert metric.name == "udp.jitter_ms"
    assert metric.better is Better.LOWER
    assert metric.verdict is Verdict.REGRESSED
    assert not metric.beyond_tolerance  # 30 % is within the rule's 50 %


def test_platforms_are_sorted_worst_first() -> None:
    base = side({"a": 10.0}, platform="calm")
    side({"a": 10.0}, platform="bad", into=base)
    side({"a": 10.0}, platform="good", into=base)
    head = side({"a": 10.0}, platform="calm")
    side({"a": 5.0}, platform="bad", into=head)
    side({"a": 20.0}, platform="good", into=head)
    names = [p.name for p in compare(base, head).platforms]
    assert names == ["bad", "good", "calm"]


def test_summary_counts_every_verdict() -> None:
    comparison = compare(side({"a": 1.0, "b": 1.0}), side({"a": 2.0, "c": 1.0}))
    summary = comparison.summary()
    assert summary[Verdict.IMPROVED] == 1
    assert summary[Verdict.MISSING] == 1
    assert summary[Verdict.NEW] == 1
    assert set(summary) == set(Verdict)


def test_sides_with_the_same_samples_show_the_same_statistics() -> None:
    metric = only_metric(side({"m": [5.0, 6.0]}), side({"m": [5.0, 6.0]}))
    assert metric.base == metric.head
    assert metric.head is not None
    assert (metric.head.value, metric.head.samples) == (5.5, (5.0, 6.0))


def test_a_zero_and_a_negative_zero_keep_their_own_statistics() -> None:
    # -0.0 == 0.0, yet the two are written apart: each side keeps its own sign.
    metric = only_metric(side({"m": 0.0}, scale=Scale.COUNT), side({"m": -0.0}, scale=Scale.COUNT))
    assert metric.base is not None
    assert metric.head is not None
    assert (repr(metric.base.value), repr(metric.head.value)) == ("0.0", "-0.0")
