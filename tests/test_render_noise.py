"""The comment explains its verdicts (issue 13, item 6): each change in its own units, a
stochastic metric's noise band with its evidence and the confidence in words, the hint of
an uncertain metric (``/perfbot rerun`` on the App's comment only), and all of it escaped
and within the size budget."""

from __future__ import annotations

import html
from collections.abc import Mapping

import pytest

from perfbot.engine.judge.compare import (
    Comparison,
    MetricResult,
    PlatformResult,
    Policy,
    Stats,
    Verdict,
    compare,
)
from perfbot.engine.judge.noise import Noise, Source
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.render import GITHUB_BODY_LIMIT, Footer, RenderContext, headline, render
from perfbot.model import Better, Measurement, Scale, settings_of
from tests.builders import side
from tests.hostile import assert_inert

PLATFORM = "fpga-vu13p"
LEARNED = Noise(0.003, 20, Source.LEARNED, "21 measurements of main@abc1234")


def stochastic(values: Mapping[str, float | list[float]], **kwargs: object) -> SideReport:
    kwargs.setdefault("platform", PLATFORM)
    return side(values, deterministic=False, **kwargs)  # type: ignore[arg-type]


def loss(values: list[float], into: SideReport | None = None) -> SideReport:
    return stochastic(
        {"udp.lost_percent": values},
        scale=Scale.POINTS,
        unit="%",
        better=Better.LOWER,
        into=into,
    )


def retransmits(values: list[float], into: SideReport | None = None) -> SideReport:
    return stochastic(
        {"tcp.retransmits": values}, scale=Scale.COUNT, unit="", better=Better.LOWER, into=into
    )


def row_of(body: str, name: str) -> str:
    (row,) = [line for line in body.splitlines() if line.startswith(f"| <code>{name}</code>")]
    return row


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip("|").split("|")]


# Changes in their own units ------------------------------------------------------------------


def test_a_loss_rise_is_shown_in_points_with_a_points_tolerance() -> None:
    body = render(compare(loss([0.0, 0.0, 0.0]), loss([5.7, 5.5, 6.0])))
    change = cells(row_of(body, "udp.lost_percent"))[3]
    assert change == "🔴 **+5.70 pp** (beyond 1 pp tolerance)"


def test_a_counter_is_shown_in_counts_never_as_a_percentage() -> None:
    body = render(compare(retransmits([3.0, 4.0, 2.0]), retransmits([30.0, 40.0, 25.0])))
    change = cells(row_of(body, "tcp.retransmits"))[3]
    assert change == "+27 (within noise)"
    rose = render(compare(retransmits([0.0, 0.0, 0.0]), retransmits([40.0, 40.0, 40.0])))
    assert cells(row_of(rose, "tcp.retransmits"))[3] == "🔴 **+40** (beyond the tolerance of 10)"


def test_a_ratio_metric_leaving_zero_is_never_a_percentage() -> None:
    body = render(compare(side({"drops": 0.0}), side({"drops": 3.0})))
    change = cells(row_of(body, "drops"))[3]
    assert change == "🟢 from 0"  # no "(from zero)" after it either


# The noise band ------------------------------------------------------------------------------


def test_a_moved_stochastic_metric_shows_its_band_evidence_and_confidence() -> None:
    base = stochastic({"udp.receiver_mbps": [100.0, 100.02, 99.99]})
    head = stochastic({"udp.receiver_mbps": [95.0, 95.01, 94.99]})
    body = render(compare(base, head))
    assert "| metric | base | PR | change | noise |" in body
    row = cells(row_of(body, "udp.receiver_mbps"))
    assert row[3] == "🟠 −5.00 %"
    assert row[4] == "±0.092 %, 3 runs per side: clear (54× the band)"


def test_learned_noise_names_the_commit_it_was_learned_from_escaped() -> None:
    base = stochastic({"stable": 1000.0})
    head = stochastic({"stable": 960.0})
    body = render(compare(base, head, noise={(PLATFORM, "stable"): LEARNED}))
    noise = cells(row_of(body, "stable"))[4]
    # Escaped like every report text: no mention, no linkable SHA.
    assert noise == "±1.6 %, 21 measurements of main&#64;\u200babc123\u200b4: clear (2.5× the band)"
    assert html.unescape(noise).replace("\u200b", "") == (
        "±1.6 %, 21 measurements of main@abc1234: clear (2.5× the band)"
    )


def metric(change: float, band: float, verdict: Verdict = Verdict.REGRESSED) -> MetricResult:
    stats = Stats.of([1.0, 1.0])
    return MetricResult(
        "m",
        "Mbps",
        Better.HIGHER,
        stats,
        stats,
        change,
        verdict,
        noise=Noise(0.01, 4, Source.WITHIN_RUN, "3 runs per side"),
        band=band,
    )


@pytest.mark.parametrize(
    ("change", "band", "words"),
    [
        (-4.0, 2.0, "clear (2× the band)"),
        (-3.0, 2.0, "likely (1.5× the band)"),
        (-1.5, 2.0, "likely (the medians stand apart)"),  # the robust test called it
        (-900.0, 2.0, "clear (over 100× the band)"),
    ],
)
def test_the_confidence_says_how_far_beyond_the_band_the_move_is(
    change: float, band: float, words: str
) -> None:
    body = render(Comparison((PlatformResult("p", (metric(change, band),), ()),)))
    assert cells(row_of(body, "m"))[4] == f"±2 %, 3 runs per side: {words}"


def test_a_deterministic_tool_keeps_the_table_without_a_noise_column() -> None:
    body = render(compare(side({"tcp_upload": 100.0}), side({"tcp_upload": 98.5})))
    assert "noise |" not in body
    assert cells(row_of(body, "tcp_upload")) == [
        "<code>tcp_upload</code> (Mbps)",
        "100",
        "98.5",
        "🟠 −1.50 %",
    ]


def test_within_noise_shows_its_band_in_an_open_platform_only() -> None:
    moved = {"udp.receiver_mbps": [100.0, 100.02, 99.99]}
    noisy = {"tcp.receiver_mbps": [1000.0, 1300.0, 900.0]}
    base = stochastic({**moved, **noisy})
    head = stochastic(
        {"udp.receiver_mbps": [95.0, 95.01, 94.99], "tcp.receiver_mbps": [1100.0, 850.0, 1250.0]}
    )
    open_body = render(compare(base, head))
    assert f"#### <code>{PLATFORM}</code>" in open_body
    noisy_row = cells(row_of(open_body, "tcp.receiver_mbps"))
    assert noisy_row[3] == "+10.00 % (within noise)"
    # −74/+290 % in percent: beyond +100 %, so in the metric's unit; no confidence: not moved.
    assert noisy_row[4] == "±1,400 Mbps, 3 runs per side"
    # Nothing moved on a folded platform: its rows keep four columns, no band.
    calm = render(
        compare(stochastic(noisy), stochastic({"tcp.receiver_mbps": [1100.0, 850.0, 1250.0]}))
    )
    assert len(cells(row_of(calm, "tcp.receiver_mbps"))) == 4
    assert "all 1 metric unchanged (within the noise floor or their noise)" in calm


# Uncertain metrics ---------------------------------------------------------------------------


def single_runs() -> Comparison:
    base = stochastic({"tcp.receiver_mbps": 1000.0, "udp.receiver_mbps": 100.0, "calm": 1.0})
    head = stochastic({"tcp.receiver_mbps": 800.0, "udp.receiver_mbps": 104.0, "calm": 1.0})
    return compare(base, head)


def test_uncertain_metrics_are_counted_never_as_moves() -> None:
    comparison = single_runs()
    assert headline(comparison) == "2 uncertain (single runs)"
    body = render(comparison)
    for move in ("🔴", "🟠", "🟢", "####"):  # no move, and the platform stays folded
        assert move not in body
    assert f"| <code>{PLATFORM}</code> |  |  | 1 | ❔ 2 uncertain |" in body
    assert f"<code>{PLATFORM}</code>: 1 unchanged, 2 uncertain (single runs)</summary>" in body
    one = compare(stochastic({"a": 1.0, "b": 1.0}), stochastic({"a": 2.0, "b": 1.0}))
    assert headline(one) == "1 uncertain (single run)"
    mixed = compare(side({"z": 100.0}), side({"z": 90.0}))
    assert headline(mixed) == "1 regression"  # no "0 uncertain"


@pytest.mark.parametrize(
    ("footer", "hint"),
    [
        (Footer.APP, "repeat each case ×3, or `/perfbot rerun`"),
        (Footer.ACTIONS, "repeat each case ×3"),
        (Footer.CLI, "repeat each case ×3"),
    ],
)
def test_an_uncertain_row_shows_its_change_and_a_hint_for_its_path(
    footer: Footer, hint: str
) -> None:
    body = render(single_runs(), RenderContext(footer=footer))
    row = cells(row_of(body, "tcp.receiver_mbps"))
    assert row[3] == "❔ −20.00 % (single run, noise unknown)"
    assert row[4] == hint
    rows = [line for line in body.splitlines() if line.startswith("| <code>")]
    assert ("/perfbot rerun" in "".join(rows)) is (footer is Footer.APP)


# Not comparable ------------------------------------------------------------------------------


def test_a_not_comparable_row_names_the_differing_settings_escaped() -> None:
    def run(value: float, streams: object) -> SideReport:
        report = SideReport()
        report.add(
            Measurement(
                PLATFORM,
                "tcp.receiver_mbps",
                value,
                "Mbps",
                Better.HIGHER,
                settings=settings_of(streams=streams),
            )
        )
        return report

    body = render(compare(run(1000.0, 1), run(3000.0, "4 <img src=x>|")))
    change = cells(row_of(body, "tcp.receiver_mbps"))[3]
    assert change.startswith("⚪ not comparable (run settings differ&#58; streams 1 vs 4 ")
    assert "<img" not in body
    assert len(cells(row_of(body, "tcp.receiver_mbps"))) == 4


# Escaping and the size budget ----------------------------------------------------------------


EVIL = "@octocat #1 [x](https://e.example) <img src=x> |` GH-12 deadbeefcafe\u202e"


def test_hostile_evidence_stays_inert() -> None:
    base = stochastic({"m": 1000.0})
    head = stochastic({"m": 900.0})
    noise = {(PLATFORM, "m"): Noise(0.003, 20, Source.LEARNED, EVIL)}
    for footer in Footer:
        body = render(compare(base, head, noise=noise), RenderContext(footer=footer))
        assert_inert(body, "https://nothing.example")
        assert "&#124;" in row_of(body, "m")  # the pipe was there, encoded


def many_moved(metrics: int) -> tuple[SideReport, SideReport]:
    names = [f"case_{i:05d}.receiver_mbps" for i in range(metrics)]
    base = stochastic({n: [100.0, 100.02, 99.99] for n in names})
    head = stochastic({n: [95.0, 95.01, 94.99] for n in names})
    return base, head


def test_the_bands_are_dropped_before_any_row() -> None:
    comparison = compare(*many_moved(260))
    full = render(comparison, RenderContext(limit=10**7))
    assert full.count("3 runs per side") == 260
    limit = len(full.encode()) - 1000  # the full body does not fit; without bands it does
    body = render(comparison, RenderContext(limit=limit))
    assert len(body.encode()) <= limit
    assert "Left out to stay within GitHub's comment size limit: the noise bands.*" in body
    assert body.count("🟠 −5.00 %") == 260  # every row is still there
    assert "3 runs per side" not in body
    assert "| metric | base | PR | change |\n" in body


def test_the_budget_holds_with_bands_and_hints() -> None:
    base, head = many_moved(1500)
    for i in range(800):
        name = f"single_{i:04d}"
        base.add(Measurement("lab", name, 100.0, "Mbps", Better.HIGHER), deterministic=False)
        head.add(Measurement("lab", name, 80.0, "Mbps", Better.HIGHER), deterministic=False)
    body = render(compare(base, head), RenderContext(footer=Footer.APP))
    assert len(body.encode()) <= GITHUB_BODY_LIMIT
    assert body.splitlines()[1].endswith(": 1500 regressions, 800 uncertain (single runs)")
    assert (
        "*Left out to stay within GitHub's comment size limit: the noise bands, the unchanged "
        "rows, the platforms where nothing moved, the per-metric tables.*"
    ) in body


def test_policy_units_in_the_tolerance_follow_the_rules() -> None:
    policy = Policy(points_tolerance=0.5)
    body = render(compare(loss([0.0, 0.0, 0.0]), loss([0.9, 0.8, 1.0]), policy))
    assert "(beyond 0.5 pp tolerance)" in cells(row_of(body, "udp.lost_percent"))[3]
