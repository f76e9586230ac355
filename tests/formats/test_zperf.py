"""Tests of the zperf console-log parser against the upstream expected output and hostile logs."""

from __future__ import annotations

import json
import re

import pytest

from perfbot.engine.read.formats.zperf import FORMAT, INCOMPLETE_REASON
from perfbot.errors import ParseError
from perfbot.model import Better, FailedCase, ParseContext, Parsed
from tests.paths import shared

FIXTURE = "zephyr-zperf/README-loopback-icount_expected_output.txt"
CONTEXT = ParseContext(path="zperf.log", platform="p", case="c")


def parse(text: str) -> Parsed:
    return FORMAT.parse(text, CONTEXT)


def values(parsed: Parsed) -> list[tuple[str, float]]:
    return [(m.metric, m.value) for m in parsed.measurements]


def fixture_text() -> str:
    return shared(FIXTURE).read_text(encoding="utf-8")


def expected_from_fixture(text: str) -> list[tuple[str, float]]:
    """The fixture's results read independently of the parser: split on "=" after the tag."""
    pairs = []
    for line in text.splitlines():
        if line.startswith("ZPERF-RESULT "):
            marker, value = line.removeprefix("ZPERF-RESULT ").split("=")
            pairs.append((marker, float(value)))
    return pairs


def test_format_identity() -> None:
    assert FORMAT.name == "zperf"
    assert FORMAT.reads == "Zephyr zperf console log (ZPERF-RESULT lines)"


def test_fixture_yields_the_eight_results_in_order() -> None:
    text = fixture_text()
    parsed = parse(text)
    expected = expected_from_fixture(text)
    assert len(expected) == 8
    assert values(parsed) == expected
    assert parsed.failures == ()


def test_fixture_literal_values() -> None:
    got = dict(values(parse(fixture_text())))
    assert got["udp4_mbps"] == 13.099
    assert got["udp4_frag_mbps"] == 20.249
    assert got["tcp6_nodelay_mbps"] == 5.910


def test_fixture_units_directions_and_platform() -> None:
    parsed = parse(fixture_text())
    assert {m.unit for m in parsed.measurements} == {"Mbps"}
    assert {m.better for m in parsed.measurements} == {Better.HIGHER}
    assert {m.platform for m in parsed.measurements} == {"p"}


def test_fixture_is_sniffed() -> None:
    assert FORMAT.sniff(fixture_text(), "anything.txt") == 1.0


@pytest.mark.parametrize(
    "line",
    [
        "[00:00:12.340,000] <inf> net_zperf: ZPERF-RESULT tcp4_mbps=5.970",
        "\x1b[0m[00:00:12.340,000] <inf> net_zperf: ZPERF-RESULT tcp4_mbps=5.970\x1b[0m",
        "qemu-system-i386: warning: TSC ZPERF-RESULT tcp4_mbps=5.970\r",
        "  ZPERF-RESULT tcp4_mbps=5.970",
    ],
)
def test_prefixed_lines_parse_and_sniff(line: str) -> None:
    text = f"*** Booting Zephyr OS ***\n{line}\nZPERF-DONE\n"
    assert values(parse(text)) == [("tcp4_mbps", 5.970)]
    assert FORMAT.sniff(text, "x.log") == 1.0


def test_log_opening_with_a_timestamp_is_not_taken_for_json() -> None:
    text = "[00:00:12.340,000] <inf> net_zperf: ZPERF-RESULT tcp4_mbps=5.970\nZPERF-DONE\n"
    assert FORMAT.sniff(text, "x.log") == 1.0


def test_crlf_log() -> None:
    text = "ZPERF-RESULT udp4_mbps=13.099\r\nZPERF-RESULT tcp4_mbps=5.970\r\nZPERF-DONE\r\n"
    assert values(parse(text)) == [("udp4_mbps", 13.099), ("tcp4_mbps", 5.970)]


def test_missing_done_keeps_values_and_reports_failure() -> None:
    text = "ZPERF-RESULT udp4_mbps=13.099\nZPERF-RESULT udp4_frag_mbps=20.249\n"
    parsed = parse(text)
    assert values(parsed) == [("udp4_mbps", 13.099), ("udp4_frag_mbps", 20.249)]
    assert parsed.failures == (
        FailedCase(
            platform="p",
            case="c",
            reason="zperf run incomplete: no ZPERF-DONE line (the run was cut short or timed out)",
            whole_platform=False,
        ),
    )
    assert parsed.failures[0].reason == INCOMPLETE_REASON


def test_repeated_marker_gives_two_samples() -> None:
    text = "ZPERF-RESULT udp4_mbps=13.099\nZPERF-RESULT udp4_mbps=13.250\nZPERF-DONE\n"
    assert values(parse(text)) == [("udp4_mbps", 13.099), ("udp4_mbps", 13.250)]


def test_marker_is_kept_as_printed_with_its_guessed_unit_and_direction() -> None:
    text = "ZPERF-RESULT rx.latency_us=120\nZPERF-DONE\n"
    (measurement,) = parse(text).measurements
    assert measurement.metric == "rx.latency_us"
    assert measurement.unit == "µs"
    assert measurement.better is Better.LOWER


def test_no_result_line_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse("*** Booting Zephyr OS ***\nZPERF-DONE\n")
    assert caught.value.format == "zperf"
    assert caught.value.path == "zperf.log"
    assert "no ZPERF-RESULT line" in str(caught.value)


@pytest.mark.parametrize(
    "head",
    [
        "",
        "ZPERF-DONE\n",
        "some other console output\n",
        "ZPERF-RESULT udp4_mbps=nan\n",
        "ZPERF-RESULT =13.0\n",
    ],
)
def test_sniff_refuses_text_without_a_numeric_result(head: str) -> None:
    assert FORMAT.sniff(head, "zperf.log") == 0.0


def test_sniff_refuses_twister_json_quoting_zperf_lines() -> None:
    log = "ZPERF-RESULT udp4_mbps=13.099\nZPERF-DONE\n"
    twister = json.dumps(
        {"environment": {}, "testsuites": [{"status": "failed", "log": log}]},
        indent=4,
        separators=(",", ":"),
    )
    assert "ZPERF-RESULT udp4_mbps=13.099" in twister
    assert FORMAT.sniff(twister, "twister.json") == 0.0
    assert FORMAT.sniff("\n  " + twister, "twister.json") == 0.0


@pytest.mark.parametrize(
    "text",
    [
        '[\n    {"log": "ZPERF-RESULT udp4_mbps=13.099"}\n]',
        '["ZPERF-RESULT udp4_mbps=13.099"]',
        '[{"log":"ZPERF-RESULT udp4_mbps=13.099"}]',
    ],
)
def test_sniff_refuses_json_arrays(text: str) -> None:
    assert FORMAT.sniff(text, "x.json") == 0.0


def test_sniff_refuses_real_twister_fixture() -> None:
    path = shared("zephyr-twister/uw-assignment10_qemu_passed_v3.4.twister.json")
    assert FORMAT.sniff(path.read_text(encoding="utf-8"), str(path)) == 0.0


def test_non_finite_and_garbled_values_are_skipped() -> None:
    text = "\n".join(
        [
            "ZPERF-RESULT a=nan",
            "ZPERF-RESULT b=inf",
            "ZPERF-RESULT c=1e999",
            "ZPERF-RESULT d=-1e999",
            "ZPERF-RESULT e=",
            "ZPERF-RESULT f=13.099Mbps",
            "ZPERF-RESULT g=1.2.3",
            "ZPERF-RESULT ok_mbps=2.5",
            "ZPERF-DONE",
        ]
    )
    parsed = parse(text)
    assert values(parsed) == [("ok_mbps", 2.5)]
    assert parsed.failures == ()


def test_only_non_finite_values_give_no_measurement_but_no_crash() -> None:
    parsed = parse("ZPERF-RESULT a=nan\nZPERF-DONE\n")
    assert parsed == Parsed()


def test_binary_junk_around_a_result() -> None:
    junk = bytes(range(256)).decode("latin-1") * 50
    text = f"{junk}\nZPERF-RESULT udp4_mbps=13.099\x00\x07{junk}\nZPERF-DONE"
    assert values(parse(text)) == [("udp4_mbps", 13.099)]
    assert FORMAT.sniff(text[:65536], "junk.bin") == 1.0


def test_huge_marker_without_value_is_a_parse_error() -> None:
    text = "ZPERF-RESULT " + "a" * 2_000_000
    with pytest.raises(ParseError):
        parse(text)
    assert FORMAT.sniff(text[:65536], "x.log") == 0.0


def test_huge_value_is_skipped() -> None:
    text = "ZPERF-RESULT a_mbps=" + "9" * 1_000_000 + "\nZPERF-RESULT b_mbps=1.5\nZPERF-DONE"
    assert values(parse(text)) == [("b_mbps", 1.5)]


def test_huge_line_of_repeated_tags_stays_usable() -> None:
    text = "ZPERF-RESULT x " * 200_000 + "ZPERF-RESULT udp4_mbps=13.099\nZPERF-DONE"
    assert values(parse(text)) == [("udp4_mbps", 13.099)]


# What the zperf shell prints around an upload (execute_upload() and the statistics of
# Zephyr's subsys/net/lib/zperf/zperf_shell.c), before a ZPERF-RESULT line of the fixture.
SHELL_UPLOAD = (
    "uart:~$ zperf udp upload 192.0.2.2 5001 10 1K 10M\n"
    "Remote port is 5001\n"
    "Duration:\t10.00 s\n"
    "Packet size:\t1024 bytes\n"
    "Rate:\t\t10000 kbps\n"
    "Starting...\n"
    "Rate:\t\t10.00 Mbps\n"
    "Upload completed!\n"
    "Statistics:\t\tserver\t(client)\n"
    "Duration:\t\t10.00 s\t(10.00 s)\n"
    "Num packets:\t\t12207\t(12207)\n"
    "Rate:\t\t\t9.99 Mbps\t(9.99 Mbps)\n"
)


def test_the_self_test_states_no_settings() -> None:
    assert {m.settings for m in parse(fixture_text()).measurements} == {()}


def test_settings_the_shell_states_before_starting() -> None:
    lines = fixture_text().splitlines(keepends=True)
    text = (
        SHELL_UPLOAD
        + lines[0]
        + SHELL_UPLOAD.replace("1024 bytes", "512 bytes")
        + "".join(lines[1:])
    )
    first, second, *rest = parse(text).measurements
    assert dict(first.settings) == {
        "duration": "10.00 s",
        "packet_size": "1024",
        "rate_kbps": "10000",
    }
    # The statistics after "Starting..." (Rate 9.99 Mbps, Duration 10.00 s (10.00 s)) are
    # measured, never settings; the next upload's own header replaces the first.
    assert dict(second.settings)["packet_size"] == "512"
    assert {m.settings for m in rest} == {second.settings}


def first_result_of_each_line(text: str) -> list[tuple[str, float]]:
    """The reading line by line that a log without settings is spared: the first result of
    each line ``str.splitlines`` gives, its value a plain decimal."""
    found = []
    for line in text.splitlines():
        match = re.search(r"ZPERF-RESULT ([A-Za-z0-9_.-]+)=([0-9A-Za-z.,+-]*)", line)
        if match and re.fullmatch(r"[0-9]+(\.[0-9]*)?", match[2]):
            found.append((match[1], float(match[2])))
    return found


@pytest.mark.parametrize(
    "text",
    [
        "ZPERF-RESULT a_mbps=1 ZPERF-RESULT b_mbps=2\nZPERF-RESULT c_mbps=3\n",
        "ZPERF-RESULT =1 ZPERF-RESULT a=2\n",
        "[00:00:01] ZPERF-RESULT a=1.5\x1b[0m ZPERF-RESULT b=7\r\nZPERF-RESULT c=2.\n",
        "ZPERF-RESULT a=nan ZPERF-RESULT b=3\nZPERF-RESULT c=4\n",
        *(
            f"ZPERF-RESULT a=1{brk}ZPERF-RESULT b=2 ZPERF-RESULT x=9{brk}ZPERF-RESULT c=3"
            for brk in ("\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85")
        ),
        "ZPERF-RESULT a=1\u2028ZPERF-RESULT b=2 ZPERF-RESULT x=9\u2029ZPERF-RESULT c=3\x1f4",
    ],
)
def test_a_log_without_settings_reads_the_first_result_of_every_line(text: str) -> None:
    expected = first_result_of_each_line(text)
    assert values(parse(text)) == expected
    # The same lines after a "Starting..." line, which makes the parser read line by line.
    assert values(parse("Starting...\n" + text)) == expected
