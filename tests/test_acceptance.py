"""Accepted regressions in the engine (``engine/judge/acceptance.py``): judged after
``compare`` from plain values, against the accepted level as a move from it is; shown
in the row and the headline; kept and laid out again (``engine/show/kept.py``); and the
comment's ``on-change`` rule (``conclusion.worth_a_comment``)."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from perfbot.engine.judge import acceptance, conclusion, confirm
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.compare import (
    Comparison,
    MetricResult,
    MetricRule,
    Policy,
    Verdict,
    compare,
)
from perfbot.engine.judge.judgement import judge_report
from perfbot.engine.judge.noise import Noise, Source
from perfbot.engine.judge.notices import (
    BranchChanged,
    Confirming,
    NoConfirmation,
    NotConfirmed,
    Settled,
)
from perfbot.engine.read.platforms import PlatformLinedUp
from perfbot.engine.read.sides import ReportFile, SideReport
from perfbot.engine.show import kept
from perfbot.engine.show.history import History, Push, Trend
from perfbot.engine.show.kept import Kept
from perfbot.engine.show.mermaid import MetricSeries
from perfbot.engine.show.plot import HistoryPoint
from perfbot.engine.show.render import (
    Footer,
    Prepared,
    RenderContext,
    compose,
    prepare,
    render,
)
from perfbot.engine.show.sections import headline
from perfbot.model import Better, FailedCase, Scale
from tests.builders import side

PLATFORM = "qemu_x86/atom"
UDP = "udp_10M.receiver_mbps"
BASE = [10.0, 10.004, 9.996]  # three runs per side of a stochastic tool: noise ≈ 0.04 %
DOWN = [9.0, 9.003, 8.997]  # −10 %: beyond tolerance, far beyond the noise
ACCEPTED_AT = 9.0  # the PR side's median when it was accepted


def judged(head: list[float], *, steady: list[float] | None = None) -> Comparison:
    metrics = {UDP: BASE, "tcp_rx.receiver_mbps": steady or BASE}
    head_metrics = {UDP: head, "tcp_rx.receiver_mbps": steady or BASE}
    return compare(side(metrics, deterministic=False), side(head_metrics, deterministic=False))


def udp(comparison: Comparison) -> MetricResult:
    return next(m for p in comparison.platforms for m in p.metrics if m.name == UDP)


def accepted_by_writer(value: float = ACCEPTED_AT, **changes: object) -> Accepted:
    said = Accepted(PLATFORM, UDP, (), value, "writer", "larger buffers", "a" * 40)
    return replace(said, **changes)  # type: ignore[arg-type]


def row_of(body: str, name: str = UDP) -> str:
    return next(line for line in body.splitlines() if line.startswith(f"| <code>{name}</code>"))


def test_an_acceptance_holds_within_noise_of_its_value() -> None:
    # The next push measures the same level again, within its noise (and under the floor).
    comparison = acceptance.judge(judged([9.001, 9.004, 8.998]), [accepted_by_writer()])
    metric = udp(comparison)
    assert metric.verdict is Verdict.REGRESSED  # what happened against base is still said
    assert metric.accepted
    assert not metric.beyond_tolerance
    assert comparison.summary()[Verdict.REGRESSED] == 0
    assert comparison.regressed_beyond_tolerance == 0
    assert headline(comparison) == "1 accepted regression"
    assert confirm.pending(comparison) == ()  # an accepted regression is never re-run
    assert conclusion.of_comparison(comparison, fail_on_regression=True) == "success"
    assert "☑️ −9.99 % (accepted by <code>writer</code>: larger buffers)" in row_of(
        render(comparison)
    )


def test_a_further_regression_beyond_noise_ends_the_acceptance() -> None:
    # 2 % below the accepted level: within tolerance, but beyond the floor and the noise.
    comparison = acceptance.judge(judged([8.82, 8.823, 8.817]), [accepted_by_writer()])
    metric = udp(comparison)
    assert not metric.accepted
    assert metric.acceptance is not None
    assert metric.acceptance.change == pytest.approx(-2.0)
    assert metric.beyond_tolerance  # against base it is −11.8 %: red again
    assert confirm.pending(comparison) == ((PLATFORM, UDP),)
    assert conclusion.of_comparison(comparison, fail_on_regression=True) == "failure"
    body = render(comparison)
    assert "🔴 **−11.80 %** (beyond 5 % tolerance; no longer accepted)" in row_of(body)
    assert (
        "> ⚠️ The acceptance of <code>udp_10M.receiver_mbps</code> on <code>qemu_x86/atom</code>"
        " by <code>writer</code> no longer holds: it measured 9 Mbps when accepted at "
        "<code>aaaaaaa</code> and has moved −2.00 % from there: a regression from the "
        "accepted level.\n" in body
    )


def test_a_move_within_wider_noise_than_the_floor_keeps_the_acceptance() -> None:
    # Runs that scatter by 1 %: −10 % against base is a regression, but 3 % further down
    # from the accepted level (one value, not three runs) is within that noise.
    base, down, further = [10.1, 10.0, 9.9], [9.09, 9.0, 8.91], [8.82, 8.73, 8.64]
    before = compare(side({UDP: base}, deterministic=False), side({UDP: down}, deterministic=False))
    assert udp(before).verdict is Verdict.REGRESSED
    later = compare(
        side({UDP: base}, deterministic=False), side({UDP: further}, deterministic=False)
    )
    metric = udp(acceptance.judge(later, [accepted_by_writer()]))
    assert metric.acceptance is not None
    assert metric.acceptance.change == pytest.approx(-3.0)
    assert metric.accepted


def test_a_move_of_unknown_noise_holds_within_the_tolerance_only() -> None:
    # Retransmits come in bursts: one run against the accepted value (one number) is
    # uncertain by the learned noise, so the tolerance (10 counts) is what it may move.
    retransmits = "tcp_rx.retransmits"
    learned = {(PLATFORM, retransmits): Noise(2.0, 20, Source.LEARNED, "20 measurements")}

    def counted(values: float | list[float]) -> SideReport:
        metrics: dict[str, float | list[float]] = {retransmits: values}
        return side(metrics, unit="", better=Better.LOWER, scale=Scale.COUNT, deterministic=False)

    def pushed(head: float) -> MetricResult:
        comparison = compare(counted([3.0, 4.0, 2.0]), counted(head), noise=learned)
        said = replace(accepted_by_writer(30.0), metric=retransmits)
        return next(m for p in acceptance.judge(comparison, [said]).platforms for m in p.metrics)

    assert pushed(30.0).verdict is Verdict.REGRESSED  # +27 against base, beyond tolerance
    assert pushed(33.0).accepted  # +3 from the accepted value: uncertain, within tolerance
    assert pushed(25.0).accepted  # better than accepted
    beyond = pushed(45.0)  # +15: nothing says that is noise
    assert beyond.acceptance is not None
    assert (beyond.accepted, beyond.acceptance.change) == (False, 15.0)


def test_runs_with_other_settings_end_the_acceptance_and_say_so() -> None:
    other = accepted_by_writer(settings=(("streams", "2"),))
    comparison = acceptance.judge(judged(DOWN), [other])
    assert not udp(comparison).accepted
    assert "no longer holds: it was accepted at <code>aaaaaaa</code> for runs with other " in (
        render(comparison)
    )


def test_an_accepted_regression_is_not_measured_again_to_confirm_it() -> None:
    def report(values: list[float]) -> bytes:
        metrics = [{"name": UDP, "values": values, "unit": "Mbps"}]
        return json.dumps({"perfbot": 1, "platform": PLATFORM, "metrics": metrics}).encode()

    files = [ReportFile("base/r.json", report(BASE)), ReportFile("head/r.json", report(DOWN))]
    assert judge_report(files).pending == ((PLATFORM, UDP),)  # stochastic, beyond tolerance
    judged_now = judge_report(files, accepted=[accepted_by_writer()])
    assert judged_now.pending == ()
    assert udp(judged_now.comparison).accepted


def test_the_newest_acknowledgement_of_a_metric_decides() -> None:
    stale = accepted_by_writer(10.5, login="old")
    comparison = acceptance.judge(judged(DOWN), [stale, accepted_by_writer()])
    metric = udp(comparison)
    assert metric.acceptance is not None
    assert (metric.acceptance.login, metric.accepted) == ("writer", True)


def test_what_is_no_regression_is_never_accepted() -> None:
    improved = acceptance.judge(judged([11.0, 11.003, 10.997]), [accepted_by_writer()])
    assert udp(improved).acceptance is None
    quarantined = compare(
        side({UDP: BASE}, deterministic=False),
        side({UDP: DOWN}, deterministic=False),
        Policy(rules=(MetricRule("udp_*", report_only=True),)),
    )
    assert acceptance.acceptable(quarantined, []) == ()
    assert udp(acceptance.judge(quarantined, [accepted_by_writer()])).acceptance is None


def test_accept_then_withdraw_gives_the_comparison_back_as_judged() -> None:
    original = judged(DOWN)
    keys = acceptance.acceptable(original, ["udp*"])
    assert keys == ((PLATFORM, UDP),)
    accepted = acceptance.accept(original, keys, login="writer", reason="", sha="a" * 40)
    assert udp(accepted).accepted
    assert "☑️ −10.00 % (accepted by <code>writer</code>) |" in row_of(render(accepted))
    assert acceptance.acceptable(accepted, ["udp*"]) == ()  # accepted already
    assert acceptance.accepted_keys(accepted, ["tcp*"]) == ()
    assert acceptance.withdraw(accepted, acceptance.accepted_keys(accepted, [])) == original
    assert acceptance.withdraw(accepted) == original


def test_globs_match_metric_names_as_the_configuration_does() -> None:
    assert acceptance.matches("udp_10M.receiver_mbps", ["udp*"])
    assert acceptance.matches("udp_10M.receiver_mbps", ["tcp*", "*.receiver_mbps"])
    assert not acceptance.matches("udp_10M.receiver_mbps", ["UDP*"])  # case-sensitive
    assert acceptance.matches("anything", [])


# --- kept and laid out again -------------------------------------------------------------------


def full_context(comparison: Comparison) -> RenderContext:
    """A context with every kind of part a report can carry."""
    metric = udp(comparison)
    assert metric.base is not None
    assert metric.head is not None
    chart = MetricSeries(
        UDP,
        "Mbps",
        PLATFORM,
        "main",
        (HistoryPoint("bbbbbbb", metric.base), HistoryPoint("PR aaaaaaa", metric.head, True)),
        metric.base,
        metric.head,
    )
    measured = datetime(2026, 12, 1, 12, tzinfo=UTC)
    history = History(
        branch="main",
        metrics=((PLATFORM, UDP),),
        pushes=(Push("a" * 40, measured, "1 regression", (((PLATFORM, UDP), metric),), True),),
        trends=(Trend(PLATFORM, UDP, "Mbps", (("b" * 40, 10.0), ("c" * 40, 10.01)), 9.0),),
        charts=(chart,),
    )
    return RenderContext(
        head_sha="a" * 40,
        base_sha="b" * 40,
        base_ref="main",
        run_url="https://github.com/acme/widget/actions/runs/1",
        run_label="net-perf run 1",
        updated_at=datetime(2026, 12, 1, 12, 30, tzinfo=UTC),
        config_errors=("`threshold` must be a number",),
        skipped=(("head/x", "a link"),),
        notices=(
            PlatformLinedUp("base", "qemu_x86", PLATFORM),
            Confirming(1, 2, 1001),
            NotConfirmed(NoConfirmation.NOT_ALLOWED, "suspended"),
            Settled(2, 1, 0),
            BranchChanged("main", "d" * 40, 12, "https://github.com/acme/widget/issues/12", 1),
        ),
        footer=Footer.APP,
        rerun_permission="triage",
        advisory=False,
        history=history,
    )


def test_a_kept_report_reads_back_as_it_was_and_lays_out_the_same_bytes() -> None:
    failure = FailedCase(PLATFORM, "tcp_tx", "iperf3: error - the server is busy")
    head = side({UDP: [8.82, 8.823, 8.817], "tcp_tx.receiver_mbps": 1.0}, failures=[failure])
    base = side({UDP: BASE, "tcp_tx.receiver_mbps": 1.0})
    comparison = acceptance.judge(compare(base, head), [accepted_by_writer()])
    context = full_context(comparison)
    prepared = prepare(comparison, context)
    stored = kept.dump(prepared, Kept(comparison, context))
    again = kept.load(stored)
    assert again == Kept(comparison, context)
    assert compose(prepare(again.comparison, again.context)) == compose(prepared)
    # The comment is composed from the prepared report, which reads as ever.
    assert Prepared.load(stored) == prepared


@pytest.mark.parametrize("odd", [math.inf, -math.inf, 2**70])
def test_a_kept_report_with_what_orjson_cannot_write_reads_back_as_it_was(odd: float) -> None:
    """An infinity (orjson would write null) or an int beyond 64 bits (it refuses one) in
    the comparison: the report is kept all the same, and reads back as it was."""
    comparison = judged(DOWN)
    platform = comparison.platforms[0]
    metrics = tuple(replace(m, change_pct=odd) if m.name == UDP else m for m in platform.metrics)
    comparison = replace(comparison, platforms=(replace(platform, metrics=metrics),))
    prepared = prepare(comparison)
    assert kept.load(kept.dump(prepared, Kept(comparison, RenderContext()))) == Kept(
        comparison, RenderContext()
    )


def test_what_is_not_a_kept_report_reads_as_none() -> None:
    prepared = prepare(judged(DOWN))
    assert kept.load(kept.dump(prepared, None)) is None
    assert kept.load(prepared.dump()) is None  # kept before there was any
    assert kept.load("### an old rendered body") is None
    broken = kept.dump(prepared, Kept(judged(DOWN), RenderContext())).replace(
        '\\"verdict\\":\\"regressed\\"', '\\"verdict\\":\\"worse\\"'
    )
    assert kept.load(broken) is None
    extra = kept.dump(prepared, Kept(judged(DOWN), RenderContext())).replace(
        '\\"verdict\\":', '\\"colour\\":\\"red\\",\\"verdict\\":', 1
    )
    assert extra != kept.dump(prepared, Kept(judged(DOWN), RenderContext()))
    assert kept.load(extra) is None  # a field this perfbot does not know: not its report


@pytest.mark.parametrize(
    ("limit", "value"), [("MAX_KEPT_CHARS", 100), ("MAX_KEPT_METRICS", 1), ("MAX_KEPT_SAMPLES", 11)]
)
def test_a_report_too_big_is_not_kept(
    monkeypatch: pytest.MonkeyPatch, limit: str, value: int
) -> None:
    prepared = prepare(judged(DOWN))  # 2 metrics, 12 samples
    assert kept.load(kept.dump(prepared, Kept(judged(DOWN), RenderContext()))) is not None
    monkeypatch.setattr(kept, limit, value)
    assert kept.load(kept.dump(prepared, Kept(judged(DOWN), RenderContext()))) is None


class _Level(enum.IntEnum):
    LOW = 1


@dataclass(frozen=True)
class _Point:
    x: float


@dataclass(frozen=True)
class _Mixed:
    counts: tuple[int, ...]
    either: _Point | str | None
    pair: tuple[float, _Level]
    when: datetime | None


def test_a_kept_value_is_written_by_its_type_whatever_came_before() -> None:
    """Plain values are copied, others written: an enum by value, a time in ISO 8601,
    however the values before them in the same fields were written."""
    at = datetime(2025, 12, 2, 2, 28, 48, tzinfo=UTC)
    values = [
        _Mixed((1, 2), _Point(3), (0.5, _Level.LOW), None),
        _Mixed((_Level.LOW, 4), "three", (1, _Level.LOW), at),
        _Mixed((), None, (2.5, _Level.LOW), at),
    ]
    written = [kept._plain(_Mixed, value) for value in values]
    assert written == [
        {"counts": [1, 2], "either": {"x": 3}, "pair": [0.5, 1], "when": None},
        {"counts": [1, 4], "either": "three", "pair": [1, 1], "when": at.isoformat()},
        {"counts": [], "either": None, "pair": [2.5, 1], "when": at.isoformat()},
    ]
    assert [type(count) for count in written[1]["counts"]] == [int, int]  # not the enum
    with pytest.raises(TypeError):
        kept._plain(_Mixed, _Mixed((1,), 2.5, (0.5, _Level.LOW), None))  # type: ignore[arg-type]
