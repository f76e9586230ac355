"""Tests for the Linux pktgen parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.read.formats.pktgen import FORMAT
from perfbot.errors import ParseError
from perfbot.model import (
    Better,
    FailedCase,
    Measurement,
    ParseContext,
    Parsed,
    Scale,
    settings_of,
)
from tests.paths import shared

EXACT = 1e-12
CTX = ParseContext(path="reports/eth4.txt", platform="p", case="c")

# The real kernel layout: Params/Current details indented by five spaces, the second
# result line by two.
KERNEL_BLOCK = """\
Params: count 100000  min_pkt_size: 60  max_pkt_size: 60
     frags: 0  delay: 0  clone_skb: 64  ifname: eth4@1
Current:
     pkts-sofar: 100000  errors: 3
Result: OK: 15430(c15405+d25) usec, 100000 (60byte,0frags)
  1000000pps 480Mb/sec (480000000bps) errors: 3
"""


# What the kernel documentation's eth4@0 file says the run was asked to do.
ETH4_0 = settings_of(
    count=100000,
    min_pkt_size=60,
    max_pkt_size=60,
    pkt_size=60,
    frags=0,
    delay=0,
    clone_skb=64,
    flows=0,
    queues=1,
)


def fixture(name: str) -> str:
    return shared(f"pktgen/{name}").read_text()


def parse(text: str) -> Parsed:
    return FORMAT.parse(text, CTX)


def values(parsed: Parsed) -> dict[str, float]:
    return {m.metric: m.value for m in parsed.measurements}


def block(pps: int, bps: int, errors: int, *, unit: str = "usec", frags: str = "0") -> str:
    return (
        f"Result: OK: 1000(c900+d100) {unit}, 5000 (60byte,{frags}frags)\n"
        f"  {pps}pps {bps // 1_000_000}Mb/sec ({bps}bps) errors: {errors}\n"
    )


def test_format_identity() -> None:
    assert FORMAT.name == "pktgen"
    assert FORMAT.reads == "Linux pktgen /proc/net/pktgen result blocks"


@pytest.mark.parametrize(
    ("name", "score"),
    [
        ("kernel-doc_proc_net_pktgen_eth4_at_0.txt", 1.0),
        ("netdev-patch_imix_result_example.txt", 1.0),
        ("kernel-doc_proc_net_pktgen_kpktgend_0.txt", 0.8),
    ],
)
def test_sniff_fixtures(name: str, score: float) -> None:
    assert FORMAT.sniff(fixture(name), name) == score


@pytest.mark.parametrize(
    ("text", "score"),
    [
        (KERNEL_BLOCK, 1.0),
        # Cut off by the sniff window after the first result line: still pktgen.
        ("Result: OK: 15430(c15405+d25) nsec, 100000 (60byte,0frags)\n", 1.0),
        ("Params: count 100000  min_pkt_size: 60\nResult: Idle\n", 0.8),
        ("Result: Idle\n", 0.8),
        ("Running:\nStopped: eth4@0\nResult: \n", 0.8),
        ("Running: pytest -q\n", 0.0),
        ('{"start": {"connected": []}, "end": {}}', 0.0),
        ("", 0.0),
    ],
)
def test_sniff_synthetic(text: str, score: float) -> None:
    assert FORMAT.sniff(text, "report.txt") == score


def test_kernel_doc_device_file() -> None:
    # Result: OK: 15430(c15405+d25) usec, 100000 (60byte,0frags)
    # 6480562pps 3110Mb/sec (3110669760bps) errors: 0   <- no indent in the doc copy
    parsed = parse(fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt"))
    assert parsed.failures == ()
    pps, mbps, errors = parsed.measurements
    assert pps == Measurement("p", "c.pps", 6480562.0, "pps", Better.HIGHER, settings=ETH4_0)
    # 3110669760 bps / 1e6
    assert (mbps.platform, mbps.metric, mbps.unit, mbps.better) == ("p", "c.mbps", "Mbps", "higher")
    assert mbps.value == pytest.approx(3110.66976, rel=EXACT)
    assert (mbps.scale, mbps.settings) == (Scale.RATIO, ETH4_0)
    assert errors == Measurement(
        "p", "c.errors", 0.0, "", Better.LOWER, scale=Scale.COUNT, settings=ETH4_0
    )


def test_imix_result() -> None:
    # Result: OK: 17992362(c17964678+d27684) usec, 200000 (859byte,0frags)
    #   11115pps 47Mb/sec (47977140bps) errors: 0
    # Mbps comes from the exact bps, not the truncated "47Mb/sec".
    assert values(parse(fixture("netdev-patch_imix_result_example.txt"))) == {
        "c.pps": 11115.0,
        "c.mbps": pytest.approx(47.97714, rel=EXACT),
        "c.errors": 0.0,
    }


def test_thread_file_is_a_failed_case() -> None:
    parsed = parse(fixture("kernel-doc_proc_net_pktgen_kpktgend_0.txt"))
    assert parsed.measurements == ()
    assert parsed.failures == (
        FailedCase(
            platform="p",
            case="c",
            reason="pktgen reported no measurement (Result: OK: add_device=eth4@0)",
        ),
    )


def test_idle_device_is_a_failed_case() -> None:
    text = "Params: count 100000  min_pkt_size: 60  max_pkt_size: 60\nCurrent:\nResult: Idle\n"
    assert parse(text).failures == (
        FailedCase(platform="p", case="c", reason="pktgen reported no measurement (Result: Idle)"),
    )


def test_device_file_without_result_line() -> None:
    parsed = parse("Params: count 10  min_pkt_size: 60\n")
    assert [f.reason for f in parsed.failures] == [
        "pktgen reported no measurement (no Result line)"
    ]


def test_failure_reason_is_one_short_line() -> None:
    text = "Running:\nStopped:\nResult: ERROR: " + "x\x00\t" * 500 + "\nmore\n"
    (failure,) = parse(text).failures
    assert len(failure.reason) <= 200
    assert failure.reason.isprintable()
    assert failure.reason.startswith("pktgen reported no measurement (Result: ERROR: x x x")


def test_kernel_style_block() -> None:
    assert values(parse(KERNEL_BLOCK)) == {"c.pps": 1e6, "c.mbps": 480.0, "c.errors": 3.0}


def test_nsec_and_freed_skb_frags() -> None:
    text = block(2000, 7_654_321, 1, unit="nsec", frags="-1")
    assert values(parse(text)) == {
        "c.pps": 2000.0,
        "c.mbps": pytest.approx(7.654321, rel=EXACT),
        "c.errors": 1.0,
    }


def test_space_before_mb_per_sec() -> None:
    text = (
        "Result: OK: 1000(c900+d100) usec, 5000 (60byte,0frags)\n"
        "  5000pps 2 Mb/sec (2400000bps) errors: 0\n"
    )
    assert values(parse(text))["c.mbps"] == pytest.approx(2.4, rel=EXACT)


def test_crlf_line_endings() -> None:
    text = block(10, 5_000_000, 0).replace("\n", "\r\n")
    assert values(parse(text))["c.pps"] == 10.0


def test_per_queue_blocks_are_summed() -> None:
    # cat /proc/net/pktgen/eth4@0 /proc/net/pktgen/eth4@1 (plus a thread file in between)
    text = (
        fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt")
        + fixture("kernel-doc_proc_net_pktgen_kpktgend_0.txt")
        + KERNEL_BLOCK
    )
    parsed = parse(text)
    assert parsed.failures == ()
    assert values(parsed) == {
        "c.pps": 6480562.0 + 1_000_000.0,
        "c.mbps": pytest.approx(3110.66976 + 480.0, rel=EXACT),
        "c.errors": 3.0,
    }


def test_truncated_block_is_a_parse_error() -> None:
    # Summing only the complete block would understate the run.
    text = block(100, 1_000_000, 0) + "Result: OK: 1000(c900+d100) usec, 5000 (60byte,0frags)\n"
    with pytest.raises(ParseError, match="truncated"):
        parse(text)


def test_not_pktgen_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="pktgen") as info:
        parse("Running: pytest\nall good\n")
    assert info.value.path == CTX.path


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\xff\xfe" * 100,
        block(int("9" * 400), 1, 0),
        block(1, int("9" * 400), 0),
        block(1, 1, int("9" * 400)),
        # Each finite, but their sum is not.
        block(int("9" * 308), 1, 0) * 20,
    ],
    ids=["empty", "binary", "huge-pps", "huge-bps", "huge-errors", "overflowing-sum"],
)
def test_hostile_input_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                KERNEL_BLOCK,
                "Result: OK: ",
                "Result: Idle\n",
                "Running:\nStopped:\n",
                "  12pps 0Mb/sec (12bps) errors: 0\n",
                "9" * 50,
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
    assert bool(parsed.measurements) != bool(parsed.failures)


def idle_queue(name: str = "eth4@1") -> str:
    """The real eth4@0 device file as a queue shows it before (or without) its run."""
    real = fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt")
    head = real[: real.index("Result: OK:")].replace("ifname: eth4@0", f"ifname: {name}")
    return head.replace("pkts-sofar: 100000", "pkts-sofar: 0") + "Result: Idle\n"


def test_an_idle_queue_is_a_failed_queue_not_a_drop() -> None:
    # cat eth4@0 eth4@1: queue 0 measured, queue 1 never ran. Summing queue 0 alone would
    # read as a -50 % drop of a two-queue run.
    text = fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt") + idle_queue()
    parsed = parse(text)
    assert parsed.measurements == ()
    assert parsed.failures == (
        FailedCase(
            platform="p",
            case="c",
            reason="queue eth4@1: pktgen reported no measurement (Result: Idle); "
            "the 1 measured queue is not summed as the run's total",
        ),
    )


def test_each_idle_queue_is_named_and_thread_files_are_no_queue() -> None:
    text = (
        idle_queue("eth4@2")
        + fixture("kernel-doc_proc_net_pktgen_kpktgend_0.txt")
        + fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt")
        + KERNEL_BLOCK
        + idle_queue("eth4@3").replace("Result: Idle", "Result: No such netdevice")
    )
    reasons = [f.reason for f in parse(text).failures]
    assert reasons == [
        "queue eth4@2: pktgen reported no measurement (Result: Idle); "
        "the 2 measured queues are not summed as the run's total",
        "queue eth4@3: pktgen reported no measurement (Result: No such netdevice); "
        "the 2 measured queues are not summed as the run's total",
    ]


def test_settings_of_a_multi_queue_run() -> None:
    text = fixture("kernel-doc_proc_net_pktgen_eth4_at_0.txt") + KERNEL_BLOCK
    (settings,) = {m.settings for m in parse(text).measurements}
    # KERNEL_BLOCK states only count and sizes; a value that differs is listed.
    assert dict(settings) == {**dict(ETH4_0), "queues": "2"}
    single = {m.settings for m in parse(KERNEL_BLOCK).measurements}
    assert single == {
        settings_of(
            count=100000,
            min_pkt_size=60,
            max_pkt_size=60,
            pkt_size=60,
            frags=0,
            delay=0,
            clone_skb=64,
            queues=1,
        )
    }


def test_imix_weights_are_a_setting() -> None:
    (settings,) = {
        m.settings for m in parse(fixture("netdev-patch_imix_result_example.txt")).measurements
    }
    assert dict(settings) == {"imix_weights": "256,1 859,3 205,2", "pkt_size": "859", "queues": "1"}
