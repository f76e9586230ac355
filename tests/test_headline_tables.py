"""A headline that says what happened, and tables that are never empty."""

from __future__ import annotations

from perfbot.engine.judge.compare import Incomparable, Verdict, compare
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show import terminal
from perfbot.engine.show.render import headline, render
from perfbot.model import Better, FailedCase, Measurement, settings_of
from tests.builders import side

METRICS = ("receiver_mbps", "retransmits", "cpu_host_percent", "cpu_remote_percent")


def iperf3_side(streams: int, cases: tuple[str, ...] = ("tcp_rx", "tcp_tx")) -> SideReport:
    """Each case's metrics as iperf3 -J reports them, run with ``-P streams``."""
    report = SideReport()
    for case in cases:
        for metric in METRICS:
            report.add(
                Measurement(
                    "lab",
                    f"{case}.{metric}",
                    100.0,
                    "Mbps",
                    Better.HIGHER,
                    settings=settings_of(protocol="TCP", streams=streams, duration=3),
                )
            )
    return report


def test_a_comparison_with_nothing_compared_says_so() -> None:
    comparison = compare(iperf3_side(1), iperf3_side(2))
    assert {m.incomparable for p in comparison.platforms for m in p.metrics} == {
        Incomparable.SETTINGS
    }
    assert headline(comparison) == "8 metrics not comparable: run settings differ"
    body = render(comparison)
    assert body.splitlines()[1] == (
        "### Performance report: 8 metrics not comparable: run settings differ"
    )
    assert "no change" not in body
    assert (
        "<details><summary><code>lab</code>: 8 not comparable</summary>" in body
    )  # not "0 unchanged, …"
    table = terminal.comparison_table(comparison)
    assert table.startswith("Performance report: 8 metrics not comparable: run settings differ\n")


def test_metrics_not_compared_beside_unchanged_ones_are_said_too() -> None:
    base, head = iperf3_side(1, ("tcp_rx",)), iperf3_side(2, ("tcp_rx",))
    side({"tcp_tx.receiver_mbps": 100.0}, platform="lab", into=base)
    side({"tcp_tx.receiver_mbps": 100.0}, platform="lab", into=head)
    assert headline(compare(base, head)) == (
        "no change beyond the noise floor, 4 metrics not comparable: run settings differ"
    )


def test_each_reason_a_metric_was_not_compared_is_counted() -> None:
    base, head = iperf3_side(1, ("tcp_rx",)), iperf3_side(2, ("tcp_rx",))
    side({"tcp_tx.receiver_mbps": 100.0}, platform="lab", unit="Mbps", into=base)
    side({"tcp_tx.receiver_mbps": 0.1}, platform="lab", unit="Gbps", into=head)
    assert headline(compare(base, head)) == (
        "5 metrics not comparable: run settings differ (4), units differ (1)"
    )


def test_new_metrics_beside_unchanged_ones_are_said() -> None:
    comparison = compare(side({"a": 1.0}), side({"a": 1.0, "b": 2.0, "c": 3.0}))
    assert headline(comparison) == "no change beyond the noise floor, 2 new metrics"


def header_rows(body: str) -> list[str]:
    """For every table header in ``body``, the line after its separator."""
    lines = body.splitlines()
    return [lines[i + 2] for i, line in enumerate(lines) if line.startswith("| metric |")]


def test_an_open_platform_whose_metrics_are_all_unchanged_shows_no_empty_table() -> None:
    base = side({"rx.mbps": 10.0, "tx.mbps": 10.0}, platform="lab")
    failed = FailedCase("lab", "udp", "iperf3 exited 1")
    head = side({"rx.mbps": 10.0, "tx.mbps": 10.0}, platform="lab", failures=[failed])
    comparison = compare(base, head)
    (platform,) = comparison.platforms
    assert {m.verdict for m in platform.metrics} == {Verdict.UNCHANGED}
    body = render(comparison)
    lines = body.splitlines()
    opened = lines.index("#### <code>lab</code>")
    # The heading, a blank line, then the folded unchanged rows: no header without rows.
    assert lines[opened + 1 : opened + 3] == ["", "<details><summary>2 unchanged metrics</summary>"]
    assert all(row.startswith("| <code>") for row in header_rows(body))
    assert "❌ <code>udp</code> (PR): iperf3 exited 1  " in lines


def test_a_platform_with_only_a_failed_case_shows_no_table() -> None:
    base = side({}, platform="lab", failures=[FailedCase("lab", "udp", "iperf3 exited 1")])
    head = side({}, platform="lab", failures=[FailedCase("lab", "udp", "iperf3 exited 1")])
    body = render(compare(base, head))
    assert "| metric |" not in body
    lines = body.splitlines()
    opened = lines.index("#### <code>lab</code>")
    assert lines[opened + 1 : opened + 3] == ["", "❌ <code>udp</code> (base): iperf3 exited 1  "]
