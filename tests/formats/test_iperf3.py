"""Tests of the iperf3 parser against real iperf3 output and hostile input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perfbot.engine.read.formats._base import SNIFF_BYTES
from perfbot.engine.read.formats.iperf3 import FORMAT, MAX_REASON
from perfbot.errors import ParseError
from perfbot.model import Better, Measurement, ParseContext, Parsed, Scale
from tests.paths import REPO, shared

GENERATED = "generated/iperf3/"
THIRD_PARTY = "iperf3-third-party/"


# Our own runs of iperf 3.12 on loopback (commands in tests/data/iperf3/commands.log).
OWN = REPO / "tests" / "data" / "iperf3"


def read(relative: str) -> str:
    return shared(relative).read_text(encoding="utf-8")


def own(name: str) -> str:
    return (OWN / name).read_text(encoding="utf-8")


def parse(text: str, case: str = "tcp") -> Parsed:
    return FORMAT.parse(text, ParseContext(path="report.json", platform="p", case=case))


def values(parsed: Parsed) -> dict[str, float]:
    return {m.metric: m.value for m in parsed.measurements}


def only_failure(parsed: Parsed) -> str:
    """The reason of the single failed case, checking that it carries no measurement."""
    assert parsed.measurements == ()
    assert len(parsed.failures) == 1
    failure = parsed.failures[0]
    assert (failure.platform, failure.case, failure.whole_platform) == ("p", "tcp", False)
    assert "\n" not in failure.reason
    assert len(failure.reason) <= MAX_REASON
    return failure.reason


def fixture_report(relative: str) -> dict[str, Any]:
    report = json.loads(read(relative))
    assert isinstance(report, dict)
    return report


# Expected numbers are copied by hand from the fixtures' `end` sections.
@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        pytest.param(
            GENERATED + "tcp.json",
            {
                "tcp.receiver_mbps": 18219.87180094621,
                "tcp.retransmits": 17,
                "tcp.cpu_host_percent": 93.66912278796693,
                "tcp.cpu_remote_percent": 42.66857831713895,
            },
            id="tcp",
        ),
        pytest.param(
            GENERATED + "tcp_reverse.json",
            {
                "tcp.receiver_mbps": 21228.6834462375,
                "tcp.retransmits": 4,
                "tcp.cpu_host_percent": 41.8296772774754,
                "tcp.cpu_remote_percent": 96.1381883486033,
            },
            id="tcp-reverse",
        ),
        pytest.param(
            GENERATED + "tcp_bidir.json",
            {
                "tcp.forward_mbps": 8901.38480522381,
                "tcp.reverse_mbps": 8398.610906933413,
                "tcp.total_mbps": 8901.38480522381 + 8398.610906933413,
                "tcp.retransmits": 16,
                "tcp.cpu_host_percent": 52.14834393051573,
                "tcp.cpu_remote_percent": 51.619667396962754,
            },
            id="tcp-bidir",
        ),
        pytest.param(
            GENERATED + "udp_18M.json",
            {
                "tcp.receiver_mbps": 17.996627525564376,
                "tcp.lost_percent": 0,
                "tcp.lost_packets": 0,
                "tcp.packets": 4585,
                "tcp.jitter_ms": 0.021098636620453685,
                "tcp.cpu_host_percent": 4.56638440810503,
                "tcp.cpu_remote_percent": 1.3061878599991135,
            },
            id="udp-18M",
        ),
        pytest.param(
            GENERATED + "udp_2G_loss.json",
            {
                "tcp.receiver_mbps": 946.6053178894826,
                "tcp.lost_percent": 43.555176988976065,
                "tcp.lost_packets": 186130,
                "tcp.packets": 427306,
                "tcp.jitter_ms": 0.009759196195447156,
                "tcp.cpu_host_percent": 77.16420407099687,
                "tcp.cpu_remote_percent": 33.62320463607436,
            },
            id="udp-2G-loss",
        ),
        pytest.param(
            THIRD_PARTY + "iperf-3.6_tcp_cloud.json",
            {
                "tcp.receiver_mbps": 100.33448626151854,
                "tcp.retransmits": 0,
                "tcp.cpu_host_percent": 2.989306095341874,
                "tcp.cpu_remote_percent": 0.9225961252106615,
            },
            id="3.6-bytes-bounded-no-sender-keys",
        ),
        pytest.param(
            THIRD_PARTY + "iperf-3.9_tcp_omit3_cloud.json",
            {
                "tcp.receiver_mbps": 118.24545361021909,
                "tcp.retransmits": 0,
                "tcp.cpu_host_percent": 1.6648354839963564,
                "tcp.cpu_remote_percent": 0.7485701361219296,
            },
            id="3.9-omit3",
        ),
    ],
)
def test_fixture_metrics(relative: str, expected: dict[str, float]) -> None:
    parsed = parse(read(relative))
    assert parsed.failures == ()
    assert values(parsed) == pytest.approx(expected, rel=1e-12)


def test_metric_units_and_directions() -> None:
    tcp = {m.metric: m for m in parse(read(GENERATED + "tcp.json")).measurements}
    udp = {m.metric: m for m in parse(read(GENERATED + "udp_18M.json")).measurements}
    bidir = {m.metric: m for m in parse(read(GENERATED + "tcp_bidir.json")).measurements}

    def shape(m: Measurement) -> tuple[str, str, Better]:
        return (m.platform, m.unit, m.better)

    assert shape(tcp["tcp.receiver_mbps"]) == ("p", "Mbps", Better.HIGHER)
    assert shape(tcp["tcp.retransmits"]) == ("p", "", Better.LOWER)
    assert shape(udp["tcp.lost_percent"]) == ("p", "%", Better.LOWER)
    assert shape(udp["tcp.jitter_ms"]) == ("p", "ms", Better.LOWER)
    assert shape(bidir["tcp.forward_mbps"]) == ("p", "Mbps", Better.HIGHER)
    assert shape(bidir["tcp.reverse_mbps"]) == ("p", "Mbps", Better.HIGHER)


def test_case_name_prefixes_every_metric() -> None:
    parsed = FORMAT.parse(
        read(GENERATED + "tcp.json"), ParseContext(path="x.json", platform="q", case="lan")
    )
    assert sorted(values(parsed)) == [
        "lan.cpu_host_percent",
        "lan.cpu_remote_percent",
        "lan.receiver_mbps",
        "lan.retransmits",
    ]
    assert {m.platform for m in parsed.measurements} == {"q"}


def test_udp_goodput_is_the_receiver_rate_not_the_sent_rate() -> None:
    receiver_mbps = values(parse(read(GENERATED + "udp_2G_loss.json")))["tcp.receiver_mbps"]
    assert receiver_mbps == pytest.approx(946.6, abs=0.1)  # end.sum says 1677 (the sender's)


def test_udp_before_3_11_computes_goodput_from_sum_and_loss() -> None:
    report = fixture_report(GENERATED + "udp_2G_loss.json")
    del report["end"]["sum_sent"], report["end"]["sum_received"]
    got = values(parse(json.dumps(report)))
    assert got == pytest.approx(
        {
            "tcp.receiver_mbps": 1677.4581311395628 * (1 - 0.43555176988976065),
            "tcp.lost_percent": 43.555176988976065,
            "tcp.lost_packets": 186130,
            # end.sum counts the packets sent (sum_received: the receiver's 427306).
            "tcp.packets": 427343,
            "tcp.jitter_ms": 0.009759196195447156,
            "tcp.cpu_host_percent": 77.16420407099687,
            "tcp.cpu_remote_percent": 33.62320463607436,
        }
    )


def test_parallel_streams_use_the_aggregated_sum() -> None:
    report = fixture_report(GENERATED + "tcp.json")
    stream = report["end"]["streams"][0]
    report["end"]["streams"] = [stream, stream, stream]
    report["end"]["sum_received"]["bits_per_second"] = 3e9
    assert values(parse(json.dumps(report)))["tcp.receiver_mbps"] == pytest.approx(3000.0)


def test_old_tcp_without_retransmits_has_no_retransmit_metric() -> None:
    report = fixture_report(GENERATED + "tcp.json")
    del report["end"]["sum_sent"]["retransmits"]
    assert sorted(values(parse(json.dumps(report)))) == [
        "tcp.cpu_host_percent",
        "tcp.cpu_remote_percent",
        "tcp.receiver_mbps",
    ]


def test_connection_refused_is_a_failed_case() -> None:
    reason = only_failure(parse(read(GENERATED + "error_conn_refused.json")))
    assert reason == "iperf3 reported an error: unable to connect to server: Connection refused"


def test_truncated_run_without_error_key_is_a_failed_case() -> None:
    reason = only_failure(parse(read(THIRD_PARTY + "iperf-3.9_truncated_no-error-key.json")))
    assert "no end-of-test summary" in reason


def test_human_readable_output_handed_to_the_json_format_is_read_as_text() -> None:
    # Was refused with "run iperf3 with -J"; the iperf3-text format now reads it.
    parsed = parse(read(GENERATED + "tcp_text.txt"))
    assert parsed.failures == ()
    assert values(parsed) == pytest.approx({"tcp.receiver_mbps": 17600, "tcp.retransmits": 11})


def test_old_style_error_prefix_is_stripped() -> None:
    report = fixture_report(GENERATED + "error_conn_refused.json")
    report["error"] = "error - unable to connect to server: Connection refused"
    reason = only_failure(parse(json.dumps(report)))
    assert reason == "iperf3 reported an error: unable to connect to server: Connection refused"


def test_long_multiline_error_is_one_short_line() -> None:
    report = fixture_report(GENERATED + "error_conn_refused.json")
    report["error"] = "first line\nsecond line " + "x" * 500
    reason = only_failure(parse(json.dumps(report)))
    assert reason.startswith("iperf3 reported an error: first line second line xxx")
    assert len(reason) == MAX_REASON


def test_error_key_wins_over_a_complete_summary() -> None:
    report = fixture_report(GENERATED + "tcp.json")
    report["error"] = "the server has terminated"
    assert "the server has terminated" in only_failure(parse(json.dumps(report)))


def test_zero_bytes_received_is_a_failed_case() -> None:
    report = fixture_report(GENERATED + "tcp.json")
    report["end"]["sum_received"]["bytes"] = 0
    report["end"]["sum_received"]["bits_per_second"] = 0
    assert "no data" in only_failure(parse(json.dumps(report)))


def test_zero_bytes_in_the_reverse_direction_fails_the_bidir_case() -> None:
    report = fixture_report(GENERATED + "tcp_bidir.json")
    report["end"]["sum_received_bidir_reverse"]["bytes"] = 0
    assert "no data" in only_failure(parse(json.dumps(report)))


def test_warning_lines_before_the_json_are_ignored() -> None:
    text = "warning: Report format (-f) flag ignored with JSON output (-J)\n"
    parsed = parse(text + read(GENERATED + "tcp.json"))
    assert values(parsed)["tcp.receiver_mbps"] == pytest.approx(18219.87180094621)


def test_trailing_iperf3_error_line_becomes_the_reason() -> None:
    text = read(GENERATED + "tcp.json") + "\niperf3: error - the server has terminated\n"
    reason = only_failure(parse(text))
    assert reason == "iperf3 reported an error: the server has terminated"


def test_bare_nan_values_make_that_metric_absent() -> None:
    text = read(GENERATED + "udp_18M.json").replace(
        '"jitter_ms":\t0.021098636620453685', '"jitter_ms":\t-nan'
    )
    assert "-nan" in text
    parsed = parse(text)
    assert parsed.failures == ()
    assert "tcp.jitter_ms" not in values(parsed)
    assert sorted(values(parsed)) == [
        "tcp.cpu_host_percent",
        "tcp.cpu_remote_percent",
        "tcp.lost_packets",
        "tcp.lost_percent",
        "tcp.packets",
        "tcp.receiver_mbps",
    ]


def test_truncated_json_is_a_failed_case() -> None:
    text = read(GENERATED + "tcp.json")
    reason = only_failure(parse(text[: len(text) // 2]))
    assert reason == "truncated or invalid iperf3 JSON output"


def test_truncated_json_with_error_line_reports_the_error() -> None:
    text = read(GENERATED + "tcp.json")
    text = text[: len(text) // 2] + "\niperf3: interrupt - the client has terminated\n"
    reason = only_failure(parse(text))
    assert reason == "iperf3 reported an error: the client has terminated"


def stream_text(*events: tuple[str, Any]) -> str:
    return "\n".join(json.dumps({"event": kind, "data": data}) for kind, data in events) + "\n"


def test_json_stream_reads_the_end_event() -> None:
    tcp = fixture_report(GENERATED + "tcp.json")
    text = stream_text(
        ("start", tcp["start"]), ("interval", tcp["intervals"][0]), ("end", tcp["end"])
    )
    assert FORMAT.sniff(text, "x.json") >= 0.9
    assert values(parse(text)) == pytest.approx(values(parse(read(GENERATED + "tcp.json"))))
    assert values(parse(text))["tcp.receiver_mbps"] == pytest.approx(18219.87180094621)


def test_json_stream_error_event_is_a_failed_case() -> None:
    tcp = fixture_report(GENERATED + "tcp.json")
    text = stream_text(("start", tcp["start"]), ("error", "unable to connect to server"))
    assert only_failure(parse(text)) == "iperf3 reported an error: unable to connect to server"


def test_json_stream_single_error_line_is_a_failed_case() -> None:
    text = stream_text(("error", "the server is busy running a test. try again later"))
    assert "server is busy" in only_failure(parse(text))


def test_json_stream_cut_short_has_no_summary() -> None:
    tcp = fixture_report(GENERATED + "tcp.json")
    text = stream_text(("start", tcp["start"]), ("interval", tcp["intervals"][0]))
    text += '{"event": "interval", "data": {"str'
    assert "no end-of-test summary" in only_failure(parse(text))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n\t", id="blank"),
        pytest.param("[1, 2, 3]", id="json-list"),
        pytest.param('"iperf 3"', id="json-string"),
        pytest.param('{"a": ' * 100_000 + "1" + "}" * 100_000, id="deeply-nested-object"),
        pytest.param("[" * 100_000 + "]" * 100_000, id="deeply-nested-list"),
        pytest.param("\x00\xff\xfe\x01 junk \x7f\x80", id="binary-junk"),
        pytest.param("\x00{\x01}\x02{", id="junk-with-braces"),
        pytest.param("nan", id="nan-text"),
        pytest.param('{"answer": 42}', id="generic-object"),
    ],
)
def test_hostile_input_not_iperf3_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert "iperf3" in str(caught.value)


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        pytest.param({"sum_received": {"bits_per_second": "fast"}}, "no usable", id="string"),
        pytest.param({"sum_received": {"bits_per_second": True}}, "no usable", id="bool"),
        pytest.param({"sum_received": {"bits_per_second": -5.0}}, "no usable", id="negative"),
        pytest.param({"sum_received": {"bits_per_second": None}}, "no usable", id="null"),
        pytest.param({"sum_received": "fast"}, "no usable", id="section-not-object"),
        pytest.param({"sum_sent": {"bits_per_second": 1e9}}, "no usable", id="sender-only"),
        pytest.param({"sum_received": {"bits_per_second": 0}}, "no data", id="zero-rate"),
        pytest.param([], "no end-of-test summary", id="end-list"),
        pytest.param({}, "no end-of-test summary", id="end-empty"),
    ],
)
def test_hostile_summary_is_a_failed_case(end: Any, reason: str) -> None:
    assert reason in only_failure(parse(json.dumps({"start": {}, "end": end})))


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("NaN", id="NaN"),
        pytest.param("nan", id="nan"),
        pytest.param("-Infinity", id="-Infinity"),
        pytest.param("1e400", id="overflow"),
    ],
)
def test_non_finite_throughput_is_a_failed_case(raw: str) -> None:
    summary = '{"sum_received": {"bytes": 5, "bits_per_second": ' + raw + "}}"
    text = '{"start": {}, "end": ' + summary + "}"
    assert "no usable" in only_failure(parse(text))


def test_non_finite_secondary_metric_is_absent() -> None:
    text = (
        '{"end": {"sum_sent": {"retransmits": 1e400}, '
        '"sum_received": {"bytes": 5, "bits_per_second": 2e6}}}'
    )
    assert values(parse(text)) == {"tcp.receiver_mbps": 2.0}


IPERF3_FILES = [
    GENERATED + "tcp.json",
    GENERATED + "tcp_reverse.json",
    GENERATED + "tcp_bidir.json",
    GENERATED + "udp_18M.json",
    GENERATED + "udp_2G_loss.json",
    GENERATED + "error_conn_refused.json",
    THIRD_PARTY + "iperf-3.6_tcp_cloud.json",
    THIRD_PARTY + "iperf-3.9_tcp_omit3_cloud.json",
    THIRD_PARTY + "iperf-3.9_truncated_no-error-key.json",
]


@pytest.mark.parametrize("relative", IPERF3_FILES, ids=lambda r: r.rsplit("/", 1)[-1])
def test_sniff_claims_iperf3_output(relative: str) -> None:
    assert FORMAT.sniff(read(relative)[:SNIFF_BYTES], "report.bin") >= 0.9


@pytest.mark.parametrize(
    "relative",
    [
        "zephyr-twister/uw-assignment10_qemu_passed_v3.4.twister.json",
        "zephyr-twister/ncs-devacademy_build-only_not-run-and-error.twister.json",
        "generated/netperf/tcp_stream_default.txt",
        "generated/netperf/tcp_rr_o_csv.txt",
        "generated/netperf/error_no_netserver.txt",
        "zephyr-zperf/README-loopback-icount_expected_output.txt",
        # Human-readable output is the iperf3-text format's.
        "generated/iperf3/tcp_text.txt",
    ],
    ids=lambda r: r.rsplit("/", 1)[-1],
)
def test_sniff_rejects_other_formats(relative: str) -> None:
    assert FORMAT.sniff(read(relative)[:SNIFF_BYTES], "iperf3.json") == 0.0


@pytest.mark.parametrize(
    "head",
    [
        pytest.param("", id="empty"),
        pytest.param('{"start": 1, "end": 2, "intervals": []}', id="generic-json"),
        pytest.param('{"start": {"time": 1}, "end": {"time": 2}}', id="time-span-json"),
        pytest.param("[1, 2]", id="json-list"),
    ],
)
def test_sniff_rejects_generic_content(head: str) -> None:
    assert FORMAT.sniff(head, "iperf3.json") == 0.0


def test_format_identity() -> None:
    assert FORMAT.name == "iperf3"
    assert "-J" in FORMAT.reads


def test_udp_loss_and_jitter_prefer_the_receiver_section() -> None:
    report = fixture_report(GENERATED + "udp_2G_loss.json")
    report["end"]["sum"]["lost_percent"] = 99.0
    report["end"]["sum"]["jitter_ms"] = 9.0
    got = values(parse(json.dumps(report)))
    assert got["tcp.lost_percent"] == pytest.approx(43.555176988976065)
    assert got["tcp.jitter_ms"] == pytest.approx(0.009759196195447156)


def test_sniff_claims_iperf3_json_without_a_version_string() -> None:
    report = fixture_report(GENERATED + "tcp.json")
    del report["start"]["version"]
    assert FORMAT.sniff(json.dumps(report, indent="\t"), "report.bin") >= 0.9


def test_sniff_rejects_other_event_streams() -> None:
    head = stream_text(("start", {"user": "x"}), ("end", {"took": 3}))
    assert FORMAT.sniff(head, "events.json") == 0.0


def by_metric(text: str) -> dict[str, Measurement]:
    return {m.metric: m for m in parse(text).measurements}


def test_bidir_total_is_the_sum_of_the_two_receiver_rates_of_the_run() -> None:
    tcp = by_metric(read(GENERATED + "tcp_bidir.json"))
    total = tcp["tcp.total_mbps"]
    assert total.value == tcp["tcp.forward_mbps"].value + tcp["tcp.reverse_mbps"].value
    assert (total.unit, total.better, total.scale) == ("Mbps", Better.HIGHER, Scale.RATIO)
    report = fixture_report(GENERATED + "tcp_bidir.json")["end"]
    assert total.value == pytest.approx(
        (
            report["sum_received"]["bits_per_second"]
            + report["sum_received_bidir_reverse"]["bits_per_second"]
        )
        / 1e6,
        rel=1e-12,
    )


def test_udp_bidir_reports_each_directions_loss_and_the_total() -> None:
    udp = by_metric(own("udp_bidir_10M.json"))
    end = json.loads(own("udp_bidir_10M.json"))["end"]
    forward, reverse = end["sum_received"], end["sum_received_bidir_reverse"]
    assert udp["tcp.packets"].value == forward["packets"]
    assert udp["tcp.reverse_packets"].value == reverse["packets"]
    assert udp["tcp.reverse_lost_packets"].value == reverse["lost_packets"]
    assert udp["tcp.reverse_lost_percent"].value == reverse["lost_percent"]
    assert udp["tcp.total_mbps"].value == pytest.approx(
        (forward["bits_per_second"] + reverse["bits_per_second"]) / 1e6, rel=1e-12
    )


def test_udp_loss_with_packets_and_lost_packets() -> None:
    udp = by_metric(read(GENERATED + "udp_2G_loss.json"))
    lost, packets, percent = (
        udp["tcp.lost_packets"],
        udp["tcp.packets"],
        udp["tcp.lost_percent"],
    )
    assert (lost.value, packets.value) == (186130, 427306)
    received = fixture_report(GENERATED + "udp_2G_loss.json")["end"]["sum_received"]
    assert percent.value == received["lost_percent"]
    assert (lost.scale, lost.better, lost.unit) == (Scale.COUNT, Better.LOWER, "packets")
    # Packets are a volume (judged relative, like a rate), not an error counter.
    assert (packets.scale, packets.better) == (Scale.RATIO, Better.HIGHER)
    assert (percent.scale, percent.better) == (Scale.POINTS, Better.LOWER)


def test_scales_of_every_metric() -> None:
    scales = {
        m.metric: m.scale
        for name in ("tcp.json", "tcp_bidir.json", "udp_18M.json")
        for m in parse(read(GENERATED + name)).measurements
    }
    counted = {"tcp.retransmits", "tcp.lost_packets"}
    assert {metric for metric, scale in scales.items() if scale is Scale.COUNT} == counted
    assert {metric for metric, scale in scales.items() if scale is Scale.POINTS} == {
        "tcp.lost_percent"
    }


def test_cpu_utilisation_host_and_remote_lower_is_better() -> None:
    tcp = by_metric(read(GENERATED + "tcp.json"))
    cpu = fixture_report(GENERATED + "tcp.json")["end"]["cpu_utilization_percent"]
    host, remote = tcp["tcp.cpu_host_percent"], tcp["tcp.cpu_remote_percent"]
    assert (host.value, remote.value) == (cpu["host_total"], cpu["remote_total"])
    assert {(m.unit, m.better, m.scale) for m in (host, remote)} == {
        ("%", Better.LOWER, Scale.RATIO)
    }


def settings(text: str) -> dict[str, str]:
    """The one fingerprint that every measurement of a report carries."""
    (fingerprint,) = {m.settings for m in parse(text).measurements}
    return dict(fingerprint)


def test_settings_fingerprint_is_what_test_start_asked() -> None:
    assert settings(read(GENERATED + "udp_18M.json")) == {
        "protocol": "UDP",
        "streams": "1",
        "duration": "3",
        "omit": "0",
        "target_bitrate": "18000000",
        "blksize": "1472",
        "reverse": "no",
        "bidir": "no",
    }
    # Byte-bounded (-n): duration 0 and the byte count; no target_bitrate before 3.12.
    assert settings(read(THIRD_PARTY + "iperf-3.6_tcp_cloud.json")) == {
        "protocol": "TCP",
        "streams": "1",
        "duration": "0",
        "omit": "0",
        "blksize": "131072",
        "reverse": "no",
        "bidir": "no",
        "bytes": "209715200",
    }
    assert settings(read(THIRD_PARTY + "iperf-3.9_tcp_omit3_cloud.json"))["omit"] == "3"


def test_runs_asked_differently_have_different_fingerprints() -> None:
    one, again, two = (
        settings(own(n)) for n in ("tcp_P1.json", "tcp_P1_again.json", "tcp_P2.json")
    )
    assert one == again  # the same command twice: equal, whatever each measured
    assert (one["streams"], two["streams"]) == ("1", "2")
    assert {k for k in one if one[k] != two[k]} == {"streams"}
    tcp = settings(read(GENERATED + "tcp.json"))
    assert settings(read(GENERATED + "tcp_reverse.json")) == {**tcp, "reverse": "yes"}
    assert settings(read(GENERATED + "tcp_bidir.json")) == {**tcp, "bidir": "yes"}
    udp = settings(read(GENERATED + "udp_18M.json"))
    assert settings(read(GENERATED + "udp_2G_loss.json")) == {**udp, "target_bitrate": "2000000000"}


def test_a_fingerprint_holds_no_measured_value_host_port_or_time() -> None:
    text = own("tcp_P2.json")
    report = json.loads(text)
    stated = set(settings(text).values())
    connected = report["start"]["connected"][0]
    for value in (
        connected["local_port"],
        connected["remote_port"],
        connected["local_host"],
        report["start"]["timestamp"]["timesecs"],
        report["start"]["cookie"],
        report["end"]["sum_received"]["bytes"],
    ):
        assert str(value) not in stated
