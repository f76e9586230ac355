"""The demo comment and a noisy one, byte for byte: any change to the look is deliberate.

After an intended change, regenerate with:
    .venv/bin/perfbot compare examples/demo --exit-zero > tests/golden/demo.md
    .venv/bin/python -m tests.test_golden > tests/golden/noise.md
"""

from __future__ import annotations

from perfbot.engine.compare import Comparison, compare
from perfbot.engine.noise import Noise, Source
from perfbot.engine.render import Footer, RenderContext, render
from perfbot.engine.sides import ReportFile, SideReport, read_side
from perfbot.model import Better, Measurement, Scale, settings_of
from tests.paths import REPO

DEMO = REPO / "examples" / "demo"


def side_files(side: str) -> list[ReportFile]:
    root = DEMO / side
    return [
        ReportFile(path.relative_to(root).as_posix(), path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]


def test_demo_comment_matches_the_golden_file() -> None:
    body = render(compare(read_side(side_files("base")), read_side(side_files("head"))))
    expected = (REPO / "tests" / "golden" / "demo.md").read_text(encoding="utf-8")
    assert body == expected


def noisy_comparison() -> Comparison:
    """Stochastic tools on two boards, as the App sees them: repeats on one board (a clear
    drop, loss in points, counters in counts, a metric within its noise, runs with other
    settings), single runs on the other (one judged by learned noise, one uncertain)."""
    base, head = SideReport(), SideReport()

    def add(
        report: SideReport, platform: str, name: str, values: list[float], **kw: object
    ) -> None:
        unit = str(kw.pop("unit", "Mbps"))
        better = kw.pop("better", Better.HIGHER)
        for value in values:
            measurement = Measurement(platform, name, value, unit, better, **kw)  # type: ignore[arg-type]
            report.add(measurement, deterministic=False)

    lower = {"better": Better.LOWER}
    for report, tcp, udp, lost, retransmits, noisy, single, streams in (
        (
            base,
            [1000, 1010, 995],
            [100, 100.02, 99.99],
            [0, 0, 0],
            [3, 4, 2],
            [1000, 1300, 900],
            1000,
            1,
        ),
        (
            head,
            [900, 905, 898],
            [95, 95.01, 94.99],
            [5.7, 5.5, 6],
            [30, 40, 25],
            [1100, 850, 1250],
            800,
            4,
        ),
    ):
        add(report, "fpga-vu13p", "tcp_rx.receiver_mbps", [float(x) for x in tcp])
        add(report, "fpga-vu13p", "udp_rx.receiver_mbps", [float(x) for x in udp])
        add(
            report,
            "fpga-vu13p",
            "udp_rx.lost_percent",
            [float(x) for x in lost],
            unit="%",
            scale=Scale.POINTS,
            **lower,
        )
        add(
            report,
            "fpga-vu13p",
            "tcp_rx.retransmits",
            [float(x) for x in retransmits],
            unit="",
            scale=Scale.COUNT,
            **lower,
        )
        add(report, "fpga-vu13p", "tcp_tx.receiver_mbps", [float(x) for x in noisy])
        add(
            report,
            "fpga-vu13p",
            "tcp_bidir.receiver_mbps",
            [2000.0],
            settings=settings_of(streams=streams),
        )
        add(report, "qemu_x86/passt", "tcp.receiver_mbps", [float(single)])
        add(report, "qemu_x86/passt", "udp.receiver_mbps", [100.0 if report is base else 96.0])
        rr = [5000.0 if report is base else 4850.0]
        add(report, "qemu_x86/passt", "rr.transactions", rr, unit="trans/s")
    learned = "21 measurements of main@abc1234"
    known = {
        ("qemu_x86/passt", "udp.receiver_mbps"): Noise(0.003, 20, Source.LEARNED, learned),
        ("qemu_x86/passt", "rr.transactions"): Noise(0.05, 20, Source.LEARNED, learned),
    }
    return compare(base, head, noise=known)


def noisy_body() -> str:
    return render(noisy_comparison(), RenderContext(footer=Footer.APP))


def test_the_noisy_comment_matches_the_golden_file() -> None:
    expected = (REPO / "tests" / "golden" / "noise.md").read_text(encoding="utf-8")
    assert noisy_body() == expected


if __name__ == "__main__":
    print(noisy_body(), end="")
