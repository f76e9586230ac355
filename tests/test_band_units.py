"""A noise band too wide to read as a percentage is given in the metric's own unit."""

from __future__ import annotations

import math
import statistics

import pytest

from perfbot.engine.judge import noise
from perfbot.engine.judge.compare import MetricResult, compare
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import terminal
from perfbot.engine.show.explain import band
from perfbot.engine.show.render import render
from perfbot.model import Better, FailedCase, Scale
from tests.builders import side

# iperf3's UDP jitter on loopback, three runs a side: one side spans 0.00004–0.0023 ms.
BASE_JITTER = [0.00004, 0.0005, 0.0023]
HEAD_JITTER = [0.0004, 0.0011, 0.0019]


def jitter(values: list[float], unit: str = "ms") -> SideReport:
    # A failed case keeps the platform open: its unchanged rows show their bands.
    return side(
        {"udp.jitter_ms": values},
        platform="lab",
        unit=unit,
        better=Better.LOWER,
        deterministic=False,
        failures=[FailedCase("lab", "tcp", "iperf3 exited 1")],
    )


def only(base: SideReport, head: SideReport) -> MetricResult:
    (platform,) = compare(base, head).platforms
    (metric,) = platform.metrics
    return metric


def test_a_band_beyond_100_percent_is_given_in_the_metrics_unit() -> None:
    metric = only(jitter(BASE_JITTER), jitter(HEAD_JITTER))
    assert metric.band is not None
    assert metric.band > 1000  # in percent: "−100/+…" says nothing
    shown = band(metric)
    assert shown is not None
    assert (shown.width, shown.unit) == ("±0.007", "ms")
    # The runs' own scatter in ms, as loss is judged in points: t · s · √(1/3 + 1/3).
    spread = math.sqrt((statistics.variance(BASE_JITTER) + statistics.variance(HEAD_JITTER)) / 2)
    assert metric.unit_band == pytest.approx(
        noise.critical(4) * spread * math.sqrt(2 / 3), rel=1e-9
    )
    row = next(
        line
        for line in render(compare(jitter(BASE_JITTER), jitter(HEAD_JITTER))).splitlines()
        if "jitter" in line
    )
    assert "| ±0.007 ms, 3 runs per side |" in row
    assert "%, 3 runs" not in row
    table = terminal.comparison_table(compare(jitter(BASE_JITTER), jitter(HEAD_JITTER)))
    assert "±0.007 ms, 3 runs per side" in table


def test_a_band_up_to_100_percent_stays_in_percent() -> None:
    metric = only(jitter([1000.0, 1040.0, 980.0]), jitter([1100.0, 1050.0, 1120.0]))
    shown = band(metric)
    assert shown is not None
    assert shown.unit == ""
    assert shown.width.endswith(" %")


def test_the_unit_of_a_band_is_escaped() -> None:
    evil = "ms|<b>@x"
    body = render(compare(jitter(BASE_JITTER, evil), jitter(HEAD_JITTER, evil)))
    row = next(line for line in body.splitlines() if "jitter" in line)
    assert "±0.007 ms&#124;&#60;b&#62;&#64;\u200bx, 3 runs" in row
    assert "<b>" not in body


def test_learned_noise_knows_its_spread_in_the_metrics_unit() -> None:
    groups = [[0.00004, 0.0005, 0.0023, 0.0011], [0.0004, 0.0011, 0.0019]]
    learned = noise.learned(groups, Scale.RATIO, "7 measurements of 2 commits")
    assert learned is not None
    squares = sum(statistics.variance(g) * (len(g) - 1) for g in groups)
    assert learned.unit_sigma == pytest.approx(math.sqrt(squares / 5), rel=1e-9)
    # Pooled with the run's own repeats, weighted by degrees of freedom like the rest.
    within = noise.within_run(BASE_JITTER, HEAD_JITTER, Scale.RATIO)
    assert within is not None
    assert within.unit_sigma is not None
    assert learned.unit_sigma is not None
    both = noise.pooled(learned, within)
    assert both.unit_sigma == pytest.approx(
        math.sqrt((5 * learned.unit_sigma**2 + 4 * within.unit_sigma**2) / 9)
    )
