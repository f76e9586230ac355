"""A case whose runs disagree in settings: one notice per case and side, naming the file
kept, each file left out and only the settings that differ, in the comment and on the
terminal alike, never cut before the difference.

Inputs are real ``iperf3 -J`` runs on loopback (tests/data/iperf3/, see its commands.log):
``tcp_P1.json`` (-P 1), ``tcp_P2.json`` (-P 2), ``tcp_O1.json`` (-O 1) and
``tcp_P1_again.json`` (-P 1 again). The same with iperf3 run now: test_runs_left_out_live.
"""

from __future__ import annotations

import html
import re

from perfbot.engine.judge.judgement import judge_report
from perfbot.engine.read import platforms
from perfbot.engine.read.report import read_report
from perfbot.engine.read.runs import RunsLeftOut
from perfbot.engine.read.sides import ReportFile, SideReport, read_side
from perfbot.engine.show import terminal
from perfbot.engine.show.export import comparison_document
from perfbot.engine.show.render import headline, render
from perfbot.engine.show.singlerun import run_markdown
from perfbot.model import settings_of
from tests.paths import REPO

DATA = REPO / "tests" / "data" / "iperf3"
METRICS = 4  # receiver_mbps, retransmits, cpu_host_percent, cpu_remote_percent
KEPT_SETTINGS = settings_of(
    protocol="TCP",
    streams=1,
    duration=2,
    omit=0,
    target_bitrate=0,
    blksize=131072,
    reverse=False,
    bidir=False,
)
EXPECTED = (
    "`tcp_rx_2.json` ran with streams 2, `tcp_rx_3.json` with omit 1; "
    "kept `tcp_rx_1.json` (streams 1, omit 0)"
)


def fixture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def disagreeing_runs(platform: str = "loopback") -> list[ReportFile]:
    """Three base runs of tcp_rx, the second with -P 2, the third with -O 1; one head run."""
    return [
        ReportFile(f"base/{platform}/tcp_rx_1.json", fixture("tcp_P1.json")),
        ReportFile(f"base/{platform}/tcp_rx_2.json", fixture("tcp_P2.json")),
        ReportFile(f"base/{platform}/tcp_rx_3.json", fixture("tcp_O1.json")),
        ReportFile(f"head/{platform}/tcp_rx_1.json", fixture("tcp_P1_again.json")),
    ]


def as_text(markdown_line: str) -> str:
    """A comment line as a reader sees it: <code> as backticks, references decoded."""
    return html.unescape(re.sub(r"</?code>", "`", markdown_line)).replace("\u200b", "")


def test_the_side_says_once_which_files_were_left_out_and_with_which_settings() -> None:
    side = read_side(
        ReportFile(f.path.removeprefix("base/"), f.data)
        for f in disagreeing_runs()
        if f.path.startswith("base/")
    )
    assert side.failures == []  # no longer one "failure" per metric and file
    (runs,) = side.left_out
    assert runs == RunsLeftOut(
        "loopback",
        "tcp_rx",
        ("tcp_rx_1.json",),
        KEPT_SETTINGS,
        (
            ("tcp_rx_2.json", dict_replaced(KEPT_SETTINGS, streams="2")),
            ("tcp_rx_3.json", dict_replaced(KEPT_SETTINGS, omit="1")),
        ),
    )
    # Every metric of the case kept the first run's sample only.
    case = [s for (_, metric), s in side.series.items() if metric.startswith("tcp_rx.")]
    assert len(case) == METRICS
    assert all(len(series.samples) == 1 for series in case)


def dict_replaced(
    settings: tuple[tuple[str, str], ...], **values: str
) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({**dict(settings), **values}.items()))


def test_the_comment_gives_one_line_per_case_and_side_naming_only_the_differences() -> None:
    comparison = judge_report(read_report(disagreeing_runs())).comparison
    body = render(comparison)
    lines = [line for line in body.splitlines() if "tcp_rx_2" in line]
    (line,) = lines  # not 8 lines, one per metric and file
    assert as_text(line) == f"⚠️ `tcp_rx` (base): {EXPECTED}  "
    for setting in ("blksize", "duration", "protocol", "target_bitrate"):
        assert setting not in line  # only the settings that differ
    assert headline(comparison).startswith("1 case with runs left out")
    (overview,) = [line for line in body.splitlines() if line.startswith("| <code>loopback")]
    assert "⚠️ 1 with runs left out" in overview
    assert "#### <code>loopback</code>" in body  # the platform stays open to show it


def test_the_terminal_says_the_same_in_full() -> None:
    comparison = judge_report(read_report(disagreeing_runs())).comparison
    table = terminal.comparison_table(comparison)
    (line,) = [line for line in table.splitlines() if "tcp_rx_2" in line]
    assert line == f"  ! base loopback: tcp_rx: {EXPECTED.replace('`', '')}"


def test_long_and_hostile_names_never_cut_the_difference() -> None:
    name = "run_<b>@octocat_#12_" + "x" * 300
    files = [
        ReportFile(f"base/lab/{name}_1.json", fixture("tcp_P1.json")),
        ReportFile(f"base/lab/{name}_2.json", fixture("tcp_P2.json")),
        ReportFile(f"base/lab/{name}_3.json", fixture("tcp_O1.json")),
        ReportFile("head/lab/tcp_1.json", fixture("tcp_P1_again.json")),
    ]
    comparison = judge_report(read_report(files)).comparison
    (line,) = [line for line in terminal.comparison_table(comparison).splitlines() if " ! " in line]
    # Each name is cut on its own; the settings that differ are all there.
    assert "… ran with streams 2, " in line
    assert "… with omit 1; kept " in line
    assert line.endswith("… (streams 1, omit 0)")
    assert "x" * 61 not in line
    body = render(comparison)
    (markdown,) = [line for line in body.splitlines() if line.startswith("⚠️")]
    assert markdown.endswith("(streams 1, omit 0)  ")
    assert "<b>" not in markdown
    assert not re.search(r"@\w", html.unescape(markdown))
    assert not re.search(r"#\d", html.unescape(markdown))


def test_many_files_left_out_are_grouped_and_counted() -> None:
    files = [ReportFile("base/lab/tcp_1.json", fixture("tcp_P1.json"))]
    files += [ReportFile(f"base/lab/tcp_{i}.json", fixture("tcp_P2.json")) for i in range(2, 7)]
    files += [ReportFile("base/lab/tcp_7.json", fixture("tcp_P1_again.json"))]
    files += [ReportFile("head/lab/tcp_1.json", fixture("tcp_P1_again.json"))]
    comparison = judge_report(read_report(files)).comparison
    (line,) = [line for line in render(comparison).splitlines() if line.startswith("⚠️")]
    assert as_text(line) == (
        "⚠️ `tcp` (base): `tcp_2.json`, `tcp_3.json`, `tcp_4.json` and 2 more ran with "
        "streams 2; kept `tcp_1.json` and `tcp_7.json` (streams 1)  "
    )


def test_each_side_gets_its_own_notice() -> None:
    files = disagreeing_runs()
    files += [ReportFile("head/loopback/tcp_rx_2.json", fixture("tcp_P2.json"))]
    comparison = judge_report(read_report(files)).comparison
    said = [as_text(line) for line in render(comparison).splitlines() if line.startswith("⚠️")]
    assert said == [
        f"⚠️ `tcp_rx` (base): {EXPECTED}  ",
        "⚠️ `tcp_rx` (PR): `tcp_rx_2.json` ran with streams 2; kept `tcp_rx_1.json` (streams 1)  ",
    ]
    assert headline(comparison).startswith("2 cases with runs left out")


def test_the_json_document_lists_the_files_left_out() -> None:
    comparison = judge_report(read_report(disagreeing_runs())).comparison
    document = comparison_document(comparison)
    assert document["failures"] == []
    (left,) = document["runs_left_out"]
    assert (left["side"], left["platform"], left["case"], left["kept"]) == (
        "base",
        "loopback",
        "tcp_rx",
        ["tcp_rx_1.json"],
    )
    assert [
        (f["file"], f["settings"]["streams"], f["settings"]["omit"]) for f in left["left_out"]
    ] == [
        ("tcp_rx_2.json", "2", "0"),
        ("tcp_rx_3.json", "1", "1"),
    ]


def test_choosing_and_lining_up_platforms_keeps_the_notice_with_its_platform() -> None:
    assert read_report(disagreeing_runs(), wanted=["other"]).base.left_out == []
    (kept,) = read_report(disagreeing_runs(), wanted=["loopback"]).base.left_out
    assert kept.platform == "loopback"
    # A board folder compared as the other side's twister platform takes the notice along.
    base = read_side(
        ReportFile(f.path.removeprefix("base/"), f.data)
        for f in disagreeing_runs("qemu_x86")
        if f.path.startswith("base/")
    )
    head = SideReport()
    head.series[("qemu_x86/atom", "tcp_rx.receiver_mbps")] = base.series[
        ("qemu_x86", "tcp_rx.receiver_mbps")
    ]
    base, _, _ = platforms.line_up(base, head)
    (renamed,) = base.left_out
    assert renamed.platform == "qemu_x86/atom"


def test_a_single_run_names_its_files_left_out_too() -> None:
    side = read_side(
        ReportFile(f.path.removeprefix("base/"), f.data)
        for f in disagreeing_runs()
        if f.path.startswith("base/")
    )
    assert as_text(run_markdown(side)).splitlines()[-1] == f"- `loopback` `tcp_rx`: {EXPECTED}"
    assert terminal.run_table(side).splitlines()[-1] == (
        f"  ! loopback: tcp_rx: {EXPECTED.replace('`', '')}"
    )
