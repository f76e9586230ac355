"""The demo comment, a noisy one and the comments of what went wrong in a report, byte for
byte: any change to the look is deliberate.

After an intended change, regenerate with:
    .venv/bin/perfbot compare examples/demo --exit-zero > tests/golden/demo.md
    .venv/bin/python -m tests.test_golden > tests/golden/noise.md
    .venv/bin/python -m tests.test_golden accepted > tests/golden/accepted.md
    for name in not_comparable bad_entry runs_left_out; do
        .venv/bin/perfbot compare tests/data/golden/$name --exit-zero > tests/golden/$name.md
    done

The trees under tests/data/golden/ (see tests/data/README.md): ``not_comparable``, every
metric run with other settings on the PR (real iperf3 -P 1 against -P 2: the headline
says so, never "no change"); ``bad_entry``, a github-action-benchmark file with one entry
whose name holds a newline (a failed case naming it; the file's other metrics compared,
all unchanged: an open platform with no empty table); ``runs_left_out``, three base runs
of one case, one with -P 2 and one with -O 1 (one line naming the files and only the
settings that differ). ``accepted``: the noisy comment after ``/perfbot accept tcp_rx.*
-- larger buffers @team``, with an acceptance of ``udp_rx.receiver_mbps`` at 96 that no
longer holds (the PR measures 95 now): one row accepted, one red again with its line.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from perfbot.engine.judge import acceptance
from perfbot.engine.judge.acceptance import Accepted
from perfbot.engine.judge.compare import Comparison, compare
from perfbot.engine.judge.judgement import judge_report
from perfbot.engine.judge.noise import Noise, Source
from perfbot.engine.read.report import read_report
from perfbot.engine.read.sides import ReportFile, SideReport, read_side
from perfbot.engine.show.render import Footer, RenderContext, render
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


WHAT_WENT_WRONG = ("not_comparable", "bad_entry", "runs_left_out")


def what_went_wrong(name: str) -> str:
    """The comment ``perfbot compare tests/data/golden/NAME`` writes."""
    root = REPO / "tests" / "data" / "golden" / name
    files = [
        ReportFile(path.relative_to(root).as_posix(), path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]
    judged = judge_report(read_report(files))
    return render(judged.comparison, RenderContext(notices=judged.notices))


@pytest.mark.parametrize("name", WHAT_WENT_WRONG)
def test_what_went_wrong_matches_its_golden_file(name: str) -> None:
    expected = (REPO / "tests" / "golden" / f"{name}.md").read_text(encoding="utf-8")
    assert what_went_wrong(name) == expected


@dataclass(frozen=True)
class _Series:
    platform: str
    name: str
    base: list[float]
    head: list[float]
    unit: str = "Mbps"
    better: Better = Better.HIGHER
    scale: Scale = Scale.RATIO
    streams: tuple[int, int] | None = None  # the run settings of base and head


NOISY = (
    # Three runs per side on one board: a clear drop, loss in points, counters in counts,
    # a metric within its noise, runs with other settings.
    _Series("fpga-vu13p", "tcp_rx.receiver_mbps", [1000, 1010, 995], [900, 905, 898]),
    _Series("fpga-vu13p", "udp_rx.receiver_mbps", [100, 100.02, 99.99], [95, 95.01, 94.99]),
    _Series(
        "fpga-vu13p",
        "udp_rx.lost_percent",
        [0, 0, 0],
        [5.7, 5.5, 6],
        "%",
        Better.LOWER,
        Scale.POINTS,
    ),
    _Series(
        "fpga-vu13p", "tcp_rx.retransmits", [3, 4, 2], [30, 40, 25], "", Better.LOWER, Scale.COUNT
    ),
    _Series("fpga-vu13p", "tcp_tx.receiver_mbps", [1000, 1300, 900], [1100, 850, 1250]),
    _Series("fpga-vu13p", "tcp_bidir.receiver_mbps", [2000], [2000], streams=(1, 4)),
    # Single runs on the other: one uncertain, two judged by learned noise.
    _Series("qemu_x86/passt", "tcp.receiver_mbps", [1000], [800]),
    _Series("qemu_x86/passt", "udp.receiver_mbps", [100], [96]),
    _Series("qemu_x86/passt", "rr.transactions", [5000], [4850], "trans/s"),
)
LEARNED = "21 measurements of main@abc1234"


def noisy_comparison() -> Comparison:
    """Stochastic tools on two boards, as the App sees them (``NOISY``)."""
    base, head = SideReport(), SideReport()
    for series in NOISY:
        for index, (report, values) in enumerate(((base, series.base), (head, series.head))):
            settings = settings_of(streams=series.streams[index]) if series.streams else ()
            for value in values:
                measurement = Measurement(
                    series.platform,
                    series.name,
                    float(value),
                    series.unit,
                    series.better,
                    scale=series.scale,
                    settings=settings,
                )
                report.add(measurement, deterministic=False)
    known = {
        ("qemu_x86/passt", "udp.receiver_mbps"): Noise(0.003, 20, Source.LEARNED, LEARNED),
        ("qemu_x86/passt", "rr.transactions"): Noise(0.05, 20, Source.LEARNED, LEARNED),
    }
    return compare(base, head, noise=known)


def noisy_body() -> str:
    return render(noisy_comparison(), RenderContext(footer=Footer.APP))


def test_the_noisy_comment_matches_the_golden_file() -> None:
    expected = (REPO / "tests" / "golden" / "noise.md").read_text(encoding="utf-8")
    assert noisy_body() == expected


def accepted_body() -> str:
    """The noisy comment with one regression accepted now and one accepted before that
    regressed further since."""
    earlier = Accepted("fpga-vu13p", "udp_rx.receiver_mbps", (), 96.0, "writer", "known", "e" * 40)
    comparison = acceptance.judge(noisy_comparison(), [earlier])
    keys = acceptance.acceptable(comparison, ["tcp_rx.*"])
    accepted = acceptance.accept(
        comparison, keys, login="writer", reason="larger buffers @team", sha="a" * 40
    )
    return render(accepted, RenderContext(footer=Footer.APP))


def test_the_accepted_comment_matches_the_golden_file() -> None:
    expected = (REPO / "tests" / "golden" / "accepted.md").read_text(encoding="utf-8")
    assert accepted_body() == expected


if __name__ == "__main__":
    import sys

    print(accepted_body() if sys.argv[1:] == ["accepted"] else noisy_body(), end="")
