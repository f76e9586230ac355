"""Tests for the dperf per-second statistics parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.read.formats.dperf import FORMAT
from perfbot.errors import ParseError
from perfbot.model import Better, ParseContext, Parsed, Scale, settings_of
from tests.paths import shared

EXACT = 1e-12
CTX = ParseContext(path="reports/http.txt", platform="p", case="c")
RED = "\x1b[41;37m"
TCP_ERROR_COUNTERS = (
    "dropTx",
    "badRx",
    "rstRx",
    "rstTx",
    "synRt",
    "finRt",
    "ackRt",
    "pushRt",
    "tcpDrop",
    "udpDrop",
    "ackDup",
    "skErr",
    "ierrors",
    "oerrors",
    "imissed",
)
RESET = "\x1b[0m"


def fixture(name: str) -> str:
    return shared(f"dperf/{name}").read_text()


def parse(text: str) -> Parsed:
    return FORMAT.parse(text, CTX)


def values(parsed: Parsed) -> dict[str, float]:
    return {m.metric: m.value for m in parsed.measurements}


def second(n: int, *, sk_open: int = 1000, cpu: str = "50", extra: str = "") -> str:
    """One per-second block in the current (issue-206) layout, TCP client."""
    return (
        f"seconds {n:<18} cpuUsage {cpu}\n"
        f"pktRx   {sk_open * 3:<18,} pktTx    {sk_open * 3:<18,} bitsRx   2,000,000          "
        f"bitsTx  1,000,000          dropTx  0\n"
        "tcpRx   0                  tcpTx    0                  udpRx    0             udpTx 0\n"
        "arpRx   0                  arpTx    0                  icmpRx   0             icmpTx 0\n"
        "tosRx   0                  otherRx  0                  badRx    0\n"
        "synRx   5                  synTx    5                  finRx    0                  "
        "finTx   0                  rstRx   0          rstTx 0\n"
        "synRt   0                  finRt    0                  ackRt    0             pushRt 0\n"
        "tcpDrop 0                  udpDrop  0                  ackDup   0\n"
        f"skOpen  {sk_open:<18,} skClose  7                  skCon    230                "
        f"skErr   0                  rtt(us) 12.3\n"
        "tcpReq  900                tcpRsp   800\n"
        f"ierrors 0                  oerrors  0                  imissed  0{extra}\n"
        "\n"
    )


def run(sk_opens: list[int]) -> str:
    return "".join(second(n, sk_open=v) for n, v in enumerate(sk_opens, start=1))


def test_format_identity() -> None:
    assert FORMAT.name == "dperf"
    assert FORMAT.reads == "dperf per-second statistics (steady-state rates)"


@pytest.mark.parametrize(
    "name",
    ["readme_example_client_http_per_second.txt", "issue206_client_tcp_per_second_excerpt.txt"],
)
def test_sniff_fixtures(name: str) -> None:
    assert FORMAT.sniff(fixture(name), name) == 1.0


@pytest.mark.parametrize(
    ("text", "score"),
    [
        (f"{RED}seconds 3{RESET}      {RED}cpuUsage{RESET} 5\n", 1.0),
        ("seconds 3 elapsed\nall done\n", 0.0),
        ("pktRx 5 skOpen 6 cpuUsage 7\n", 0.0),
        ("Result: OK: 15430(c15405+d25) usec, 100000 (60byte,0frags)\n", 0.0),
        ("", 0.0),
    ],
)
def test_sniff_synthetic(text: str, score: float) -> None:
    assert FORMAT.sniff(text, "report.txt") == score


def test_readme_layout() -> None:
    # A single block (seconds 22): with fewer than 3 blocks nothing is dropped, so each
    # median is that block's value. The README layout has tcpDrop on the synRt line and
    # otherRx/badRx on the arpRx line; there is no rtt(us), udpDrop or tcpRsp.
    parsed = parse(fixture("readme_example_client_http_per_second.txt"))
    assert parsed.failures == ()
    assert values(parsed) == {
        "c.cps": 1_000_330.0,  # skOpen  1,000,330
        "c.pkt_rx_pps": 3_001_058.0,  # pktRx   3,001,058
        "c.pkt_tx_pps": 3_001_025.0,  # pktTx    3,001,025
        "c.rx_mbps": pytest.approx(2272.79904, rel=EXACT),  # bitsRx 2,272,799,040
        "c.tx_mbps": pytest.approx(1920.6576, rel=EXACT),  # bitsTx 1,920,657,600
        "c.http_2xx_per_s": 1_000_350.0,  # http2XX  1,000,350
        "c.cpu_usage": 52.0,
        "c.dropTx": 0.0,
        "c.badRx": 0.0,
        "c.rstRx": 0.0,
        "c.rstTx": 0.0,
        "c.synRt": 0.0,
        "c.finRt": 0.0,
        "c.ackRt": 0.0,
        "c.pushRt": 0.0,
        "c.tcpDrop": 0.0,
        "c.skErr": 0.0,
        "c.httpErr": 0.0,
        "c.ierrors": 0.0,
        "c.oerrors": 0.0,
        "c.imissed": 0.0,
    }


def test_units_and_directions() -> None:
    parsed = parse(fixture("readme_example_client_http_per_second.txt"))
    kinds = {m.metric: (m.unit, m.better) for m in parsed.measurements}
    assert kinds["c.cps"] == ("conn/s", Better.HIGHER)
    assert kinds["c.pkt_rx_pps"] == ("pps", Better.HIGHER)
    assert kinds["c.tx_mbps"] == ("Mbps", Better.HIGHER)
    assert kinds["c.http_2xx_per_s"][1] == Better.HIGHER
    assert kinds["c.cpu_usage"] == ("%", Better.LOWER)
    assert kinds["c.rstRx"] == ("/s", Better.LOWER)
    assert {m.platform for m in parsed.measurements} == {"p"}


def test_issue206_excerpt_skips_the_leading_partial_block() -> None:
    # Lines before "seconds 5" belong to an earlier second the excerpt cut off; they
    # hold skOpen 1,660, synRt 20 and rtt(us) 0.0, none of which may appear. The only
    # block (seconds 5) is itself partial and ends at the synRx line.
    parsed = parse(fixture("issue206_client_tcp_per_second_excerpt.txt"))
    assert values(parsed) == {
        "c.pkt_rx_pps": 0.0,  # pktRx   0
        "c.pkt_tx_pps": 3320.0,  # pktTx    3,320
        "c.rx_mbps": 0.0,  # bitsRx   0
        "c.tx_mbps": pytest.approx(1.64672, rel=EXACT),  # bitsTx  1,646,720
        "c.cpu_usage": 1.0,  # cpuUsage 1
        "c.dropTx": 0.0,
        "c.badRx": 0.0,
    }


def test_current_layout_all_metrics() -> None:
    parsed = parse(second(1, sk_open=1000, cpu="52  51  50"))
    assert values(parsed) == {
        "c.cps": 1000.0,
        "c.pkt_rx_pps": 3000.0,
        "c.pkt_tx_pps": 3000.0,
        "c.rx_mbps": 2.0,
        "c.tx_mbps": 1.0,
        "c.tcp_rsp_per_s": 800.0,
        "c.rtt_us": 12.3,
        "c.cpu_usage": 51.0,  # mean of 52, 51, 50
        **{f"c.{name}": 0.0 for name in TCP_ERROR_COUNTERS},
    }
    kinds = {m.metric: (m.unit, m.better) for m in parsed.measurements}
    assert kinds["c.rtt_us"] == ("µs", Better.LOWER)
    assert kinds["c.tcp_rsp_per_s"][1] == Better.HIGHER


def test_ignored_counters() -> None:
    metrics = set(values(parse(second(1))))
    for name in ("arpRx", "synRx", "skCon", "skClose", "tcpReq", "seconds", "tcpRx"):
        assert not any(name in metric for metric in metrics), name


def test_udp_counters() -> None:
    text = "seconds 1 cpuUsage 10\npktRx 5 pktTx 5\nudpRt   0 udpDrop 4 tcpDrop 0\n"
    found = values(parse(text))
    assert found["c.udpRt"] == 0.0
    assert found["c.udpDrop"] == 4.0


def test_steady_state_median() -> None:
    # skOpen per second: 0, 10 (ARP/slow start, dropped), 100, 900, 200, then 5 (last
    # second, possibly partial, dropped) -> median of 100, 900, 200 = 200 (the mean is 400).
    found = values(parse(run([0, 10, 100, 900, 200, 5])))
    assert found["c.cps"] == 200.0
    assert found["c.pkt_rx_pps"] == 600.0  # pktRx is 3 x skOpen


def test_steady_state_median_of_even_count() -> None:
    # Seconds 3..6 kept: 100, 1000, 200, 300 -> (200 + 300) / 2 = 250 (the mean is 400).
    assert values(parse(run([1, 2, 100, 1000, 200, 300, 9])))["c.cps"] == 250.0


@pytest.mark.parametrize(
    ("sk_opens", "expected"),
    [
        ([10, 20, 30], 30.0),  # three blocks: the last one is kept
        ([10, 20, 30, 40], 30.0),  # four: the first two and the last are dropped
        ([10, 20], 15.0),  # nothing left after dropping: use all, median 15
        ([10], 10.0),
    ],
)
def test_short_runs(sk_opens: list[int], expected: float) -> None:
    assert values(parse(run(sk_opens)))["c.cps"] == expected


def test_ansi_coloured_error_counters() -> None:
    coloured = second(1).replace("rstRx   0", f"rstRx   {RED}5{RESET}")
    coloured = coloured.replace("skErr   0", f"{RED}skErr{RESET}   {RED}1,234{RESET}")
    found = values(parse(coloured))
    assert found["c.rstRx"] == 5.0
    assert found["c.skErr"] == 1234.0
    assert found["c.rstTx"] == 0.0


def test_end_of_run_totals_are_ignored() -> None:
    steady = run([0, 10, 100, 300, 200])  # keeps seconds 3 and 4: median (100 + 300) / 2
    totals = (
        "\ndperf Test Finished.\nTotal Numbers:\n"
        + second(99, sk_open=10**12, cpu="99 99")
        + "\n"
        + second(100, sk_open=10**12)
    )
    with_totals = parse(steady + totals)
    assert values(with_totals) == values(parse(steady))
    assert values(with_totals)["c.cps"] == 200.0


def test_total_numbers_banner_alone_also_stops() -> None:
    # Stopping keeps seconds 1-4 -> only second 3 (100) is steady; reading on would
    # keep seconds 3 and 4 -> 200.
    text = run([0, 10, 100, 300]) + "Total Numbers:\n" + second(5, sk_open=10**9)
    assert values(parse(text))["c.cps"] == 100.0


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\xff\xfe\x1b[" * 100,
        "pktRx 5 skOpen 6 cpuUsage 7\n",
        "seconds 1\n",
        "seconds 1\nseconds 2\n\nseconds 3\n",
        "seconds 1 cpuUsage\nskOpen\npktRx\n",
        "dperf Test Finished\n" + second(1),
        second(1, sk_open=1).replace("skOpen  1 ", "skOpen  1" + "0" * 400 + " "),
        second(1, cpu="1" + "0" * 400),
        second(1).replace("rtt(us) 12.3", "rtt(us) 1.2.3"),
        # Finite values whose median overflows: (a + b) / 2 with a, b near the float limit.
        "".join(second(n).replace("pktTx    3,000", "pktTx    " + "9" * 308) for n in range(1, 3)),
    ],
    ids=[
        "empty",
        "binary",
        "no-seconds",
        "seconds-only",
        "seconds-without-pairs",
        "names-without-values",
        "only-totals",
        "huge-skopen",
        "huge-cpu",
        "bad-decimal",
        "median-overflow",
    ],
)
def test_hostile_input_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.path == CTX.path


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                second(1),
                "seconds 7",
                "cpuUsage",
                " 9" * 5,
                " 1" + "0" * 400,
                "\x1b[41;37m",
                "rtt(us) ",
                "Total Numbers:",
                "\n",
            ]
        )
        | st.text(max_size=20),
        max_size=12,
    )
)
def test_any_text_parses_or_raises_parse_error(pieces: list[str]) -> None:
    try:
        parsed = parse("".join(pieces))
    except ParseError:
        return
    assert parsed.measurements


def test_settings_state_the_number_of_workers() -> None:
    # The output states only one thing of the configuration: one cpuUsage per worker core.
    for name in (
        "readme_example_client_http_per_second.txt",
        "issue206_client_tcp_per_second_excerpt.txt",
    ):
        assert {m.settings for m in parse(fixture(name)).measurements} == {settings_of(workers=1)}
    four = run([1000] * 6).replace("cpuUsage 50", "cpuUsage 50  51  49  50")
    assert {m.settings for m in parse(four).measurements} == {settings_of(workers=4)}
    # Another load on the same cores: the same fingerprint.
    assert {m.settings for m in parse(run([900] * 6)).measurements} == {
        m.settings for m in parse(run([1000] * 6)).measurements
    }


def test_error_counters_are_counts_and_rates_ratios() -> None:
    scales = {
        m.metric: m.scale
        for m in parse(fixture("readme_example_client_http_per_second.txt")).measurements
    }
    counted = {metric for metric, scale in scales.items() if scale is Scale.COUNT}
    assert counted == {
        f"c.{name}"
        for name in (
            "dropTx",
            "badRx",
            "rstRx",
            "rstTx",
            "synRt",
            "finRt",
            "ackRt",
            "pushRt",
            "tcpDrop",
            "skErr",
            "httpErr",
            "ierrors",
            "oerrors",
            "imissed",
        )
    }
    assert scales["c.cps"] is Scale.RATIO
    assert scales["c.cpu_usage"] is Scale.RATIO
