"""Each UDP run's loss, with packets and lost packets, in a collapsed detail (issue 14)."""

from __future__ import annotations

from perfbot.engine.judge.compare import compare
from perfbot.engine.read.sides import ReportFile, read_side
from perfbot.engine.show.render import render
from tests.paths import shared

LOSSY = shared("generated/iperf3/udp_2G_loss.json").read_bytes()


def test_every_udp_run_shows_its_loss_and_packets() -> None:
    # Two runs per side of a real lossy UDP iperf3 -J run.
    files = [ReportFile(f"lab/udp_{n}.json", LOSSY) for n in (1, 2)]
    body = render(compare(read_side(files), read_side(files)))
    assert "<details><summary>UDP loss per run (1 case)</summary>" in body
    rows = [line for line in body.splitlines() if line.startswith("| <code>udp</code> |")]
    assert len(rows) == 4  # two base runs and two PR runs
    assert rows[0].startswith("| <code>udp</code> | base | 1 | 43.5")
    assert "186,130 / 427,306" in rows[0]
    assert rows[2].startswith("| <code>udp</code> | PR | 1 |")


def test_a_report_without_udp_has_no_loss_detail() -> None:
    tcp = shared("generated/iperf3/tcp.json").read_bytes()
    files = [ReportFile("lab/tcp_1.json", tcp)]
    assert "UDP loss per run" not in render(compare(read_side(files), read_side(files)))
