"""Reading a side: platforms from directories, cases from file names, unreadable files."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfbot.engine.read.formats import Format
from perfbot.engine.read.sides import ReportFile, case_of, platform_of, read_side, split_sides
from perfbot.model import Better, ParseContext, Parsed
from tests.paths import REPO

ZPERF = b"ZPERF-RESULT udp4_mbps=13.099\nZPERF-RESULT tcp4_mbps=5.970\nZPERF-DONE\n"


@pytest.mark.parametrize(
    ("path", "platform", "case"),
    [
        ("fpga-vu13p/tcp_rx_1.json", "fpga-vu13p", "tcp_rx"),
        ("fpga-vu13p/deeper/tcp_rx_12.json", "fpga-vu13p", "tcp_rx"),
        ("tcp_rx.json", "default", "tcp_rx"),
        ("udp_fpga_rx_20M_2.json", "default", "udp_fpga_rx_20M"),
        ("zperf.log", "default", "zperf"),
        ("README", "default", "README"),
        ("_1.json", "default", "_1"),
    ],
)
def test_platform_and_case_from_the_path(path: str, platform: str, case: str) -> None:
    assert platform_of(path) == platform
    assert case_of(path) == case


def test_samples_of_repeated_runs_are_grouped() -> None:
    files = [
        ReportFile("qemu_x86/zperf_1.log", ZPERF),
        ReportFile("qemu_x86/zperf_2.log", ZPERF.replace(b"13.099", b"13.2")),
    ]
    side = read_side(files)
    series = side.series[("qemu_x86", "udp4_mbps")]
    assert series.samples == [13.099, 13.2]
    assert series.unit == "Mbps"
    assert series.better is Better.HIGHER
    assert side.files_read == 2


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"", "empty file", id="empty"),
        pytest.param(b"   \n", "empty file", id="blank"),
        pytest.param(b"\x00\x01binary", "binary file", id="binary"),
        pytest.param(b"\xff\xfe caf\xe9", "not UTF-8 text", id="latin1"),
        pytest.param(b"hello world\n", "not a supported report format", id="unknown"),
        pytest.param(b'{"perfbot": 1, "metrics": {"name": "x"}}', "could not read as", id="bad"),
    ],
)
def test_unreadable_files_are_named_with_a_reason(data: bytes, reason: str) -> None:
    side = read_side([ReportFile("board/thing.json", data), ReportFile("board/z.log", ZPERF)])
    assert side.files_read == 1
    ((path, message),) = side.unreadable
    assert path == "board/thing.json"
    assert reason in message
    (failure,) = side.failures
    assert (failure.platform, failure.case) == ("board", "board/thing.json")


def test_hidden_files_are_skipped() -> None:
    side = read_side([ReportFile(".DS_Store", b"\x00junk"), ReportFile("z.log", ZPERF)])
    assert side.unreadable == []


def test_a_crashing_parser_costs_one_file() -> None:
    def explode(text: str, context: ParseContext) -> Parsed:
        raise RuntimeError("secret detail")

    crashing = Format("crashy", "anything", sniff=lambda head, path: 1.0, parse=explode)
    side = read_side([ReportFile("a.log", ZPERF)], registry=(crashing,))
    ((_, reason),) = side.unreadable
    assert "internal error" in reason
    assert "secret detail" not in reason


def test_unit_conflict_keeps_the_first_unit() -> None:
    json_mbps = b'{"perfbot": 1, "metrics": [{"name": "x", "value": 1, "unit": "Mbps"}]}'
    json_kbps = b'{"perfbot": 1, "metrics": [{"name": "x", "value": 1000, "unit": "kbps"}]}'
    side = read_side([ReportFile("a.json", json_mbps), ReportFile("b.json", json_kbps)])
    assert side.series[("default", "x")].samples == [1.0]
    assert "unit changed" in side.failures[0].reason


def test_split_sides_keeps_only_base_and_head_and_says_what_it_left_out() -> None:
    files = [
        ReportFile("base/a.log", b"1"),
        ReportFile("head/p/a.log", b"2"),
        ReportFile("other/a.log", b"3"),
        ReportFile("base", b"4"),
    ]
    sides = split_sides(files)
    assert [f.path for f in sides.files["base"]] == ["a.log"]
    assert [f.path for f in sides.files["head"]] == ["p/a.log"]
    assert sides.left_out == [
        ("other/a.log", "not under base/ or head/"),
        ("base", "not under base/ or head/"),
    ]


def test_a_case_variant_of_a_side_is_said_not_dropped() -> None:
    sides = split_sides([ReportFile("Base/p/a.log", b"1"), ReportFile("HEAD/p/a.log", b"2")])
    assert sides.files == {"base": [], "head": []}
    assert sides.left_out == [
        ("Base/p/a.log", "Base/ is not base/"),
        ("HEAD/p/a.log", "HEAD/ is not head/"),
    ]


def test_a_collision_is_a_failed_case_of_its_side() -> None:
    sides = split_sides(
        [ReportFile("head/p/b.log", b"1")],
        [("head/p/a.log", "head/p/a.log"), ("Base/", "base/"), ("x/", "X/")],
    )
    (head_failure,) = sides.failures["head"]
    assert (head_failure.platform, head_failure.case) == ("p", "p/a.log")
    assert "ambiguous: head/p/a.log, head/p/a.log are one path" in head_failure.reason
    (base_failure,) = sides.failures["base"]
    assert (base_failure.platform, base_failure.case) == ("default", "base/")
    assert "Base/, base/" in base_failure.reason
    ((name, reason),) = sides.left_out
    assert name == "x/"
    assert "ambiguous" in reason


SIDECARS = REPO / "tests" / "data" / "sidecars"


def lab_files(directory: Path) -> list[ReportFile]:
    """Files as a lab script saved them: the report, `<case>.exit` and `<case>.stderr`."""
    return [
        ReportFile(str(p.relative_to(directory)), p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    ]


def test_sidecars_are_not_reports_and_a_non_zero_exit_fails_its_run() -> None:
    # Real iperf3 runs: tcp_1 succeeded (exit 0, empty stderr); tcp_2 found no server.
    side = read_side(lab_files(SIDECARS))
    assert side.unreadable == []
    assert side.files_read == 1
    assert side.formats_seen == {"iperf3": 1}
    assert side.series[("board", "tcp.receiver_mbps")].samples
    (failure,) = side.failures
    assert (failure.platform, failure.case) == ("board", "tcp")
    assert failure.reason == (
        "run tcp_2 exited with status 1: iperf3: error - unable to connect to server: "
        "Connection refused"
    )


def test_a_non_zero_exit_leaves_the_runs_numbers_out() -> None:
    report = (SIDECARS / "board" / "tcp_1.json").read_bytes()
    side = read_side(
        [
            ReportFile("board/tcp_1.json", report),
            ReportFile("board/tcp_1.exit", b"137\n"),
            ReportFile("board/tcp_2.json", report),
            ReportFile("board/tcp_2.exit", b"0\n"),
            ReportFile("board/tcp_2.stderr", b"warning: something harmless\n"),
        ]
    )
    assert side.series[("board", "tcp.receiver_mbps")].samples == [pytest.approx(22906.295079)]
    (failure,) = side.failures
    assert failure.reason == "run tcp_1 exited with status 137"


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        pytest.param(
            [("board/udp.exit", b"2"), ("board/udp.stderr", b"\n\x1b[31mboom\x1b[0m\tnow\n2nd\n")],
            "run udp exited with status 2: boom now",
            id="no-report-ansi-stderr",
        ),
        pytest.param(
            [("board/udp.json.exit", b"exit status 3\n"), ("board/udp.json", b"{}")],
            "run udp.json exited with status 3",
            id="json-dot-exit",
        ),
        pytest.param(
            [("board/udp.exit", b"Killed\n"), ("board/udp.json", b"{}")],
            "run udp failed: its .exit file holds no exit status",
            id="garbage-exit",
        ),
    ],
)
def test_sidecar_failures(files: list[tuple[str, bytes]], reason: str) -> None:
    side = read_side([ReportFile(path, data) for path, data in files])
    assert side.files_read == 0
    assert side.unreadable == []
    (failure,) = side.failures
    assert (failure.platform, failure.reason) == ("board", reason)


def test_a_sidecar_reason_is_one_bounded_line() -> None:
    side = read_side(
        [ReportFile("b/x.exit", b"1"), ReportFile("b/x.stderr", ("é" * 500).encode() + b"\n")]
    )
    (failure,) = side.failures
    assert len(failure.reason) == 200
    assert failure.reason.endswith("…")
