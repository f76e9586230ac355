"""Tests of the netperf parser against real netperf 2.7.1 output, synthetic shapes and junk."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.read.formats.netperf import FORMAT, MAX_REASON
from perfbot.errors import ParseError
from perfbot.model import Better, ParseContext, Parsed, Scale
from tests.paths import shared

BANNER_STREAM = (
    "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET"
)
BANNER_RR = (
    "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () "
    "port 0 AF_INET : first burst 0"
)
BANNER_UDP = (
    "MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET"
)
STREAM_HEADER = (
    "Recv   Send    Send                          \n"
    "Socket Socket  Message  Elapsed              \n"
    "Size   Size    Size     Time     Throughput  \n"
    "bytes  bytes   bytes    secs.    {unit}  \n"
)
UDP_STREAM = (
    f"{BANNER_UDP}\n"
    "Socket  Message  Elapsed      Messages                \n"
    "Size    Size     Time         Okay Errors   Throughput\n"
    "bytes   bytes    secs            #      #   10^6bits/sec\n"
    "\n"
    "212992    1472   3.00      767324      0    3011.92\n"
    "212992           3.00      762998           2994.93\n"
)
STREAM_CPU = (
    f"{BANNER_STREAM}\n"
    "Recv   Send    Send                          Utilization       Service Demand\n"
    "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
    "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
    "bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n"
    "\n"
    "131072  16384  16384    3.00       24672.38   73.85    71.20    0.490   0.473\n"
)
KEYVAL_RR = (
    f"{BANNER_RR}\n"
    "MIN_LATENCY=13\n"
    "MEAN_LATENCY=66.77\n"
    "P99_LATENCY=102\n"
    "TRANSACTION_RATE=14929.009\n"
    "THROUGHPUT=14929.009\n"
    "THROUGHPUT_UNITS=Trans/s\n"
    "LOCAL_SEND_SIZE=1\n"
)
WARNING_BLOCK = (
    f"{BANNER_STREAM} : +/-2.500% @ 99% conf.\n"
    "!!! WARNING\n"
    "!!! Desired confidence was not achieved within the specified iterations.\n"
    "!!! This implies that there was variability in the test environment that\n"
    "!!! must be investigated before going further.\n"
    "!!! Confidence intervals: Throughput      : 160.435%\n"
    "!!!                       Local CPU util  : 0.000%\n"
    "!!!                       Remote CPU util : 0.000%\n"
    "\n" + STREAM_HEADER.format(unit="10^6bits/sec") + "\n"
    "131072  16384  16384    3.00     20127.39   \n"
)

Expected = dict[str, tuple[float, str, Better]]


def parse(text: str, case: str = "rr") -> Parsed:
    return FORMAT.parse(text, ParseContext(path=f"{case}.txt", platform="p", case=case))


def fixture(stem: str) -> str:
    return shared(f"generated/netperf/{stem}.txt").read_text(encoding="utf-8")


def table(parsed: Parsed) -> Expected:
    """Measurements by metric; also checks no metric was reported twice by accident."""
    metrics = [m.metric for m in parsed.measurements]
    assert len(metrics) == len(set(metrics))
    return {m.metric: (m.value, m.unit, m.better) for m in parsed.measurements}


def assert_failed(parsed: Parsed) -> str:
    """The one failed case of a broken run, with no measurement (zero or otherwise)."""
    assert parsed.measurements == ()
    assert len(parsed.failures) == 1
    failure = parsed.failures[0]
    assert (failure.platform, failure.case, failure.whole_platform) == ("p", "rr", False)
    assert "\n" not in failure.reason
    assert 0 < len(failure.reason) <= MAX_REASON
    return failure.reason


H, L = Better.HIGHER, Better.LOWER


def test_format_identity() -> None:
    assert FORMAT.name == "netperf"
    assert FORMAT.reads == (
        "netperf classic, -P 0, -o CSV, -O columns and -k key=value output (STREAM and RR)"
    )


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        pytest.param(
            "tcp_stream_default",
            {"rr.throughput": (20127.39, "Mbps", H)},
            id="classic-stream",
        ),
        pytest.param(
            "tcp_rr_default",
            {"rr.transaction_rate": (15104.84, "trans/s", H)},
            id="classic-rr",
        ),
        pytest.param(
            "tcp_stream_P0",
            {"rr.throughput": (19890.66, "Mbps", H)},
            id="P0-stream",
        ),
        pytest.param(
            "tcp_rr_P0",
            {"rr.transaction_rate": (12887.38, "trans/s", H)},
            id="P0-rr",
        ),
        pytest.param(
            "tcp_rr_o_csv",
            {
                "rr.min_latency_us": (13.0, "µs", L),
                "rr.mean_latency_us": (80.07, "µs", L),
                "rr.max_latency_us": (3267.0, "µs", L),
                "rr.stddev_latency_us": (36.53, "µs", L),
                "rr.p50_latency_us": (80.0, "µs", L),
                "rr.p90_latency_us": (97.0, "µs", L),
                "rr.p99_latency_us": (133.0, "µs", L),
                "rr.transaction_rate": (12441.177, "trans/s", H),
            },
            id="o-csv-rr",
        ),
    ],
)
def test_fixture_metrics(stem: str, expected: Expected) -> None:
    parsed = parse(fixture(stem))
    assert table(parsed) == expected
    assert parsed.failures == ()
    assert {m.platform for m in parsed.measurements} == {"p"}


def test_metric_names_follow_the_case() -> None:
    parsed = FORMAT.parse(
        fixture("tcp_stream_default"),
        ParseContext(path="x/tcp_stream_default.txt", platform="qemu", case="tcp_stream_default"),
    )
    assert [(m.platform, m.metric) for m in parsed.measurements] == [
        ("qemu", "tcp_stream_default.throughput")
    ]


def test_error_fixture_is_a_failed_case_naming_netserver() -> None:
    reason = assert_failed(parse(fixture("error_no_netserver")))
    assert reason == (
        "netperf could not connect: establish control: are you sure there is a netserver "
        "listening on 127.0.0.1 at port 12999?"
    )


@pytest.mark.parametrize(
    ("stem", "score"),
    [
        pytest.param("tcp_stream_default", 1.0, id="classic-stream"),
        pytest.param("tcp_rr_default", 1.0, id="classic-rr"),
        pytest.param("tcp_rr_o_csv", 1.0, id="o-csv"),
        pytest.param("tcp_stream_P0", 0.5, id="P0-stream"),
        pytest.param("tcp_rr_P0", 0.5, id="P0-rr"),
        pytest.param("error_no_netserver", 0.9, id="error"),
    ],
)
def test_fixture_sniff_scores(stem: str, score: float) -> None:
    assert FORMAT.sniff(fixture(stem), f"{stem}.txt") == score
    assert score >= 0.5


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"start": {}, "end": {"sum_received": {"bits_per_second": 1e9}}}', id="json"),
        pytest.param('[{"name": "throughput", "value": 1}]', id="json-list"),
        pytest.param(
            "[  5]   0.00-1.00   sec  1.2 GBytes  10.3 Gbits/sec    0   1.5 MBytes\n",
            id="iperf3-text-line",
        ),
        pytest.param("ZPERF-RESULT udp4_mbps=13.099\n", id="zperf-line"),
        pytest.param("1 2 3\n", id="numbers-of-no-netperf-shape"),
        pytest.param("131072  16384  16384    3.00     19890.66\nhello\n", id="numbers-then-text"),
        pytest.param("131072  16384  16384    3.00     nan\n", id="P0-nan"),
        pytest.param("", id="empty"),
    ],
)
def test_sniff_rejects_other_text(text: str) -> None:
    assert FORMAT.sniff(text, "report.txt") == 0.0


@pytest.mark.parametrize(
    "relative",
    [
        "generated/iperf3/tcp.json",
        "generated/iperf3/tcp_text.txt",
        "generated/iperf3/error_conn_refused.json",
        "zephyr-zperf/README-loopback-icount_expected_output.txt",
        "pktgen/kernel-doc_proc_net_pktgen_eth4_at_0.txt",
        "pktgen/kernel-doc_proc_net_pktgen_kpktgend_0.txt",
        "pktgen/netdev-patch_imix_result_example.txt",
        "dperf/issue206_client_tcp_per_second_excerpt.txt",
        "dperf/readme_example_client_http_per_second.txt",
    ],
)
def test_sniff_rejects_other_fixtures(relative: str) -> None:
    assert FORMAT.sniff(shared(relative).read_text(encoding="utf-8"), relative) == 0.0


def test_sniff_ignores_the_path() -> None:
    assert FORMAT.sniff("ZPERF-RESULT udp4_mbps=13.099\n", "netperf/tcp_rr.txt") == 0.0
    assert FORMAT.sniff(fixture("tcp_rr_default"), "iperf3.json") == 1.0


@pytest.mark.parametrize(
    ("text", "score"),
    [
        pytest.param(KEYVAL_RR, 1.0, id="k-with-banner"),
        pytest.param(KEYVAL_RR.split("\n", 1)[1], 0.9, id="k-without-banner"),
        pytest.param("TRANSACTION_RATE=1.5\n", 0.0, id="one-key-only"),
        pytest.param(UDP_STREAM.replace("MIGRATED ", ""), 0.9, id="old-banner"),
        pytest.param(
            "212992 1472 3.00 767324 0 3011.92\n212992 3.00 762998 2994.93\n", 0.5, id="P0-udp"
        ),
    ],
)
def test_sniff_synthetic(text: str, score: float) -> None:
    assert FORMAT.sniff(text, "x.txt") == score


def test_keyval_rr() -> None:
    assert table(parse(KEYVAL_RR)) == {
        "rr.min_latency_us": (13.0, "µs", L),
        "rr.mean_latency_us": (66.77, "µs", L),
        "rr.p99_latency_us": (102.0, "µs", L),
        "rr.transaction_rate": (14929.009, "trans/s", H),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "THROUGHPUT=20000.5\nTHROUGHPUT_UNITS=10^6bits/s\nP90_LATENCY=7\n",
            {"rr.throughput": (20000.5, "Mbps", H), "rr.p90_latency_us": (7.0, "µs", L)},
            id="stream-units",
        ),
        pytest.param(
            "THROUGHPUT=2.5\nTHROUGHPUT_UNITS=10^9bits/s\n",
            {"rr.throughput": (2.5, "Gbps", H)},
            id="gbits",
        ),
        pytest.param(
            f"{BANNER_RR}\nTHROUGHPUT=14000.25\nMAX_LATENCY=900\n",
            {
                "rr.transaction_rate": (14000.25, "trans/s", H),
                "rr.max_latency_us": (900.0, "µs", L),
            },
            id="rr-throughput-without-units",
        ),
        pytest.param(
            "THROUGHPUT=300\nSTDDEV_LATENCY=4\n",
            {"rr.throughput": (300.0, "Mbps", H), "rr.stddev_latency_us": (4.0, "µs", L)},
            id="no-units-assumes-default",
        ),
        pytest.param(
            "THROUGHPUT=14929.009\nTHROUGHPUT_UNITS=Trans/s\nP50_LATENCY=60\n",
            {
                "rr.transaction_rate": (14929.009, "trans/s", H),
                "rr.p50_latency_us": (60.0, "µs", L),
            },
            id="trans-units-as-rate",
        ),
        pytest.param(
            "THROUGHPUT=1\nLOCAL_CPU_UTIL=12.5\nREMOTE_CPU_UTIL=-1.00\n",
            {"rr.throughput": (1.0, "Mbps", H), "rr.local_cpu_percent": (12.5, "%", L)},
            id="cpu-unmeasured-is-absent",
        ),
    ],
)
def test_keyval_variants(text: str, expected: Expected) -> None:
    assert table(parse(text)) == expected


def test_keyval_repeated_runs_are_samples() -> None:
    text = "TRANSACTION_RATE=100\nMEAN_LATENCY=10\nTRANSACTION_RATE=110\nMEAN_LATENCY=9\n"
    parsed = parse(text)
    assert [(m.metric, m.value) for m in parsed.measurements] == [
        ("rr.mean_latency_us", 10.0),
        ("rr.transaction_rate", 100.0),
        ("rr.mean_latency_us", 9.0),
        ("rr.transaction_rate", 110.0),
    ]


def test_udp_stream_uses_the_receiver_line() -> None:
    assert table(parse(UDP_STREAM)) == {
        "rr.throughput": (2994.93, "Mbps", H),
        "rr.lost_messages": (767324.0 - 762998.0, "messages", L),
    }


def test_udp_stream_without_banner() -> None:
    rows = UDP_STREAM.splitlines()[-2:]
    assert table(parse("\n".join(rows))) == {
        "rr.throughput": (2994.93, "Mbps", H),
        "rr.lost_messages": (4326.0, "messages", L),
    }


def test_stream_with_cpu_columns() -> None:
    assert table(parse(STREAM_CPU)) == {
        "rr.throughput": (24672.38, "Mbps", H),
        "rr.local_cpu_percent": (73.85, "%", L),
        "rr.remote_cpu_percent": (71.20, "%", L),
        "rr.local_service_demand_us_per_kb": (0.490, "µs/KB", L),
        "rr.remote_service_demand_us_per_kb": (0.473, "µs/KB", L),
    }


def test_stream_with_cpu_columns_without_banner() -> None:
    row = STREAM_CPU.splitlines()[-1]
    assert FORMAT.sniff(row, "x.txt") == 0.5
    assert table(parse(row))["rr.local_service_demand_us_per_kb"] == (0.490, "µs/KB", L)


def test_rr_with_cpu_columns() -> None:
    text = (
        f"{BANNER_RR}\n\n"
        "16384  131072 1        1       3.00     15104.84   11.20  10.90  14.830  14.430\n"
        "16384  131072\n"
    )
    assert table(parse(text)) == {
        "rr.transaction_rate": (15104.84, "trans/s", H),
        "rr.local_cpu_percent": (11.20, "%", L),
        "rr.remote_cpu_percent": (10.90, "%", L),
        "rr.local_service_demand_us_per_trans": (14.830, "µs/trans", L),
        "rr.remote_service_demand_us_per_trans": (14.430, "µs/trans", L),
    }


@pytest.mark.parametrize(
    ("header_unit", "unit"),
    [
        pytest.param("10^6bits/sec", "Mbps", id="m"),
        pytest.param("10^9bits/sec", "Gbps", id="g"),
        pytest.param("10^3bits/sec", "kbps", id="k"),
        pytest.param("10^0bits/sec", "bps", id="b"),
        pytest.param("GBytes/sec", "GB/s", id="G"),
        pytest.param("MBytes/sec", "MB/s", id="M"),
        pytest.param("KBytes/sec", "kB/s", id="K"),
    ],
)
def test_stream_unit_from_header(header_unit: str, unit: str) -> None:
    text = f"{BANNER_STREAM}\n{STREAM_HEADER.format(unit=header_unit)}\n1 2 3 3.00 42.5\n"
    assert table(parse(text)) == {"rr.throughput": (42.5, unit, H)}


def test_warning_block_keeps_the_number() -> None:
    parsed = parse(WARNING_BLOCK)
    assert table(parsed) == {"rr.throughput": (20127.39, "Mbps", H)}
    assert parsed.failures == ()


def test_stderr_noise_around_the_result_is_ignored() -> None:
    text = (
        "Sorry, Demo Mode not configured into this netperf.\n"
        "Please consider reconfiguring netperf with\n"
        "--enable-demo=yes and recompiling\n" + fixture("tcp_rr_default")
    )
    assert table(parse(text)) == {"rr.transaction_rate": (15104.84, "trans/s", H)}


@pytest.mark.parametrize(
    ("test", "row", "expected"),
    [
        pytest.param(
            "TCP MAERTS",
            "131072  16384  16384    3.00     18000.10",
            {"rr.throughput": (18000.10, "Mbps", H)},
            id="maerts",
        ),
        pytest.param(
            "UDP REQUEST/RESPONSE",
            "212992 212992 1 1 3.00 20000.50\n212992 212992",
            {"rr.transaction_rate": (20000.50, "trans/s", H)},
            id="udp-rr",
        ),
        pytest.param(
            "TCP Connect/Request/Response",
            "16384 131072 1 1 3.00 9000.25\n16384 131072",
            {"rr.transaction_rate": (9000.25, "trans/s", H)},
            id="crr",
        ),
        pytest.param(
            "OMNI Send",
            "16384       87380       16384  10.00   38263.86   10^6bits/s",
            {"rr.throughput": (38263.86, "Mbps", H)},
            id="omni-default-stream",
        ),
        pytest.param(
            "OMNI Send|Recv",
            "16384       87380       1  10.00   15001.75   Trans/s",
            {"rr.transaction_rate": (15001.75, "trans/s", H)},
            id="omni-default-rr",
        ),
    ],
)
def test_banner_names_the_test(test: str, row: str, expected: Expected) -> None:
    text = f"MIGRATED {test} TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to h () port 0 AF_INET\n"
    assert table(parse(f"{text}\n{row}\n")) == expected


def test_repeated_classic_runs_are_samples() -> None:
    text = fixture("tcp_stream_default") + fixture("tcp_stream_default").replace(
        "20127.39", "19000.00"
    )
    values = [(m.metric, m.value) for m in parse(text).measurements]
    assert values == [("rr.throughput", 20127.39), ("rr.throughput", 19000.0)]


def test_repeated_P0_runs_are_samples() -> None:
    text = fixture("tcp_rr_P0") * 2 + "16384 131072 1 1 3.00 100.5\n16384 131072\n"
    values = [m.value for m in parse(text).measurements]
    assert values == [12887.38, 12887.38, 100.5]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(BANNER_STREAM + "\n" + STREAM_HEADER.format(unit="10^6bits/sec"), id="banner"),
        pytest.param(fixture("tcp_rr_default").rsplit("\n\n", 1)[0], id="rr-header-only"),
        pytest.param(
            fixture("tcp_stream_default").replace("20127.39", "nan"), id="classic-nan-throughput"
        ),
        pytest.param(
            fixture("tcp_stream_default").replace("20127.39", "-nan"), id="classic-minus-nan"
        ),
        pytest.param(fixture("tcp_stream_default").replace("20127.39", "1e999"), id="overflow"),
        pytest.param(fixture("tcp_rr_P0").replace("12887.38", "inf"), id="P0-inf"),
        pytest.param(f"{BANNER_RR}\nTRANSACTION_RATE=nan\nMEAN_LATENCY=\n", id="k-nan"),
        pytest.param(
            fixture("tcp_rr_o_csv").replace(
                "13,80.07,3267,36.53,80,97,133,12441.177", ",".join(["nan"] * 8)
            ),
            id="o-csv-nan",
        ),
        pytest.param(f"{BANNER_RR}\nTRANSACTION_RATE=12,5\n", id="k-comma-junk"),
        pytest.param(f"{BANNER_STREAM}\n\n1 2 3 3.00 forty\n", id="word-in-result"),
    ],
)
def test_no_usable_result_is_a_failed_case(text: str) -> None:
    assert "netperf" in assert_failed(parse(text))


def test_partial_nan_keeps_the_other_fields() -> None:
    text = fixture("tcp_rr_o_csv").replace(",80.07,", ",nan,")
    got = table(parse(text))
    assert "rr.mean_latency_us" not in got
    assert got["rr.p99_latency_us"] == (133.0, "µs", L)
    assert len(got) == 7


def test_other_netperf_error_is_a_failed_case() -> None:
    text = f"{BANNER_STREAM}\nnetperf: send_omni: send_data failed: Connection reset by peer\n"
    assert assert_failed(parse(text)) == (
        "netperf failed: netperf: send_omni: send_data failed: Connection reset by peer"
    )


def test_long_error_is_cut_to_one_short_line() -> None:
    text = "establish control: are you sure there is a netserver listening on " + "h" * 500 + "?\n"
    assert assert_failed(parse(text)).endswith("…")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("  \n\t\n", id="blank"),
        pytest.param(bytes(range(256)).decode("latin-1") * 4, id="binary-junk"),
        pytest.param("\x00\x01\x02\xff\xfe", id="control-bytes"),
        pytest.param("hello world\nnothing here\n", id="prose"),
        pytest.param('{"end": {}}', id="json"),
        pytest.param("ZPERF-RESULT udp4_mbps=13.099\nZPERF-DONE\n", id="zperf"),
        pytest.param("1 2 3\n4 5\n", id="numbers-of-no-netperf-shape"),
    ],
)
def test_not_netperf_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="could not read as netperf"):
        parse(text)


def test_P0_csv_values_without_header_say_why() -> None:
    with pytest.raises(ParseError, match="drop -P 0 or use -k"):
        parse("13,80.07,3267,36.53,80,97,133,12441.177\n")


FUZZ_LINES = [
    line
    for stem in ("tcp_stream_default", "tcp_rr_default", "tcp_rr_o_csv", "error_no_netserver")
    for line in fixture(stem).splitlines()
] + [*KEYVAL_RR.splitlines(), *UDP_STREAM.splitlines(), "nan nan nan nan nan", "-1 -1 -1 -1 -1"]


def check_invariants(text: str) -> None:
    try:
        parsed = parse(text)
    except ParseError:
        return
    # A parse either measured something or reports exactly one failure, never both.
    assert bool(parsed.measurements) != bool(parsed.failures)
    for failure in parsed.failures:
        assert "\n" not in failure.reason
        assert len(failure.reason) <= MAX_REASON


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FUZZ_LINES) | st.text(max_size=40), max_size=12))
def test_shuffled_netperf_lines_never_crash(lines: list[str]) -> None:
    check_invariants("\n".join(lines))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    check_invariants(text)
    assert 0.0 <= FORMAT.sniff(text, "x.txt") <= 1.0


# -O output, laid out the way print_omni_human (nettest_omni.c) prints it: each selector's
# four header words one per line, every column max(word, value + 1) wide plus one blank,
# values left-aligned. netperf is not in Debian, so these are built from the values of the
# real runs (tcp_rr_o_csv.txt: 13, 80.07, 133, 12441.177; tcp_stream_default.txt) with the
# column names of the netperf source.
OMNI_RR = (
    f"{BANNER_RR}\n"
    "Minimum      Mean         99th         Throughput \n"
    "Latency      Latency      Percentile              \n"
    "Microseconds Microseconds Latency                 \n"
    "                          Microseconds            \n"
    "13           80.07        133          12441.18   \n"
)
OMNI_STREAM = (
    f"{BANNER_STREAM}\n"
    "Throughput Throughput  Elapsed Local  Protocol \n"
    "           Units       Time    Send            \n"
    "                       (sec)   Size            \n"
    "                                               \n"
    "20127.39   10^6bits/s  3.00    16384  TCP      \n"
)
OMNI_RR_SIZES = (
    f"{BANNER_RR}\n"
    "Request Response Transaction 50th         Elapsed \n"
    "Size    Size     Rate        Percentile   Time    \n"
    "Bytes   Bytes    Tran/s      Latency      (sec)   \n"
    "                             Microseconds         \n"
    "1       1        12441.177   80           3.00    \n"
)


def test_omni_O_columns_with_multi_line_headers() -> None:
    # Was "netperf printed no result line with a usable number".
    assert FORMAT.sniff(OMNI_RR, "rr.txt") == 1.0
    parsed = parse(OMNI_RR)
    assert parsed.failures == ()
    assert table(parsed) == {
        "rr.min_latency_us": (13.0, "µs", L),
        "rr.mean_latency_us": (80.07, "µs", L),
        "rr.p99_latency_us": (133.0, "µs", L),
        # THROUGHPUT of an RR test is its transaction rate.
        "rr.transaction_rate": (12441.18, "trans/s", H),
    }


def test_omni_O_stream_with_units_and_a_blank_fourth_header_line() -> None:
    assert table(parse(OMNI_STREAM)) == {"rr.throughput": (20127.39, "Mbps", H)}


def test_omni_O_with_trailing_blanks_stripped() -> None:
    # Pasted into a mail or an editor that trims lines: the columns still line up.
    stripped = "\n".join(line.rstrip() for line in OMNI_RR.splitlines())
    assert table(parse(stripped)) == table(parse(OMNI_RR))
    assert "rr.p99_latency_us" in table(parse(stripped))


def test_omni_O_states_its_sizes_and_length() -> None:
    parsed = parse(OMNI_RR_SIZES)
    assert table(parsed) == {
        "rr.transaction_rate": (12441.177, "trans/s", H),
        "rr.p50_latency_us": (80.0, "µs", L),
    }
    (settings,) = {m.settings for m in parsed.measurements}
    assert dict(settings) == {
        "test": "TCP REQUEST/RESPONSE",
        "first_burst": "0",
        "request_size": "1",
        "response_size": "1",
        "length_s": "3",
    }
    (stream,) = {m.settings for m in parse(OMNI_STREAM).measurements}
    assert dict(stream) == {
        "test": "TCP STREAM",
        "protocol": "TCP",
        "message_size": "16384",
        "length_s": "3",
    }


def fingerprint(text: str) -> dict[str, str]:
    (settings,) = {m.settings for m in parse(text).measurements}
    return dict(settings)


def test_fingerprints_of_the_real_runs() -> None:
    assert fingerprint(fixture("tcp_rr_default")) == {
        "test": "TCP REQUEST/RESPONSE",
        "first_burst": "0",
        "request_size": "1",
        "response_size": "1",
        "length_s": "3",
    }
    assert fingerprint(fixture("tcp_stream_default")) == {
        "test": "TCP STREAM",
        "message_size": "16384",
        "length_s": "3",
    }
    # -P 0 prints no banner: the sizes alone.
    assert fingerprint(fixture("tcp_stream_P0")) == {"message_size": "16384", "length_s": "3"}
    assert fingerprint(fixture("tcp_rr_P0")) == {
        "request_size": "1",
        "response_size": "1",
        "length_s": "3",
    }
    # -o lists no size here: the banner's test only.
    assert fingerprint(fixture("tcp_rr_o_csv")) == {
        "test": "TCP REQUEST/RESPONSE",
        "first_burst": "0",
    }
    assert fingerprint(UDP_STREAM) == {
        "test": "UDP STREAM",
        "message_size": "1472",
        "length_s": "3",
    }


def test_other_sizes_give_another_fingerprint_and_the_same_run_the_same() -> None:
    rr = fixture("tcp_rr_default")
    bigger = rr.replace(
        "16384  131072 1        1       3.00", "16384  131072 64       1024    3.00"
    )
    assert {k for k, v in fingerprint(bigger).items() if fingerprint(rr)[k] != v} == {
        "request_size",
        "response_size",
    }
    # Two runs of one command (default and -P 0 TCP_RR) state the same sizes and length.
    assert fingerprint(fixture("tcp_rr_P0")).items() <= fingerprint(rr).items()
    # A measured number never enters it: another rate, the same fingerprint.
    assert fingerprint(rr.replace("15104.84", "9000.00")) == fingerprint(rr)


def test_a_length_not_near_whole_seconds_is_left_out() -> None:
    # -l -1000 (a transaction count) ends when it ends.
    text = fixture("tcp_rr_default").replace("3.00     15104.84", "0.07     15104.84")
    assert "length_s" not in fingerprint(text)
    text = fixture("tcp_rr_default").replace("3.00     15104.84", "7.43     15104.84")
    assert "length_s" not in fingerprint(text)


def test_udp_lost_messages_is_a_count() -> None:
    (lost,) = [m for m in parse(UDP_STREAM).measurements if m.metric == "rr.lost_messages"]
    assert (lost.value, lost.scale) == (767324 - 762998, Scale.COUNT)
    assert {m.scale for m in parse(fixture("tcp_rr_o_csv")).measurements} == {Scale.RATIO}
